package analysis

// The paper's appendix tables as code: the C-sensitivity tables (tab:c_sweep_05M,
// tab:c_sweep_2M) and the hyperparameter tables (tab:hyperparameter_main and its _largeBS,
// _owt and _owt_largeBS variants), built from trial results and rendered as Markdown, CSV,
// LaTeX and JSON. Every renderer is a pure function of the Table: the same results, in any
// input order, give the same bytes.

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/sfsweep/sfsweep/sfadamw"
)

// Status is the outcome of one trial or table cell.
type Status uint8

const (
	StatusOK       Status = iota // finished; Value holds the test perplexity
	StatusDiverged               // the loss became non-finite; Step says when (0: unknown)
	StatusFailed                 // the run failed for a reason other than divergence
	StatusMissing                // not run (yet)
)

var statusNames = [...]string{"ok", "diverged", "failed", "missing"}

// String returns "ok", "diverged", "failed" or "missing".
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText encodes the status by its name.
func (s Status) MarshalText() ([]byte, error) {
	if int(s) >= len(statusNames) {
		return nil, fmt.Errorf("analysis: marshal status: %w", statusError(s))
	}
	return []byte(statusNames[s]), nil
}

// UnmarshalText decodes a status name as written by MarshalText.
func (s *Status) UnmarshalText(b []byte) error {
	for i, name := range statusNames {
		if string(b) == name {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("analysis: unmarshal status: %w",
		&sfadamw.ConfigError{Field: "Status", Value: strconv.Quote(string(b)), Reason: "must be ok, diverged, failed or missing"})
}

func statusError(s Status) error {
	return &sfadamw.ConfigError{Field: "Status", Value: int(s), Reason: "unknown status"}
}

// Cell is one result of a C-sensitivity sweep: the test perplexity of refined SF-AdamW with
// momentum β1 (the row) and decoupling parameter C (the column).
type Cell struct {
	Row    float64 // β1, in [0, 1)
	Col    string  // "vanilla", or C as a decimal number ("5", "200"); matched numerically
	Value  float64 // test perplexity; read only when Status is StatusOK, and then finite
	Status Status
	Step   int    // StatusDiverged: the step at which the loss diverged; 0 if unknown
	Reason string // StatusFailed: a short reason, written to CSV and JSON only
}

// TrialSummary is the outcome of one trial of a hyperparameter sweep.
type TrialSummary struct {
	Optimizer string  // "adamw", "sfadamw" or "refined" (refined SF-AdamW)
	Schedule  string  // learning-rate schedule label shown next to the optimizer ("Cosine LR"); "" for none
	LR        float64 // peak learning rate
	Beta1     float64
	Beta2     float64
	C         float64 // decoupling parameter: 0 (vanilla) for adamw and sfadamw, > 0 for refined
	Value     float64 // test perplexity; read only when Status is StatusOK, and then finite
	Status    Status
	Step      int    // StatusDiverged: the step at which the loss diverged; 0 if unknown
	Reason    string // StatusFailed: a short reason
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
// or above (67.20, 110.8), the best value of each row in bold, "--" where nothing was run.
// A diverged cell reads div@N in plain text and JSON (N the step), "diverged (step N)" in
// Markdown and $\dagger$\,N in LaTeX, where the caption explains the dagger; a failed cell
// reads "failed". Non-finite numbers are never printed.
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
	// not given are StatusMissing.
	Cells []TableCell

	// Grids holds a hyperparameter table's rows; Trials its trials in canonical order
	// (optimizer, schedule, lr, β1, β2, C, then outcome), which Grid.Best indexes.
	Grids  []Grid
	Trials []TrialSummary
}

// TableCell is a cell of a C-sensitivity table.
type TableCell struct {
	Cell
	Best bool // the lowest perplexity of its row (all cells tying for it are best)
}

// Grid is one row of a hyperparameter table: the values an optimizer was run with, each
// sorted and without repeats, and its best trial.
type Grid struct {
	Optimizer string
	Schedule  string
	LR        []float64
	Betas     [][2]float64 // (β1, β2) pairs, by β1 then β2
	C         []float64    // empty for adamw and sfadamw
	Best      int          // index in Table.Trials of the lowest-perplexity finished trial; -1 if none
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
		return nil, fmt.Errorf("analysis: c-sensitivity table: "+format, args...)
	}
	if err := checkTitleLabel(title, label); err != nil {
		return fail("%w", err)
	}
	for i, c := range cells {
		if err := checkOutcome(c.Value, c.Status, c.Step); err != nil {
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
			return fail("rows[%d]: %w", i, &sfadamw.ConfigError{Field: "rows", Value: r, Reason: "given twice"})
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
			return fail("cols[%d]: %w", i, &sfadamw.ConfigError{Field: "cols", Value: strconv.Quote(cols[i]), Reason: "given twice"})
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
			return fail("cells[%d]: %w", i, &sfadamw.ConfigError{Field: "Row", Value: c.Row, Reason: "not among the table's rows"})
		}
		key, err := canonicalC(c.Col)
		if err != nil {
			return fail("cells[%d]: %w", i, err)
		}
		k, ok := colIdx[key]
		if !ok {
			return fail("cells[%d]: %w", i, &sfadamw.ConfigError{Field: "Col", Value: strconv.Quote(c.Col), Reason: "not among the table's columns"})
		}
		at := r*len(colKeys) + k
		if set[at] {
			return fail("cells[%d]: %w", i, &sfadamw.ConfigError{Field: "Col", Value: strconv.Quote(c.Col),
				Reason: "a second result for β1 = " + rowKeys[r] + ", C = " + key})
		}
		set[at] = true
		t.Cells[at].Cell = normalizeCell(c, rowVals[r], key)
	}
	for at := range t.Cells {
		if !set[at] {
			t.Cells[at].Cell = Cell{Row: rowVals[at/len(colKeys)], Col: colKeys[at%len(colKeys)], Status: StatusMissing}
		}
	}
	for r := range rowKeys {
		row := t.Cells[r*len(colKeys) : (r+1)*len(colKeys)]
		best := math.Inf(1)
		for _, c := range row {
			if c.Status == StatusOK && c.Value < best {
				best = c.Value
			}
		}
		for k := range row {
			row[k].Best = row[k].Status == StatusOK && row[k].Value == best
		}
	}
	return t, nil
}

// normalizeCell returns c with its row and column keys canonical and the fields that do not
// apply to its status zeroed, so that equal outcomes render equally.
func normalizeCell(c Cell, row float64, col string) Cell {
	n := Cell{Row: row, Col: col, Status: c.Status}
	switch c.Status {
	case StatusOK:
		n.Value = c.Value
	case StatusDiverged:
		n.Step = c.Step
	case StatusFailed:
		n.Reason = c.Reason
	}
	return n
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
		return "", &sfadamw.ConfigError{Field: "Col", Value: strconv.Quote(s), Reason: `must be "vanilla" or a positive finite C`}
	}
	return formatG(v), nil
}

