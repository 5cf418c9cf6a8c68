package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/analysis"
)

// run invokes the CLI and returns its exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// checkFiles checks that every listed file exists and parses as its extension says.
func checkFiles(t *testing.T, files []string) {
	t.Helper()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("listed file: %v", err)
		}
		switch filepath.Ext(f) {
		case ".json":
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		case ".csv":
			recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
			if err != nil || len(recs) < 2 {
				t.Errorf("%s: %d records, %v", f, len(recs), err)
			}
		case ".png":
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		case ".svg":
			if !bytes.Contains(b, []byte("</svg>")) {
				t.Errorf("%s: not an SVG document", f)
			}
		case ".pdf":
			if !bytes.HasPrefix(b, []byte("%PDF-")) || !bytes.HasSuffix(bytes.TrimSpace(b), []byte("%%EOF")) {
				t.Errorf("%s: not a PDF document", f)
			}
		default:
			t.Errorf("unexpected file %s", f)
		}
	}
}

func TestFiguresCommand(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := run(t, "figures", "-out", dir)
	if code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut)
	}
	files := strings.Fields(out)
	want := []string{
		"toy_beta1_0.1.json", "toy_beta1_0.5.json", "toy_beta1_0.9.json",
		"river_valley.png", "river_valley.svg", "river_valley.pdf", "toy_model.png", "toy_model.svg", "toy_model.pdf",
		"weights.json", "weights_vanilla.png", "weights_vanilla.svg", "weights_vanilla.pdf",
		"weights_refined_T1000.png", "weights_refined_T1000.svg", "weights_refined_T1000.pdf",
		"weights_refined_T5000.png", "weights_refined_T5000.svg", "weights_refined_T5000.pdf",
		"eos.json", "eos.png", "eos.svg", "eos.pdf",
		"centralflow_beta1_0.1.json", "centralflow_beta1_0.5.json", "centralflow_beta1_0.9.json",
		"centralflow.png", "centralflow.svg", "centralflow.pdf",
	}
	if len(files) != len(want) {
		t.Fatalf("printed %d files, want %d:\n%s", len(files), len(want), out)
	}
	for i, w := range want {
		if files[i] != filepath.Join(dir, w) {
			t.Errorf("line %d = %s, want %s", i+1, files[i], filepath.Join(dir, w))
		}
	}
	checkFiles(t, files)
	// The trajectory file is the analysis package's run with the paper's defaults.
	b, _ := os.ReadFile(filepath.Join(dir, "toy_beta1_0.9.json"))
	var run analysis.ToyRun
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	if run.Config != analysis.DefaultToyConfig(0.9) || len(run.Steps) != analysis.DefaultToySteps {
		t.Errorf("toy run config %+v with %d steps", run.Config, len(run.Steps))
	}
}

