package report

// The paper's appendix tables as code: the C-sensitivity tables (tab:c_sweep_05M,
// tab:c_sweep_2M) and the hyperparameter tables (tab:hyperparameter_main and its _largeBS,
// _owt and _owt_largeBS variants), built from trial results and rendered as Markdown, CSV,
// LaTeX and JSON. Every renderer is a pure function of the Table: the same results, in any
// input order, give the same bytes.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/status"
)

// statusOrder lists the statuses a cell or trial may have, in the order compareTrials sorts
// otherwise equal trials by (the canonical order of Table.Trials, which the rendered tables
// follow).
var statusOrder = []status.Status{status.Completed, status.Diverged, status.Stopped, status.Failed, status.Missing}

func statusError(s status.Status) error {
	return &fielderr.Error{Field: "Status", Value: strconv.Quote(string(s)), Reason: "unknown status"}
}

// Cell is one result of a C-sensitivity sweep: the test perplexity of refined SF-AdamW with
// momentum β1 (the row) and decoupling parameter C (the column). Its Status is
// status.Completed, Diverged, Stopped, Failed or Missing; the zero Status, "", is refused.
type Cell struct {
	Row    float64 // β1, in [0, 1)
	Col    string  // "vanilla", or C as a decimal number ("5", "200"); matched numerically
	Value  float64 // test perplexity; read only when Status is status.Completed, and then finite
	Status status.Status
	Step   int    // status.Diverged: the step at which the loss diverged, 0 if unknown; status.Stopped: the rung it was stopped at
	Reason string // status.Failed: a short reason, written to CSV and JSON only
	Spread        // over seeds: Value is then the mean of the completed seeds
	// Val is the validation loss at the primary iterate over the same seeds: a row's bold
	// is chosen by it, never by Value (selection.go). A cell without one is never bold.
	Val Seeds
}

// TrialSummary is the outcome of one trial of a hyperparameter sweep; its Status is as in
// Cell.
type TrialSummary struct {
	Optimizer string  // "adamw", "sfadamw" or "refined" (refined SF-AdamW)
	Schedule  string  // learning-rate schedule label shown next to the optimizer ("Cosine LR"); "" for none
	LR        float64 // peak learning rate
	Beta1     float64
	Beta2     float64
	C         float64 // decoupling parameter: 0 (vanilla) for adamw and sfadamw, > 0 for refined
	Value     float64 // test perplexity; read only when Status is status.Completed, and then finite
	Status    status.Status
	Step      int    // status.Diverged: the step at which the loss diverged, 0 if unknown; status.Stopped: its rung
	Reason    string // status.Failed: a short reason
	Spread           // over seeds, as in Cell
	Val       Seeds  // the validation loss that chooses the best trial, as in Cell
}

// TableKind says which of the paper's tables a Table is.
type TableKind string

const (
	TableCSensitivity    TableKind = "c-sensitivity"   // tab:c_sweep_05M, tab:c_sweep_2M
	TableHyperparameters TableKind = "hyperparameters" // tab:hyperparameter_main and variants
)

// Table is one of the paper's tables, built by CSensitivityTable or HyperparameterTable and
// written by WriteMarkdown, WriteCSV, WriteLaTeX and WriteJSON.
//
// The cells read as in the paper: test perplexities with two decimals below 100 and one at
// or above (67.20, 110.8), the best of each row in bold (chosen by validation loss, the
// caption says so), "--" where nothing was run.
// A diverged cell reads div@N in plain text and JSON (N the step), "diverged (step N)" in
// Markdown and $\dagger$\,N in LaTeX, where the caption explains the dagger; a cell a
// search's early stopping ended reads "stopped (step N)"; a failed cell reads "failed".
// Non-finite numbers are never printed.
type Table struct {
	Kind  TableKind
	Title string // caption lead, plain text (escaped for Markdown and LaTeX)
	Label string // LaTeX label, "tab:c_sweep_05M"; may be empty

	// Rows and Columns are the keys of the rows and of the columns after the row heading,
	// in display order. C-sensitivity: β1 ("0.9") and C ("vanilla", "5", ...).
	// Hyperparameters: optimizer, with "/schedule" when a schedule label is given
	// ("adamw/Cosine LR"), and "lr", "betas", "c".
	Rows    []string
	Columns []string

	// Cells holds a C-sensitivity table's len(Rows)·len(Columns) cells, row-major; cells
	// not given are status.Missing.
	Cells []TableCell

	// Grids holds a hyperparameter table's rows; Trials its trials in canonical order
	// (optimizer, schedule, lr, β1, β2, C, then outcome), which Grid.Best indexes.
	Grids  []Grid
	Trials []TrialSummary

	// LR and Beta2 are a C-sensitivity table's learning rate and β2 where every cell shares
	// them, 0 where they differ or are not known: the paper's C tables fix both.
	LR, Beta2 float64

	// Engines lists the arithmetics of the engines behind the table's results when they
	// differ (backend.Info.Arithmetic): the caption says so, as cells of different
	// arithmetic may differ in their last digits. Nil when one engine produced them all.
	Engines []string
}