// optimizers lists the optimizers of a hyperparameter table in the paper's row order with
// their names in plain text and LaTeX.
var optimizers = []struct{ key, text, latex string }{
	{"adamw", "AdamW", `\texttt{AdamW}`},
	{"sfadamw", "SF-AdamW", `\texttt{SF-AdamW}`},
	{"refined", "Refined SF-AdamW", `Refined \texttt{SF-AdamW}`},
}

func optimizerRank(name string) int {
	for i, o := range optimizers {
		if o.key == name {
			return i
		}
	}
	return -1
}

// HyperparameterTable builds a hyperparameter table like the paper's
// tab:hyperparameter_main: one row per optimizer (and schedule label), listing the learning
// rates, (β1, β2) pairs and C values it was run with, the best trial's values in bold. The
// best trial is the finished trial with the lowest perplexity (the first in canonical order
// on ties); a list with a single value is not bolded, as in the paper. Trials with
// StatusMissing were not run: they appear in Trials but not in the grids.
func HyperparameterTable(title, label string, trials []TrialSummary) (*Table, error) {
	fail := func(format string, args ...any) (*Table, error) {
		return nil, fmt.Errorf("analysis: hyperparameter table: "+format, args...)
	}
	if err := checkTitleLabel(title, label); err != nil {
		return fail("%w", err)
	}
	if len(trials) == 0 {
		return fail("no trials")
	}
	ts := make([]TrialSummary, len(trials))
	for i, tr := range trials {
		if err := checkTrial(tr); err != nil {
			return fail("trials[%d]: %w", i, err)
		}
		ts[i] = normalizeTrial(tr)
	}
	slices.SortFunc(ts, compareTrials)

	t := &Table{
		Kind: TableHyperparameters, Title: title, Label: label,
		Columns: []string{"lr", "betas", "c"},
		Trials:  ts,
	}
	for lo := 0; lo < len(ts); {
		hi := lo + 1
		for hi < len(ts) && ts[hi].Optimizer == ts[lo].Optimizer && ts[hi].Schedule == ts[lo].Schedule {
			hi++
		}
		g := Grid{Optimizer: ts[lo].Optimizer, Schedule: ts[lo].Schedule, LR: []float64{}, Betas: [][2]float64{}, C: []float64{}, Best: -1}
		for i := lo; i < hi; i++ {
			tr := ts[i]
			if tr.Status == StatusMissing {
				continue
			}
			g.LR = append(g.LR, tr.LR)
			g.Betas = append(g.Betas, [2]float64{tr.Beta1, tr.Beta2})
			if tr.C > 0 {
				g.C = append(g.C, tr.C)
			}
			if tr.Status == StatusOK && (g.Best < 0 || tr.Value < ts[g.Best].Value) {
				g.Best = i
			}
		}
		slices.Sort(g.LR)
		g.LR = slices.Compact(g.LR)
		slices.SortFunc(g.Betas, func(a, b [2]float64) int {
			return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
		})
		g.Betas = slices.Compact(g.Betas)
		slices.Sort(g.C)
		g.C = slices.Compact(g.C)
		key := g.Optimizer
		if g.Schedule != "" {
			key += "/" + g.Schedule
		}
		t.Rows = append(t.Rows, key)
		t.Grids = append(t.Grids, g)
		lo = hi
	}
	return t, nil
}

