package report

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// goldenTables builds every table that has golden files.
func goldenTables(t *testing.T) map[string]*Table {
	t.Helper()
	tabs := map[string]*Table{}
	for _, name := range []string{"c_sweep_05M", "c_sweep_2M"} {
		cells, rows, cols := paperCInputs(t, readPaperTable(t, name))
		tab, err := CSensitivityTable("Refined SF-AdamW on SlimPajama.", "tab:"+name, cells, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		tabs[name] = tab
	}
	cells, rows, cols := statusCells()
	tab, err := CSensitivityTable("Statuses & rounding: 100%_done", "tab:statuses", cells, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	tabs["statuses"] = tab
	cells, rows, cols = seedCells()
	if tabs["seeds"], err = CSensitivityTable("Over seeds: means, spreads, ties", "tab:seeds", cells, rows, cols); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hyperparameter_main", "hyperparameter_owt_largeBS"} {
		tab, err := HyperparameterTable("Hyperparameter sweep.", "tab:"+name, syntheticTrials(paperGrids[name]))
		if err != nil {
			t.Fatal(err)
		}
		tabs[name] = tab
	}
	return tabs
}

// TestTablesGolden compares every format of every table with its golden file; -update
// rewrites them.
func TestTablesGolden(t *testing.T) {
	for name, tab := range goldenTables(t) {
		out := renderAll(t, tab)
		for _, f := range tableFormats {
			path := filepath.Join("testdata", "tables", name+"."+f.ext)
			if *update {
				if err := os.WriteFile(path, out[f.format], 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestTablesGolden -update)", err)
			}
			if !bytes.Equal(out[f.format], want) {
				t.Errorf("%s differs from its golden file:\n%s", path, out[f.format])
			}
		}
	}
}

// TestTablesByteStable renders each table twice from shuffled inputs, with the row and
// column order given and derived, and wants identical bytes.
func TestTablesByteStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type cInput struct {
		cells []Cell
		rows  []float64
		cols  []string
	}
	var cInputs []cInput
	for _, name := range []string{"c_sweep_05M", "c_sweep_2M"} {
		cells, rows, cols := paperCInputs(t, readPaperTable(t, name))
		cInputs = append(cInputs, cInput{cells, rows, cols}, cInput{cells, nil, nil})
	}
	cells, rows, cols := statusCells()
	cInputs = append(cInputs, cInput{cells, rows, cols}, cInput{cells, nil, nil})
	for i, in := range cInputs {
		sameBytes(t, fmt.Sprintf("input %d", i), func() (*Table, error) {
			shuffled := append([]Cell(nil), in.cells...)
			rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
			return CSensitivityTable("t", "tab:t", shuffled, in.rows, in.cols)
		})
	}
	for name, grids := range paperGrids {
		trials := syntheticTrials(grids)
		// A second trial of the best configuration with the same value, and one of another
		// configuration tying with it: ties must not depend on the input order either.
		for _, tr := range trials {
			if tr.Value == 20 {
				tie := tr
				tie.Beta2 = 0.999
				trials = append(trials, tr, tie)
				break
			}
		}
		sameBytes(t, name, func() (*Table, error) {
			rng.Shuffle(len(trials), func(a, b int) { trials[a], trials[b] = trials[b], trials[a] })
			return HyperparameterTable("t", "tab:t", trials)
		})
	}
}

// sameBytes builds a table four times (build shuffles its input) and wants the same bytes
// in every format each time.
func sameBytes(t *testing.T, what string, build func() (*Table, error)) {
	t.Helper()
	var first map[string][]byte
	for range 4 {
		tab, err := build()
		if err != nil {
			t.Fatal(err)
		}
		out := renderAll(t, tab)
		if first == nil {
			first = out
			continue
		}
		for _, f := range tableFormats {
			if !bytes.Equal(out[f.format], first[f.format]) {
				t.Errorf("%s %s: bytes change with the input order", what, f.format)
			}
		}
	}
}