// TableCell is a cell of a C-sensitivity table.
type TableCell struct {
	Cell
	// Best: the lowest validation loss of its row, or one that cannot be told apart from
	// it (tiesWith: the same number, or no difference beyond noise in a paired comparison
	// over seeds). A cell with a diverged seed, or without a validation loss, is never best.
	Best bool
}

// Grid is one row of a hyperparameter table: the values an optimizer was run with, each
// sorted and without repeats, and its best trial.
type Grid struct {
	Optimizer string
	Schedule  string
	LR        []float64
	Betas     [][2]float64 // (β1, β2) pairs, by β1 then β2
	C         []float64    // empty for adamw and sfadamw
	Best      int          // index in Table.Trials of the finished trial of lowest validation loss; -1 if none
	// Ties lists the other trials of the grid that cannot be told apart from Best (as a
	// TableCell's Best), by index in Table.Trials.
	Ties []int
}

// Table formats accepted by Table.Write.
const (
	FormatMarkdown = "markdown"
	FormatCSV      = "csv"
	FormatLaTeX    = "latex"
	FormatJSON     = "json"
)

// CSensitivityTable builds a C-sensitivity table like the paper's tab:c_sweep_05M: one row
// per β1, the vanilla column then one column per C, each cell a test perplexity. Rows and
// columns come in the order given; a nil (or empty) rows or cols takes the values present in
// cells, sorted numerically with "vanilla" first. Every cell must fall in a given row and
// column, and each position may be given once.
func CSensitivityTable(title, label string, cells []Cell, rows []float64, cols []string) (*Table, error) {
	fail := func(format string, args ...any) (*Table, error) {
		return nil, fmt.Errorf("report: c-sensitivity table: "+format, args...)
	}
	if err := checkTitleLabel(title, label); err != nil {
		return fail("%w", err)
	}
	for i, c := range cells {
		if err := checkOutcome(c.Value, c.Status, c.Step); err != nil {
			return fail("cells[%d]: %w", i, err)
		}
		if err := checkSpread(c.Spread); err != nil {
			return fail("cells[%d]: %w", i, err)
		}
		if err := checkVal(c.Val); err != nil {
			return fail("cells[%d]: %w", i, err)
		}
		if err := checkBeta("Row", c.Row); err != nil {
			return fail("cells[%d]: %w", i, err)
		}
	}

	rowKeys, rowVals := []string{}, []float64{}
	if len(rows) > 0 {
		for i, r := range rows {
			if err := checkBeta("Row", r); err != nil {
				return fail("rows[%d]: %w", i, err)
			}
			rowVals = append(rowVals, r+0) // +0 turns −0 into 0
		}
	} else {
		for _, c := range cells {
			rowVals = append(rowVals, c.Row+0)
		}
		slices.Sort(rowVals)
		rowVals = slices.Compact(rowVals)
	}
	rowIdx := make(map[float64]int, len(rowVals))
	for i, r := range rowVals {
		if _, dup := rowIdx[r]; dup {
			return fail("rows[%d]: %w", i, &fielderr.Error{Field: "rows", Value: r, Reason: "given twice"})
		}
		rowIdx[r] = i
		rowKeys = append(rowKeys, formatG(r))
	}

	colKeys := []string{}
	if len(cols) > 0 {
		for i, c := range cols {
			key, err := canonicalC(c)
			if err != nil {
				return fail("cols[%d]: %w", i, err)
			}
			colKeys = append(colKeys, key)
		}
	} else {
		var cs []float64
		vanilla := false
		for i, c := range cells {
			key, err := canonicalC(c.Col)
			if err != nil {
				return fail("cells[%d]: %w", i, err)
			}
			if key == "vanilla" {
				vanilla = true
				continue
			}
			v, _ := strconv.ParseFloat(key, 64)
			cs = append(cs, v)
		}
		slices.Sort(cs)
		cs = slices.Compact(cs)
		if vanilla {
			colKeys = append(colKeys, "vanilla")
		}
		for _, v := range cs {
			colKeys = append(colKeys, formatG(v))
		}
	}
	colIdx := make(map[string]int, len(colKeys))
	for i, k := range colKeys {
		if _, dup := colIdx[k]; dup {
			return fail("cols[%d]: %w", i, &fielderr.Error{Field: "cols", Value: strconv.Quote(cols[i]), Reason: "given twice"})
		}
		colIdx[k] = i
	}
	if len(rowKeys) == 0 || len(colKeys) == 0 {
		return fail("no cells and no rows or columns given: a table needs at least one row and one column")
	}

	t := &Table{
		Kind: TableCSensitivity, Title: title, Label: label,
		Rows: rowKeys, Columns: colKeys,
		Cells: make([]TableCell, len(rowKeys)*len(colKeys)),
	}
	set := make([]bool, len(t.Cells))
	for i, c := range cells {
		r, ok := rowIdx[c.Row+0]
		if !ok {
			return fail("cells[%d]: %w", i, &fielderr.Error{Field: "Row", Value: c.Row, Reason: "not among the table's rows"})
		}
		key, err := canonicalC(c.Col)
		if err != nil {
			return fail("cells[%d]: %w", i, err)
		}
		k, ok := colIdx[key]
		if !ok {
			return fail("cells[%d]: %w", i, &fielderr.Error{Field: "Col", Value: strconv.Quote(c.Col), Reason: "not among the table's columns"})
		}
		at := r*len(colKeys) + k
		if set[at] {
			return fail("cells[%d]: %w", i, &fielderr.Error{Field: "Col", Value: strconv.Quote(c.Col),
				Reason: "a second result for β1 = " + rowKeys[r] + ", C = " + key})
		}
		set[at] = true
		t.Cells[at].Cell = normalizeCell(c, rowVals[r], key)
	}
	for at := range t.Cells {
		if !set[at] {
			t.Cells[at].Cell = Cell{Row: rowVals[at/len(colKeys)], Col: colKeys[at%len(colKeys)], Status: status.Missing}
		}
	}
	for r := range rowKeys {
		row := t.Cells[r*len(colKeys) : (r+1)*len(colKeys)]
		_, tied := bestOf(len(row), func(k int) (status.Status, Spread, Seeds) { return row[k].Status, row[k].Spread, row[k].Val })
		for k := range row {
			row[k].Best = tied[k]
		}
	}
	return t, nil
}