func checkTrial(tr TrialSummary) error {
	if optimizerRank(tr.Optimizer) < 0 {
		return &sfadamw.ConfigError{Field: "Optimizer", Value: strconv.Quote(tr.Optimizer), Reason: "must be adamw, sfadamw or refined"}
	}
	if err := checkPlainText("Schedule", tr.Schedule); err != nil {
		return err
	}
	if !(tr.LR > 0) || math.IsInf(tr.LR, 0) {
		return &sfadamw.ConfigError{Field: "LR", Value: tr.LR, Reason: "must be positive and finite"}
	}
	if err := checkBeta("Beta1", tr.Beta1); err != nil {
		return err
	}
	if err := checkBeta("Beta2", tr.Beta2); err != nil {
		return err
	}
	if tr.Optimizer == "refined" {
		if !(tr.C > 0) || math.IsInf(tr.C, 0) {
			return &sfadamw.ConfigError{Field: "C", Value: tr.C, Reason: "must be positive and finite for refined"}
		}
	} else if tr.C != 0 {
		return &sfadamw.ConfigError{Field: "C", Value: tr.C, Reason: "must be 0 for " + tr.Optimizer + " (use optimizer refined)"}
	}
	return checkOutcome(tr.Value, tr.Status, tr.Step)
}

func normalizeTrial(tr TrialSummary) TrialSummary {
	n := tr
	n.LR, n.Beta1, n.Beta2 = tr.LR+0, tr.Beta1+0, tr.Beta2+0
	n.Value, n.Step, n.Reason = 0, 0, ""
	switch tr.Status {
	case StatusOK:
		n.Value = tr.Value
	case StatusDiverged:
		n.Step = tr.Step
	case StatusFailed:
		n.Reason = tr.Reason
	}
	return n
}

