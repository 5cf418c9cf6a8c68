package web

// The trial table: filtered, sorted and cut into pages on the server, so that a sweep of
// any size sends one page.

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/training"
)

// query is what a trial table shows: its sort, filters and page.
type query struct {
	Sort  string // a column of sortKeys; "": the sweep's own order
	Desc  bool
	State string // "": every state; "in flight", or one state
	Text  string // a substring of a row's text
	Page  int    // 1, 2, ...
	Size  int    // rows a page
}

// Page sizes.
const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// sortKeys are the columns a table sorts by, with their keys.
var sortKeys = map[string]func(r *row) float64{
	"lr":    func(r *row) float64 { return r.LR },
	"beta1": func(r *row) float64 { return r.Beta1 },
	"beta2": func(r *row) float64 { return r.Beta2 },
	"c":     func(r *row) float64 { return r.C },
	"batch": func(r *row) float64 { return float64(r.BatchTokens) },
	"seed":  func(r *row) float64 { return float64(r.Seed) },
	"loss":  func(r *row) float64 { return r.metric() },
	"step":  func(r *row) float64 { return float64(r.progressStep()) },
}

// stateFilters are the choices of the state filter.
var stateFilters = []string{"in flight", statePend, sweepclient.TrialTraining, sweepclient.TrialRetrying, sweepclient.TrialWaiting,
	string(status.Completed), string(status.Diverged), string(status.Stopped), string(status.Failed), stateNotRun}

// parseQuery reads a table's query from a URL's; anything it does not know is ignored.
func parseQuery(v url.Values) query {
	q := query{Sort: v.Get("sort"), Desc: v.Get("desc") == "1", State: v.Get("state"), Text: strings.TrimSpace(v.Get("q")), Page: 1, Size: defaultPageSize}
	if _, ok := sortKeys[q.Sort]; !ok && q.Sort != "state" && !namedSort(q.Sort) {
		q.Sort = ""
	}
	if !slices.Contains(stateFilters, q.State) {
		q.State = ""
	}
	if n, err := strconv.Atoi(v.Get("page")); err == nil && n > 1 {
		q.Page = n
	}
	if n, err := strconv.Atoi(v.Get("n")); err == nil && n >= 1 {
		q.Size = min(n, maxPageSize)
	}
	if len(q.Text) > 100 {
		q.Text = q.Text[:100]
	}
	return q
}

// values is the query as URL values, with edit applied.
func (q query) values(edit func(*query)) url.Values {
	if edit != nil {
		edit(&q)
	}
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("sort", q.Sort)
	if q.Desc {
		v.Set("desc", "1")
	}
	set("state", q.State)
	set("q", q.Text)
	if q.Page > 1 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	if q.Size != defaultPageSize {
		v.Set("n", strconv.Itoa(q.Size))
	}
	return v
}

// inFlight reports whether a state is one of a trial in flight.
func inFlight(state string) bool {
	switch state {
	case sweepclient.TrialStarting, sweepclient.TrialWaiting, sweepclient.TrialQueued, sweepclient.TrialTraining,
		sweepclient.TrialAdmitting, sweepclient.TrialProbing, sweepclient.TrialRetrying:
		return true
	}
	return false
}

// matches reports whether a row passes the query's filters.
func (q query) matches(r *row) bool {
	switch {
	case q.State == "in flight" && !inFlight(r.State):
		return false
	case q.State != "" && q.State != "in flight" && q.State != r.State:
		return false
	case q.Text != "" && !r.find(q.Text):
		return false
	}
	return true
}

// find reports whether a row matches every term of a Find box's text. Terms are split by
// commas and spaces. A term key=value compares one of the row's values: lr, beta1 (β1),
// beta2 (β2), c (a number or vanilla), batch_tokens (batch), seed, optimizer, schedule,
// state or id, or a program's parameter by its name; numbers compare by value, so
// lr=0.002 finds 2e-3. Any other term is a substring of the row's text (its ID, values,
// state and error), in any case.
func (r *row) find(text string) bool {
	lower := strings.ToLower(r.text())
	for _, term := range strings.FieldsFunc(text, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' }) {
		key, want, ok := strings.Cut(term, "=")
		if !ok || key == "" {
			if !strings.Contains(lower, strings.ToLower(term)) {
				return false
			}
			continue
		}
		got, known := r.field(strings.ToLower(key))
		if !known {
			if !strings.Contains(lower, strings.ToLower(term)) {
				return false
			}
			continue
		}
		if !sameValue(got, want) {
			return false
		}
	}
	return true
}

// field is a row's value of a Find key, and whether the row has that key: the engine's
// optimizer fields where it has an optimizer, else (and for any other key) a program's
// parameter of that name.
func (r *row) field(key string) (any, bool) {
	switch key {
	case "id", "trial":
		return r.ID, true
	case "state":
		return r.State, true
	case "seed":
		return float64(r.Seed), true
	}
	if r.Optimizer != "" {
		switch key {
		case "optimizer":
			return r.Optimizer, true
		case "schedule":
			return r.Schedule, true
		case "lr":
			return r.LR, true
		case "beta1", "β1":
			return r.Beta1, true
		case "beta2", "β2":
			return r.Beta2, true
		case "c":
			if r.Optimizer == training.SFAdamW && r.C == 0 {
				return "vanilla", true
			}
			return r.C, true
		case "batch", "batch_tokens":
			return float64(r.BatchTokens), true
		}
	}
	v, ok := r.Params[key]
	return v, ok
}