// normalizeCell returns c with its row and column keys canonical and the fields that do not
// apply to its status zeroed, so that equal outcomes render equally.
func normalizeCell(c Cell, row float64, col string) Cell {
	n := Cell{Row: row, Col: col, Status: c.Status, Spread: normalizeSpread(c.Status, c.Spread), Val: normalizeVal(c.Val)}
	n.Value, n.Step, n.Reason = outcomeFields(c.Status, c.Value, c.Step, c.Reason)
	return n
}

// normalizeSpread returns sp with its samples sorted by seed, in a copy, and nothing of it
// for a missing outcome.
func normalizeSpread(s status.Status, sp Spread) Spread {
	if s == status.Missing {
		return Spread{}
	}
	sp.Samples = slices.Clone(sp.Samples)
	slices.SortFunc(sp.Samples, func(a, b SeedValue) int { return cmp.Compare(a.Seed, b.Seed) })
	if s != status.Completed {
		sp.Std, sp.N, sp.Samples = 0, 0, nil
	}
	return sp
}

// checkSpread validates the spread of an outcome over seeds.
func checkSpread(sp Spread) error {
	switch {
	case sp.N < 0:
		return &fielderr.Error{Field: "N", Value: sp.N, Reason: "must be ≥ 0"}
	case sp.Diverged < 0:
		return &fielderr.Error{Field: "Diverged", Value: sp.Diverged, Reason: "must be ≥ 0"}
	case sp.Failed < 0:
		return &fielderr.Error{Field: "Failed", Value: sp.Failed, Reason: "must be ≥ 0"}
	case sp.Stopped < 0:
		return &fielderr.Error{Field: "Stopped", Value: sp.Stopped, Reason: "must be ≥ 0"}
	case !(sp.Std >= 0) || math.IsInf(sp.Std, 0):
		return &fielderr.Error{Field: "Std", Value: sp.Std, Reason: "must be finite and ≥ 0"}
	case len(sp.Samples) > 0 && len(sp.Samples) != sp.N:
		return &fielderr.Error{Field: "Samples", Value: len(sp.Samples), Reason: fmt.Sprintf("must hold one value per completed seed (N = %d)", sp.N)}
	}
	seen := map[int]bool{}
	for _, v := range sp.Samples {
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			return &fielderr.Error{Field: "Samples", Value: v.Value, Reason: "must be finite"}
		}
		if seen[v.Seed] {
			return &fielderr.Error{Field: "Samples", Value: v.Seed, Reason: "seed given twice"}
		}
		seen[v.Seed] = true
	}
	return nil
}