// compareTrials orders trials totally: by optimizer, schedule, configuration, then outcome.
func compareTrials(a, b TrialSummary) int {
	return cmp.Or(
		cmp.Compare(optimizerRank(a.Optimizer), optimizerRank(b.Optimizer)),
		strings.Compare(a.Schedule, b.Schedule),
		cmp.Compare(a.LR, b.LR),
		cmp.Compare(a.Beta1, b.Beta1),
		cmp.Compare(a.Beta2, b.Beta2),
		cmp.Compare(a.C, b.C),
		cmp.Compare(a.Status, b.Status),
		cmp.Compare(a.Value, b.Value),
		cmp.Compare(a.Step, b.Step),
		strings.Compare(a.Reason, b.Reason),
	)
}

// checkOutcome validates the status of a result and the fields that go with it.
func checkOutcome(value float64, s Status, step int) error {
	switch s {
	case StatusOK:
		if math.IsNaN(value) || math.IsInf(value, 0) {
			return &sfadamw.ConfigError{Field: "Value", Value: value, Reason: "must be finite when Status is ok (use diverged)"}
		}
	case StatusDiverged:
		if step < 0 {
			return &sfadamw.ConfigError{Field: "Step", Value: step, Reason: "must be ≥ 0"}
		}
	case StatusFailed, StatusMissing:
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
			return &sfadamw.ConfigError{Field: "label", Value: strconv.Quote(label), Reason: "may hold only ASCII letters, digits and : _ - . /"}
		}
	}
	return nil
}

// checkPlainText rejects control characters, which would break a table line.
func checkPlainText(field, s string) error {
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return &sfadamw.ConfigError{Field: field, Value: strconv.Quote(s), Reason: "must be one line of valid text"}
		}
	}
	return nil
}

// formatPerplexity formats a perplexity as the paper does: two decimals below 100 (67.20),
// one decimal at or above (110.8), so four significant digits from 10 to 1000. Non-finite
// values, which a validated table never holds, come out as "n/a".
func formatPerplexity(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if math.Abs(v) >= 100 || strings.HasPrefix(strings.TrimPrefix(s, "-"), "100.") {
		s = strconv.FormatFloat(v, 'f', 1, 64) // 99.996 rounds to 100.0, not 100.00
	}
	if s == "-0.00" {
		s = "0.00"
	}
	return s
}