func TestToyCommand(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := run(t, "toy", "-beta1", "0.2,0.8", "-steps", "300", "-lr", "0.02", "-warmup", "10",
		"-wd", "0.001", "-c", "20", "-format", "csv", "-out", dir, "-json")
	if code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut)
	}
	var sum struct {
		Command string                `json:"command"`
		Files   []string              `json:"files"`
		Summary []analysis.ToySummary `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, out)
	}
	if sum.Command != "toy" || len(sum.Summary) != 2 || sum.Summary[0].Beta1 != 0.2 || sum.Summary[1].Beta1 != 0.8 {
		t.Errorf("summary %+v", sum)
	}
	if len(sum.Files) != 8 || filepath.Base(sum.Files[0]) != "toy_beta1_0.2.csv" {
		t.Errorf("files %v", sum.Files)
	}
	checkFiles(t, sum.Files)
	recs, _ := csv.NewReader(strings.NewReader(mustRead(t, sum.Files[0]))).ReadAll()
	if len(recs) != 301 {
		t.Errorf("CSV has %d rows, want 301", len(recs))
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWeightsEoSCentralFlowCommands(t *testing.T) {
	tests := []struct {
		args  []string
		files int
	}{
		{[]string{"weights", "-beta", "0.5,0.9", "-c", "3", "-T", "200", "-bins", "20"}, 7},
		{[]string{"weights", "-T", "30", "-format", "csv"}, 7},
		{[]string{"eos", "-steps", "200", "-beta1", "0.5", "-format", "csv"}, 4},
		{[]string{"centralflow", "-beta1", "0.5", "-steps", "400", "-window", "10"}, 4},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			code, out, errOut := run(t, append(tt.args, "-out", dir)...)
			if code != 0 {
				t.Fatalf("exit code %d, stderr %s", code, errOut)
			}
			files := strings.Fields(out)
			if len(files) != tt.files {
				t.Errorf("wrote %d files, want %d: %v", len(files), tt.files, files)
			}
			checkFiles(t, files)
		})
	}
}

// TestAnalysisOutputDeterministic checks that two runs write byte-identical data files.
func TestAnalysisOutputDeterministic(t *testing.T) {
	var data [2]string
	for i := range data {
		dir := t.TempDir()
		if code, _, errOut := run(t, "eos", "-steps", "300", "-out", dir); code != 0 {
			t.Fatal(errOut)
		}
		data[i] = mustRead(t, filepath.Join(dir, "eos.json"))
	}
	if data[0] != data[1] {
		t.Error("eos.json differs between identical runs")
	}
}

func TestAnalysisBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want []string // substrings of stderr
	}{
		{[]string{"toy", "-lr", "0"}, []string{"-lr", "0", "> 0"}},
		{[]string{"toy", "-lr", "NaN"}, []string{"-lr", "NaN"}},
		{[]string{"toy", "-beta1", "0.1,1.5"}, []string{"-beta1", "1.5", "[0, 1)"}},
		{[]string{"toy", "-beta1", "x"}, []string{"-beta1", `"x"`}},
		{[]string{"toy", "-beta2", "1"}, []string{"-beta2", "1", "[0, 1)"}},
		{[]string{"toy", "-c", "-1"}, []string{"-c", "-1", "> 0"}},
		{[]string{"toy", "-eps", "0"}, []string{"-eps", "0", "> 0"}},
		{[]string{"toy", "-steps", "0"}, []string{"-steps", "0", "≥ 1"}},
		{[]string{"toy", "-wd", "-0.5"}, []string{"-wd", "-0.5", "≥ 0"}},
		{[]string{"toy", "-warmup", "-1"}, []string{"-warmup", "-1", "≥ 0"}},
		{[]string{"toy", "-format", "xml"}, []string{"-format", "xml", "json or csv"}},
		{[]string{"toy", "extra"}, []string{"unexpected argument"}},
		{[]string{"weights", "-beta", "-0.1"}, []string{"-beta", "-0.1", "[0, 1)"}},
		{[]string{"weights", "-c", "0"}, []string{"-c", "0", "(0, ∞)"}},
		{[]string{"weights", "-T", "0"}, []string{"-T", "0", "≥ 1"}},
		{[]string{"weights", "-bins", "0"}, []string{"-bins", "0", "≥ 1"}},
		{[]string{"eos", "-beta1", "1"}, []string{"-beta1", "1", "[0, 1)"}},
		{[]string{"centralflow", "-window", "0"}, []string{"-window", "0", "≥ 1"}},
		{[]string{"centralflow", "-lr", "-2"}, []string{"-lr", "-2", "> 0"}},
		{[]string{"figures", "-nope"}, []string{"-nope"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			code, _, errOut := run(t, append(tt.args, "-out", dir)...)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not mention %q", errOut, w)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("a rejected command wrote %d files", len(entries))
			}
		})
	}
}

// TestAnalysisRunFailure checks that a failure that is not a command-line error exits 1.
func TestAnalysisRunFailure(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "eos", "-steps", "10", "-out", filepath.Join(file, "sub"))
	if code != 1 || !strings.Contains(errOut, "output directory") {
		t.Errorf("exit code %d, stderr %q; want 1 and the directory error", code, errOut)
	}
}

// FuzzFloatList checks that the list flag never panics, accepts only in-range numbers, and
// prints a list it parses back to the same values.
func FuzzFloatList(f *testing.F) {
	for _, s := range []string{"0.1,0.5,0.9", "0", "1", "-0.1", "NaN", "0.5,,0.2", " 0.3 , 0.4", "1e-300", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := &floatList{check: checkMomentum}
		if err := l.Set(s); err != nil {
			return
		}
		if len(l.vals) == 0 {
			t.Fatalf("Set(%q) accepted an empty list", s)
		}
		for _, v := range l.vals {
			if !(v >= 0 && v < 1) {
				t.Fatalf("Set(%q) accepted %v", s, v)
			}
		}
		back := &floatList{check: checkMomentum}
		if err := back.Set(l.String()); err != nil || len(back.vals) != len(l.vals) {
			t.Fatalf("String() = %q does not parse back: %v", l.String(), err)
		}
		for i := range l.vals {
			if back.vals[i] != l.vals[i] {
				t.Fatalf("round trip %v → %v", l.vals, back.vals)
			}
		}
	})
}

// TestToyDivergenceIsAResult checks that a learning rate far too high is recorded as a
// diverged run (exit 0, files written, the step reported live), not a failure, and that the
// other β1 values of the same command still produce their results.
func TestToyDivergenceIsAResult(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := run(t, "toy", "-lr", "5000", "-wd", "1", "-beta1", "0.1,0.9", "-steps", "500", "-out", dir, "-json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stderr, "diverged at step") {
		t.Errorf("stderr does not report the divergence: %q", stderr)
	}
	var out struct {
		Files   []string
		Summary []analysis.ToySummary
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("summary: %v", err)
	}
	if len(out.Summary) != 2 {
		t.Fatalf("%d summaries, want 2", len(out.Summary))
	}
	for _, s := range out.Summary {
		if s.DivergedAt < 2 || s.DivergedAt > 501 {
			t.Errorf("β1=%g: diverged_at = %d", s.Beta1, s.DivergedAt)
		}
	}
	checkFiles(t, out.Files)
}