// sameValue reports whether a row's value is the one a Find term names: as numbers where
// both are, else as text, in any case.
func sameValue(got any, want string) bool {
	if g, ok := number(got); ok {
		w, err := strconv.ParseFloat(want, 64)
		return err == nil && (g == w || math.Abs(g-w) <= 1e-12*math.Max(math.Abs(g), math.Abs(w)))
	}
	return strings.EqualFold(paramText(got), want)
}

// stateRank orders states: in flight first, then failures, then results, then the rest.
func stateRank(s string) int {
	switch {
	case inFlight(s):
		return 0
	case s == string(status.Failed):
		return 1
	case s == string(status.Completed):
		return 2
	case s == string(status.Stopped):
		return 3
	case s == string(status.Diverged):
		return 4
	}
	return 5
}

// selectRows filters and sorts rows and returns the query's page of them, the number that
// passed the filters, and the page count.
func selectRows(rows []row, q query) (page []row, matched, pages int) {
	sel := make([]*row, 0, len(rows))
	for i := range rows {
		if q.matches(&rows[i]) {
			sel = append(sel, &rows[i])
		}
	}
	if q.Sort != "" {
		key := sortKeys[q.Sort]
		slices.SortStableFunc(sel, func(a, b *row) int {
			var c int
			switch {
			case q.Sort == "state":
				c = cmp.Compare(stateRank(a.State), stateRank(b.State))
			case namedSort(q.Sort):
				va, vb := namedKey(a, q.Sort), namedKey(b, q.Sort)
				// a row without the column goes last, whichever the direction
				if va == nil || vb == nil {
					return cmp.Compare(b2i(va == nil), b2i(vb == nil))
				}
				c = compareValues(va, vb)
			default:
				ka, kb := key(a), key(b)
				// a row with no value (NaN) goes last, whichever the direction
				if na, nb := math.IsNaN(ka), math.IsNaN(kb); na || nb {
					return cmp.Compare(b2i(na), b2i(nb))
				}
				c = cmp.Compare(ka, kb)
			}
			if q.Desc {
				c = -c
			}
			return c
		})
	}
	matched = len(sel)
	pages = max(1, (matched+q.Size-1)/q.Size)
	lo := min((q.Page-1)*q.Size, matched)
	for _, r := range sel[lo:min(lo+q.Size, matched)] {
		page = append(page, *r)
	}
	return page, matched, pages
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// namedSort reports whether a sort is by a trainer parameter ("p:lr") or a named metric
// ("m:val_ppl").
func namedSort(s string) bool {
	name, ok := strings.CutPrefix(s, "p:")
	if !ok {
		name, ok = strings.CutPrefix(s, "m:")
	}
	return ok && name != "" && len(name) <= 100
}

// namedKey is a row's value of a named sort (nil: it has none).
func namedKey(r *row, sort string) any {
	if name, ok := strings.CutPrefix(sort, "p:"); ok {
		return r.Params[name]
	}
	v, ok := r.Metrics[strings.TrimPrefix(sort, "m:")]
	if !ok || r.Status != status.Completed || math.IsNaN(float64(v)) {
		return nil
	}
	return float64(v)
}

// compareValues orders two parameter values: numbers by value, before anything else,
// which goes by its text.
func compareValues(a, b any) int {
	fa, aNum := number(a)
	fb, bNum := number(b)
	switch {
	case aNum && bNum:
		return cmp.Compare(fa, fb)
	case aNum != bNum:
		return cmp.Compare(b2i(!aNum), b2i(!bNum))
	}
	return cmp.Compare(paramText(a), paramText(b))
}

// number is a parameter's value as a number, if it is one.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	}
	return 0, false
}

// metric is the row's final validation loss at its reported iterate (NaN: none).
func (r *row) metric() float64 {
	if r.Status != status.Completed {
		return math.NaN()
	}
	if v, ok := r.Val[r.Primary]; ok {
		return float64(v)
	}
	return math.NaN()
}

// progressStep is how far a trial got: its step in flight, or where it ended.
func (r *row) progressStep() int {
	switch {
	case r.State == string(status.Completed):
		return r.Steps
	case r.Status == status.Diverged || r.Status == status.Stopped:
		return r.Step
	}
	return r.At
}

// text is what the text filter searches: the ID, the optimizer and the values of a row.
func (r *row) text() string {
	if r.Trainer != "" && r.Optimizer == "" {
		return fmt.Sprintf("%s %s seed=%d %s %s", r.ID, paramLabel(r), r.Seed, r.State, r.Error)
	}
	if r.Trainer != "" {
		return paramLabel(r) + " " + r.engineText()
	}
	return r.engineText()
}

func (r *row) engineText() string {
	return fmt.Sprintf("%s %s %s lr=%g β1=%g β2=%g c=%s batch=%d seed=%d %s %s", r.ID, r.Optimizer, r.Schedule, r.LR, r.Beta1, r.Beta2,
		cLabel(r.Optimizer, r.C), r.BatchTokens, r.Seed, r.State, r.Error)
}

// cLabel is how the page writes C: vanilla, a number, or nothing for AdamW.
func cLabel(optimizer string, c float64) string {
	switch {
	case optimizer != training.SFAdamW:
		return ""
	case c == 0:
		return "vanilla"
	}
	return strconv.FormatFloat(c, 'g', -1, 64)
}