// formatLR formats a learning rate as the paper does: 5e-4, 2e-3, 1e-2.
func formatLR(v float64) string {
	s := strconv.FormatFloat(v, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	return mant + "e" + strconv.Itoa(e)
}

// formatG formats a number in the shortest form that parses back to it: 0.95, 200.
func formatG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Plain text of a cell: the number, div@N, failed or --.
func (c Cell) text() string {
	switch c.Status {
	case StatusOK:
		return formatPerplexity(c.Value)
	case StatusDiverged:
		if c.Step > 0 {
			return "div@" + strconv.Itoa(c.Step)
		}
		return "div"
	case StatusFailed:
		return "failed"
	}
	return "--"
}

func (c TableCell) markdown() string {
	switch c.Status {
	case StatusOK:
		return bold(formatPerplexity(c.Value), c.Best, "**", "**")
	case StatusDiverged:
		if c.Step > 0 {
			return "diverged (step " + strconv.Itoa(c.Step) + ")"
		}
		return "diverged"
	}
	return c.text()
}

func (c TableCell) latex() string {
	switch c.Status {
	case StatusOK:
		return bold(formatPerplexity(c.Value), c.Best, `\textbf{`, `}`)
	case StatusDiverged:
		if c.Step > 0 {
			return `$\dagger$\,` + strconv.Itoa(c.Step)
		}
		return `$\dagger$`
	}
	return c.text()
}

func bold(s string, on bool, open, close string) string {
	if on {
		return open + s + close
	}
	return s
}

// style holds what differs between the Markdown and the LaTeX rendering of a table.
type style struct {
	latex               bool
	boldOpen, boldClose string
	setOpen, setClose   string
	escape              func(string) string
}

var (
	markdownStyle = style{boldOpen: "**", boldClose: "**", setOpen: "{", setClose: "}", escape: escapeMarkdown}
	latexStyle    = style{latex: true, boldOpen: `\textbf{`, boldClose: `}`, setOpen: `\{`, setClose: `\}`, escape: escapeLaTeX}
)

// grid renders a table as its header row and body rows, each a row heading and its cells.
func (t *Table) grid(st style) (header []string, body [][]string) {
	switch t.Kind {
	case TableCSensitivity:
		header = []string{"β1"}
		if st.latex {
			header[0] = `\textbf{$\beta_1$}`
		}
		first := true
		for _, k := range t.Columns {
			switch {
			case k == "vanilla":
				header = append(header, "Vanilla")
			case first && st.latex:
				header = append(header, "$C="+k+"$")
			case first:
				header = append(header, "C="+k)
			default:
				header = append(header, k)
			}
			if k != "vanilla" {
				first = false
			}
		}
		for r, key := range t.Rows {
			line := []string{key}
			for _, c := range t.Cells[r*len(t.Columns) : (r+1)*len(t.Columns)] {
				if st.latex {
					line = append(line, c.latex())
				} else {
					line = append(line, c.markdown())
				}
			}
			body = append(body, line)
		}
	case TableHyperparameters:
		header = []string{"Optimizer", "Learning Rate", "(β1, β2)", "C (Refined SF)"}
		if st.latex {
			header = []string{"Optimizer", "Learning Rate", `$(\beta_1, \beta_2)$`, `$C$ (Refined \texttt{SF})`}
		}
		for _, g := range t.Grids {
			o := optimizers[optimizerRank(g.Optimizer)]
			name := o.text
			if st.latex {
				name = o.latex
			}
			if g.Schedule != "" {
				name += " (" + st.escape(g.Schedule) + ")"
			}
			var best *TrialSummary
			if g.Best >= 0 {
				best = &t.Trials[g.Best]
			}
			lr := make([]string, len(g.LR))
			lrBest := -1
			for i, v := range g.LR {
				lr[i] = formatLR(v)
				if best != nil && v == best.LR {
					lrBest = i
				}
			}
			betas := make([]string, len(g.Betas))
			betasBest := -1
			for i, b := range g.Betas {
				betas[i] = "(" + formatG(b[0]) + ", " + formatG(b[1]) + ")"
				if best != nil && b == [2]float64{best.Beta1, best.Beta2} {
					betasBest = i
				}
			}
			cs := make([]string, len(g.C))
			cBest := -1
			for i, v := range g.C {
				cs[i] = formatG(v)
				if best != nil && v == best.C {
					cBest = i
				}
			}
			body = append(body, []string{name, st.set(lr, lrBest), st.set(betas, betasBest), st.set(cs, cBest)})
		}
	}
	return header, body
}

// set renders a list of grid values as the paper does: "--" when empty, the bare value when
// single, else {a, b, c} with the best one in bold.
func (st style) set(items []string, best int) string {
	switch len(items) {
	case 0:
		return "--"
	case 1:
		return items[0]
	}
	var b strings.Builder
	b.WriteString(st.setOpen)
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(bold(s, i == best, st.boldOpen, st.boldClose))
	}
	b.WriteString(st.setClose)
	return b.String()
}