// outcomeFields keeps of an outcome's value, step and reason the one its status uses: the
// value of a completed outcome, the step of a diverged or stopped one, the reason of a
// failed one.
func outcomeFields(s status.Status, value float64, step int, reason string) (float64, int, string) {
	switch s {
	case status.Completed:
		return value, 0, ""
	case status.Diverged, status.Stopped:
		return 0, step, ""
	case status.Failed:
		return 0, 0, reason
	}
	return 0, 0, ""
}

// canonicalC returns the column key of a C column: "vanilla" (any case), or a positive
// finite C formatted in its shortest form, so "5", "5.0" and "5e0" are one column.
func canonicalC(s string) (string, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "vanilla") {
		return "vanilla", nil
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v <= 0 {
		return "", &fielderr.Error{Field: "Col", Value: strconv.Quote(s), Reason: `must be "vanilla" or a positive finite C`}
	}
	return formatG(v), nil
}

// checkOutcome validates the status of a result and the fields that go with it.
func checkOutcome(value float64, s status.Status, step int) error {
	switch s {
	case status.Completed:
		if math.IsNaN(value) || math.IsInf(value, 0) {
			return &fielderr.Error{Field: "Value", Value: value, Reason: "must be finite when Status is ok (use diverged)"}
		}
	case status.Diverged, status.Stopped:
		if step < 0 {
			return &fielderr.Error{Field: "Step", Value: step, Reason: "must be ≥ 0"}
		}
	case status.Failed, status.Missing:
	default:
		return statusError(s)
	}
	return nil
}

func checkTitleLabel(title, label string) error {
	if err := checkPlainText("title", title); err != nil {
		return err
	}
	for _, r := range label {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(":_-./", r))) {
			return &fielderr.Error{Field: "label", Value: strconv.Quote(label), Reason: "may hold only ASCII letters, digits and : _ - . /"}
		}
	}
	return nil
}

// checkPlainText rejects control characters, which would break a table line.
func checkPlainText(field, s string) error {
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return &fielderr.Error{Field: field, Value: strconv.Quote(s), Reason: "must be one line of valid text"}
		}
	}
	return nil
}

// checkBeta reports whether beta is a valid momentum in [0, 1).
func checkBeta(name string, beta float64) error {
	if !(beta >= 0 && beta < 1) {
		return &fielderr.Error{Field: name, Value: beta, Reason: "must be in [0, 1)"}
	}
	return nil
}