// note returns the caption text after the title.
func (t *Table) note(st style) string {
	if t.Kind == TableHyperparameters {
		return "Bold entries indicate the best-performing configuration for each optimizer."
	}
	c := "C"
	if st.latex {
		c = "$C$"
	}
	s := "Test perplexity under varying " + c + " values. Bold: the best value in each row; --: not run."
	if st.latex {
		for _, cell := range t.Cells {
			if cell.Status == StatusDiverged {
				s += ` $\dagger$\,$N$: diverged at step $N$.`
				break
			}
		}
	}
	return s
}

// check reports whether the table's parts fit together, so that a Table assembled or
// edited by hand fails to render instead of panicking.
func (t *Table) check() error {
	switch t.Kind {
	case TableCSensitivity:
		if len(t.Cells) != len(t.Rows)*len(t.Columns) {
			return fmt.Errorf("%d cells for %d rows × %d columns", len(t.Cells), len(t.Rows), len(t.Columns))
		}
	case TableHyperparameters:
		if len(t.Grids) != len(t.Rows) {
			return fmt.Errorf("%d grids for %d rows", len(t.Grids), len(t.Rows))
		}
		for i, g := range t.Grids {
			if optimizerRank(g.Optimizer) < 0 {
				return fmt.Errorf("grid %d: %w", i, &sfadamw.ConfigError{Field: "Optimizer", Value: strconv.Quote(g.Optimizer), Reason: "must be adamw, sfadamw or refined"})
			}
			if g.Best < -1 || g.Best >= len(t.Trials) {
				return fmt.Errorf("grid %d: best trial %d out of range [-1, %d)", i, g.Best, len(t.Trials))
			}
		}
	default:
		return &sfadamw.ConfigError{Field: "Kind", Value: strconv.Quote(string(t.Kind)), Reason: "unknown table kind"}
	}
	return nil
}

// WriteMarkdown writes the table as a GitHub pipe table, the title in bold above it and
// the caption note below. Best values are **bold**.
func (t *Table) WriteMarkdown(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("analysis: write table markdown: %w", err)
	}
	header, body := t.grid(markdownStyle)
	var b strings.Builder
	if t.Title != "" {
		b.WriteString("**" + escapeMarkdown(t.Title) + "**\n\n")
	}
	writePipeRow(&b, header)
	align := make([]string, len(header))
	for i := range align {
		align[i] = ":---:"
	}
	if t.Kind == TableHyperparameters {
		align[0] = "---:"
		for i := 1; i < len(align); i++ {
			align[i] = ":---"
		}
	}
	writePipeRow(&b, align)
	for _, row := range body {
		writePipeRow(&b, row)
	}
	b.WriteString("\n" + t.note(markdownStyle) + "\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("analysis: write table markdown: %w", err)
	}
	return nil
}

func writePipeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}

// WriteLaTeX writes the table as a booktabs table environment like the paper's source:
// tabular, \toprule, \midrule, \bottomrule, best values in \textbf{}, the title in bold
// leading the caption, and the label.
func (t *Table) WriteLaTeX(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("analysis: write table latex: %w", err)
	}
	header, body := t.grid(latexStyle)
	var b strings.Builder
	placement, spec := "[h]", "@{}c|"+strings.Repeat("c", len(t.Columns))+"@{}"
	if t.Kind == TableHyperparameters {
		placement, spec = "[!htp]", "@{}r|lll@{}"
	}
	b.WriteString(`\begin{table}` + placement + "\n")
	b.WriteString("    \\centering\n    \\small\n")
	b.WriteString(`    \begin{tabular}{` + spec + "}\n")
	b.WriteString("        \\toprule\n")
	b.WriteString("        " + strings.Join(header, " & ") + ` \\` + "\n")
	b.WriteString("        \\midrule\n")
	for _, row := range body {
		b.WriteString("        " + strings.Join(row, " & ") + ` \\` + "\n")
	}
	b.WriteString("        \\bottomrule\n")
	b.WriteString("    \\end{tabular}\n")
	b.WriteString("    \\vspace{5pt}\n")
	caption := t.note(latexStyle)
	if t.Title != "" {
		caption = `\textbf{` + escapeLaTeX(t.Title) + `} ` + caption
	}
	b.WriteString(`    \caption{` + caption + "}\n")
	if t.Label != "" {
		b.WriteString(`    \label{` + t.Label + "}\n")
	}
	b.WriteString(`\end{table}` + "\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("analysis: write table latex: %w", err)
	}
	return nil
}

// WriteCSV writes the table's data in long form (RFC 4180, one header line), numbers with
// full precision and empty fields where a value does not apply.
//
// C-sensitivity: one record per cell, row-major in display order, with columns
// beta1, c, value, status, step, reason, best (c is "vanilla" or the number; value only for
// status ok; step only for diverged with a known step; reason only for failed).
//
// Hyperparameters: one record per trial in canonical order, with columns optimizer,
// schedule, lr, beta1, beta2, c, value, status, step, reason, best (best: the trial whose
// values are bold in its row).
func (t *Table) WriteCSV(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("analysis: write table csv: %w", err)
	}
	cw := csv.NewWriter(w)
	outcome := func(value float64, s Status, step int, reason string) []string {
		v, st := "", ""
		if s == StatusOK {
			v = formatG(value)
		}
		if s == StatusDiverged && step > 0 {
			st = strconv.Itoa(step)
		}
		return []string{v, s.String(), st, reason}
	}
	switch t.Kind {
	case TableCSensitivity:
		cw.Write([]string{"beta1", "c", "value", "status", "step", "reason", "best"})
		for _, c := range t.Cells {
			rec := append([]string{formatG(c.Row), c.Col}, outcome(c.Value, c.Status, c.Step, c.Reason)...)
			cw.Write(append(rec, strconv.FormatBool(c.Best)))
		}
	case TableHyperparameters:
		cw.Write([]string{"optimizer", "schedule", "lr", "beta1", "beta2", "c", "value", "status", "step", "reason", "best"})
		best := t.bestTrials()
		for i, tr := range t.Trials {
			rec := []string{tr.Optimizer, tr.Schedule, formatG(tr.LR), formatG(tr.Beta1), formatG(tr.Beta2), formatG(tr.C)}
			rec = append(rec, outcome(tr.Value, tr.Status, tr.Step, tr.Reason)...)
			cw.Write(append(rec, strconv.FormatBool(best[i])))
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("analysis: write table csv: %w", err)
	}
	return nil
}

func (t *Table) bestTrials() []bool {
	best := make([]bool, len(t.Trials))
	for _, g := range t.Grids {
		if g.Best >= 0 {
			best[g.Best] = true
		}
	}
	return best
}

type tableJSON struct {
	Kind    TableKind   `json:"kind"`
	Title   string      `json:"title"`
	Label   string      `json:"label"`
	Rows    []string    `json:"rows"`
	Columns []string    `json:"columns"`
	Cells   []cellJSON  `json:"cells,omitempty"`
	Grids   []gridJSON  `json:"grids,omitempty"`
	Trials  []trialJSON `json:"trials,omitempty"`
}

type cellJSON struct {
	Row    float64  `json:"beta1"`
	Col    string   `json:"c"`
	Text   string   `json:"text"`
	Value  *float64 `json:"value,omitempty"`
	Status Status   `json:"status"`
	Step   int      `json:"step,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Best   bool     `json:"best"`
}

type gridJSON struct {
	Row       string       `json:"row"`
	Optimizer string       `json:"optimizer"`
	Schedule  string       `json:"schedule"`
	LR        []float64    `json:"lr"`
	Betas     [][2]float64 `json:"betas"`
	C         []float64    `json:"c"`
	Best      *int         `json:"best"`
}

type trialJSON struct {
	Optimizer string   `json:"optimizer"`
	Schedule  string   `json:"schedule"`
	LR        float64  `json:"lr"`
	Beta1     float64  `json:"beta1"`
	Beta2     float64  `json:"beta2"`
	C         float64  `json:"c"`
	Value     *float64 `json:"value,omitempty"`
	Status    Status   `json:"status"`
	Step      int      `json:"step,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Best      bool     `json:"best"`
}

// WriteJSON writes the table as indented JSON (two spaces): kind, title, label, rows and
// columns (the keys), then for a C-sensitivity table "cells" (row-major; beta1, c, text as
// in plain text, value only for status ok, status, step, reason, best), and for a
// hyperparameter table "grids" (per row: lr, betas, c lists and best, the index of the best
// trial or null) and "trials" (as in WriteCSV).
func (t *Table) WriteJSON(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("analysis: write table json: %w", err)
	}
	doc := tableJSON{Kind: t.Kind, Title: t.Title, Label: t.Label, Rows: t.Rows, Columns: t.Columns}
	for _, c := range t.Cells {
		j := cellJSON{Row: c.Row, Col: c.Col, Text: c.text(), Status: c.Status, Step: c.Step, Reason: c.Reason, Best: c.Best}
		if c.Status == StatusOK {
			j.Value = &c.Value
		}
		doc.Cells = append(doc.Cells, j)
	}
	for i, g := range t.Grids {
		j := gridJSON{Row: t.Rows[i], Optimizer: g.Optimizer, Schedule: g.Schedule, LR: nonNil(g.LR), Betas: nonNil(g.Betas), C: nonNil(g.C)}
		if g.Best >= 0 {
			j.Best = &g.Best
		}
		doc.Grids = append(doc.Grids, j)
	}
	best := t.bestTrials()
	for i, tr := range t.Trials {
		j := trialJSON{Optimizer: tr.Optimizer, Schedule: tr.Schedule, LR: tr.LR, Beta1: tr.Beta1, Beta2: tr.Beta2, C: tr.C,
			Status: tr.Status, Step: tr.Step, Reason: tr.Reason, Best: best[i]}
		if tr.Status == StatusOK {
			j.Value = &tr.Value
		}
		doc.Trials = append(doc.Trials, j)
	}
	doc.Rows, doc.Columns = nonNil(doc.Rows), nonNil(doc.Columns)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("analysis: write table json: %w", err)
	}
	return nil
}

func nonNil[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}

// Write writes the table in the named format: FormatMarkdown, FormatCSV, FormatLaTeX or
// FormatJSON.
func (t *Table) Write(w io.Writer, format string) error {
	switch format {
	case FormatMarkdown:
		return t.WriteMarkdown(w)
	case FormatCSV:
		return t.WriteCSV(w)
	case FormatLaTeX:
		return t.WriteLaTeX(w)
	case FormatJSON:
		return t.WriteJSON(w)
	}
	return fmt.Errorf("analysis: write table: %w",
		&sfadamw.ConfigError{Field: "format", Value: strconv.Quote(format), Reason: "must be markdown, csv, latex or json"})
}

// escapeMarkdown escapes the characters that would end a pipe-table cell or start emphasis
// or code.
func escapeMarkdown(s string) string {
	return markdownEscaper.Replace(s)
}

var markdownEscaper = strings.NewReplacer(`\`, `\\`, `|`, `\|`, `*`, `\*`, `_`, `\_`, "`", "\\`")

// escapeLaTeX escapes LaTeX's special characters in plain text. Other Unicode (β) is
// written as is, for engines with Unicode input (pdfLaTeX with inputenc, XeLaTeX, LuaLaTeX).
func escapeLaTeX(s string) string {
	return latexEscaper.Replace(s)
}

var latexEscaper = strings.NewReplacer(
	`\`, `\textbackslash{}`, `&`, `\&`, `%`, `\%`, `$`, `\$`, `#`, `\#`, `_`, `\_`,
	`{`, `\{`, `}`, `\}`, `~`, `\textasciitilde{}`, `^`, `\textasciicircum{}`,
)
