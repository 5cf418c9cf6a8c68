package web

// The pages: the list of sweeps, and a sweep's page; each has a live fragment that the
// page's script polls while the sweep runs.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
)

// iterateOrder is the order of the loss columns: SF-AdamW's iterates, then AdamW's.
var iterateOrder = []string{training.IterX, training.IterY, training.IterEWAX, training.IterEWAY, training.IterW, training.IterEWAW}

// iterateNames are the iterates as the page writes them.
var iterateNames = map[string]string{training.IterX: "x", training.IterY: "y", training.IterEWAX: "EWA(x)", training.IterEWAY: "EWA(y)",
	training.IterW: "w", training.IterEWAW: "EWA(w)"}

// summary is a sweep's line in the list and the head of its page.
type summary struct {
	ID, Name string
	Phase    string
	Live     bool
	Started  time.Time
	ETA      time.Duration // −1: unknown
	Total    int
	Done     int
	Counts   map[string]int // by state
	Failures int
	Note     string
}

// Percent is the share of trials with an outcome.
func (s summary) Percent() int {
	if s.Total == 0 {
		return 0
	}
	return 100 * s.Done / s.Total
}

// sweepView is a sweep's page.
type sweepView struct {
	summary
	Poll     int // milliseconds between refreshes; 0: none
	Query    query
	Rows     []rowView
	Matched  int
	Pages    int
	Iterates []string
	// Engine is whether a trial has the engine's optimizer fields (lr, β, C, batch);
	// Params the trainer parameters of program trials and Metrics their named metrics,
	// each a column (a program trial without an optimizer grid has only these).
	Engine   bool
	Params   []string
	Metrics  []string
	Failed   []rowView
	Tables   []table
	Plots    []plot
	Manifest string
	States   []string
	Sorts    []string
	Base     string // the page's path
	GPUs     []sweepclient.GPUUse
}

// rowView is a row of the trial table.
type rowView struct {
	*row
	Label   string
	Losses  []lossView
	Params  []string // its values of sweepView.Params ("": none)
	Metrics []string // its values of sweepView.Metrics
	Chart   bool     // drawn in the chart when the page opens
}

type lossView struct {
	Iterate string
	Text    string
}

func (s *Server) summarize(d *sweepData) summary {
	sm := summary{ID: d.ID, Name: d.Manifest.Name, Phase: d.Phase, Live: d.Live, Started: d.Started, ETA: -1, Total: len(d.Rows),
		Counts: map[string]int{}, Note: d.Note}
	var secs float64
	var timed, flying int
	for i := range d.Rows {
		r := &d.Rows[i]
		sm.Counts[r.State]++
		switch {
		case r.Status != status.Missing && r.Status != "":
			sm.Done++
			if r.Status == status.Completed && r.Seconds > 0 {
				secs += r.Seconds
				timed++
			}
		case r.State == sweepclient.TrialTraining:
			flying++
		}
		if r.Status == status.Failed || r.State == sweepclient.TrialRetrying {
			sm.Failures++
		}
	}
	// a search keeps adding trials: its total is the workflow's
	if d.Progress.Total > sm.Total {
		sm.Total = d.Progress.Total
	}
	if d.Live && timed > 0 {
		left := float64(sm.Total - sm.Done)
		sm.ETA = time.Duration(secs / float64(timed) * left / float64(max(flying, 1)) * float64(time.Second)).Round(time.Second)
	}
	return sm
}

// The parts of a sweep's page.
const (
	partTrials  = 1 << iota // progress, failures, the trial table
	partResults             // tables and plots
	partAll     = partTrials | partResults
)

func (s *Server) view(ctx context.Context, d *sweepData, q query, base string, parts int) (*sweepView, error) {
	v := &sweepView{summary: s.summarize(d), Query: q, Manifest: d.Source, States: stateFilters, Base: base, GPUs: d.GPUs}
	v.Sorts = []string{"state", "lr", "beta1", "beta2", "c", "batch", "seed", "step", "loss"}
	v.Engine, v.Params, v.Metrics = columns(d.Rows)
	if d.Live {
		v.Poll = int(s.opt.Poll / time.Millisecond)
	}
	var err error
	if parts&partResults != 0 {
		if v.Tables, v.Plots, err = s.tablesAndPlots(ctx, d); err != nil {
			return nil, err
		}
	}
	if parts&partTrials == 0 {
		return v, nil
	}
	page, matched, pages := selectRows(d.Rows, q)
	v.Matched, v.Pages = matched, pages
	iters := map[string]bool{}
	for _, r := range d.Rows {
		for _, it := range training.Iterates(r.Optimizer) {
			iters[it] = true
		}
	}
	for _, it := range iterateOrder {
		if iters[it] {
			v.Iterates = append(v.Iterates, it)
		}
	}
	charted := 0
	for i := range page {
		rv, err := s.rowView(ctx, &page[i], v.Iterates)
		if err != nil {
			return nil, err
		}
		for _, p := range v.Params {
			rv.Params = append(rv.Params, paramText(rv.row.Params[p]))
		}
		for _, m := range v.Metrics {
			rv.Metrics = append(rv.Metrics, metricText(rv.row, m))
		}
		if charted < 4 && (rv.Status == status.Completed || inFlight(rv.State)) {
			rv.Chart = true
			charted++
		}
		v.Rows = append(v.Rows, rv)
	}
	for i := range d.Rows {
		r := &d.Rows[i]
		if (r.Status == status.Failed || r.Error != "") && len(v.Failed) < 50 {
			v.Failed = append(v.Failed, rowView{row: r, Label: rowLabel(r)})
		}
	}
	return v, nil
}

// rowView is a row with its losses: the final ones, or for a trial in flight those of
// its last evaluation so far.
func (s *Server) rowView(ctx context.Context, r *row, iterates []string) (rowView, error) {
	rv := rowView{row: r, Label: rowLabel(r)}
	vals := map[string]*float64{}
	switch {
	case r.Val != nil:
		for k, l := range r.Val {
			f := float64(l)
			vals[k] = &f
		}
	case inFlight(r.State) || r.Status == status.Stopped || r.Status == status.Failed:
		pts, err := readCurve(ctx, s.opt.Store, r.ID)
		if err != nil {
			return rv, err
		}
		vals = latest(pts)
		// heartbeats reach Temporal at most every minute: an evaluation may be newer
		if n := len(pts); n > 0 && r.State == sweepclient.TrialTraining && pts[n-1].Step > r.At {
			r.At = pts[n-1].Step
		}
	}
	for _, it := range iterates {
		lv := lossView{Iterate: it}
		if p, ok := vals[it]; ok {
			lv.Text = "—"
			if p != nil && !math.IsNaN(*p) {
				lv.Text = strconv.FormatFloat(*p, 'f', 4, 64)
			}
		}
		rv.Losses = append(rv.Losses, lv)
	}
	return rv, nil
}

// columns are the columns the rows fill: whether any has the engine's optimizer, and
// the trainer parameters and named metrics of any, in order of name.
func columns(rows []row) (engine bool, params, metrics []string) {
	ps, ms := map[string]bool{}, map[string]bool{}
	for i := range rows {
		r := &rows[i]
		engine = engine || r.Optimizer != ""
		for k := range r.Params {
			ps[k] = true
		}
		for k := range r.Metrics {
			ms[k] = true
		}
	}
	return engine, slices.Sorted(maps.Keys(ps)), slices.Sorted(maps.Keys(ms))
}

// paramText is how a cell writes a trainer parameter's value.
func paramText(v any) string {
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'g', 6, 64)
	}
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// metricText is a named metric of a row's last metrics line: "" if it has none, "—" if
// it was not finite.
func metricText(r *row, name string) string {
	v, ok := r.Metrics[name]
	switch {
	case !ok:
		return ""
	case math.IsNaN(float64(v)) || math.IsInf(float64(v), 0):
		return "—"
	}
	return strconv.FormatFloat(float64(v), 'g', 6, 64)
}

// paramLabel is a program trial's trainer and parameters in a few words.
func paramLabel(r *row) string {
	var b strings.Builder
	b.WriteString(r.Trainer)
	for _, k := range slices.Sorted(maps.Keys(r.Params)) {
		fmt.Fprintf(&b, " %s=%s", k, paramText(r.Params[k]))
	}
	return b.String()
}

// rowLabel is a trial's configuration in a few words.
func rowLabel(r *row) string {
	if r.Trainer != "" && r.Optimizer == "" {
		return paramLabel(r) + fmt.Sprintf(" seed %d", r.Seed)
	}
	var b strings.Builder
	if r.Trainer != "" {
		b.WriteString(paramLabel(r) + " ")
	}
	switch r.Optimizer {
	case training.SFAdamW:
		if r.C == 0 {
			b.WriteString("SF-AdamW")
		} else {
			b.WriteString("Refined SF-AdamW C=" + cLabel(r.Optimizer, r.C))
		}
	case training.AdamW:
		b.WriteString("AdamW")
		if r.Schedule != "" {
			b.WriteString(" (" + r.Schedule + ")")
		}
	default:
		b.WriteString(r.Optimizer)
	}
	fmt.Fprintf(&b, " lr %g β (%g, %g) seed %d", r.LR, r.Beta1, r.Beta2, r.Seed)
	return b.String()
}

// manifestOnly reads a sweep's manifest and output, nothing else.
func (s *Server) manifestOnly(ctx context.Context, id string) (*sweepData, error) {
	if !sweepIDPattern.MatchString(id) {
		return nil, errNoSweep
	}
	src, err := s.opt.Store.Get(ctx, keys.Manifest(id))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, errNoSweep
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	m, ok := s.manifests[id]
	s.mu.Unlock()
	if !ok || keys.SweepID(m.Name, src) != id {
		if m, err = sweeps.Parse(src); err != nil {
			return nil, fmt.Errorf("sweep %s: manifest: %w", id, err)
		}
		s.mu.Lock()
		if len(s.manifests) >= maxCached {
			clear(s.manifests)
		}
		s.manifests[id] = m
		s.mu.Unlock()
	}
	return &sweepData{ID: id, Manifest: m, Source: string(src), Output: report.Output(m)}, nil
}

// sweepsListedEvery is how long a listing of the store's sweeps serves: listing
// sweeps/ reads every plan page and search decision too, and a live list polls.
const sweepsListedEvery = 10 * time.Second

// sweepIDs lists the sweeps in the store.
func (s *Server) sweepIDs(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	ids, at := s.listed, s.listedAt
	s.mu.Unlock()
	if ids != nil && time.Since(at) < sweepsListedEvery {
		return ids, nil
	}
	listed, err := s.opt.Store.List(ctx, "sweeps/")
	if err != nil {
		return nil, err
	}
	ids = []string{}
	for _, k := range listed {
		rest, ok := strings.CutPrefix(k, "sweeps/")
		if !ok {
			continue
		}
		if id, ok := strings.CutSuffix(rest, "/manifest.yaml"); ok && sweepIDPattern.MatchString(id) {
			ids = append(ids, id)
		}
	}
	s.mu.Lock()
	s.listed, s.listedAt = ids, time.Now()
	s.mu.Unlock()
	return ids, nil
}

// listView is the list of sweeps.
type listView struct {
	Sweeps []summary
	Poll   int
}

func (s *Server) list(ctx context.Context) (*listView, error) {
	ids, err := s.sweepIDs(ctx)
	if err != nil {
		return nil, err
	}
	v := &listView{}
	for _, id := range ids {
		d, err := s.load(ctx, id)
		if err != nil {
			v.Sweeps = append(v.Sweeps, summary{ID: id, Name: id, Phase: "unreadable", ETA: -1, Note: err.Error()})
			continue
		}
		sm := s.summarize(d)
		if sm.Live {
			v.Poll = int(s.opt.Poll / time.Millisecond)
		}
		v.Sweeps = append(v.Sweeps, sm)
	}
	// running sweeps first, then the newest
	slices.SortStableFunc(v.Sweeps, func(a, b summary) int {
		if a.Live != b.Live {
			return b2i(b.Live) - b2i(a.Live)
		}
		return b.Started.Compare(a.Started)
	})
	return v, nil
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	v, err := s.list(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, "list.html", v)
}

func (s *Server) handleListLive(w http.ResponseWriter, r *http.Request) {
	v, err := s.list(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("X-Live", strconv.FormatBool(v.Poll > 0))
	s.render(w, "list-live", v)
}

func (s *Server) sweepPage(w http.ResponseWriter, r *http.Request, tmpl string, parts int) {
	id := r.PathValue("id")
	d, err := s.load(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	v, err := s.view(r.Context(), d, parseQuery(r.URL.Query()), "/sweeps/"+id, parts)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("X-Live", strconv.FormatBool(d.Live))
	s.render(w, tmpl, v)
}

func (s *Server) handleSweep(w http.ResponseWriter, r *http.Request) {
	s.sweepPage(w, r, "sweep.html", partAll)
}
func (s *Server) handleSweepLive(w http.ResponseWriter, r *http.Request) {
	s.sweepPage(w, r, "sweep-live", partTrials)
}
func (s *Server) handleResults(w http.ResponseWriter, r *http.Request) {
	s.sweepPage(w, r, "sweep-results", partResults)
}

// render executes a template into a buffer first, so that an error is a clean 500.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.opt.Log.Error("sweep page", "template", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(b.String()))
}

// fail answers an error: 404 for a sweep or object that is not there, else 500 with the
// error (which names no credential: the store's and Temporal's errors name keys and
// workflows).
func (s *Server) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errNoSweep):
		http.Error(w, "no such sweep", http.StatusNotFound)
	case errors.Is(err, errNoTrial):
		http.Error(w, "no such trial in this sweep", http.StatusNotFound)
	case errors.Is(err, blob.ErrNotFound):
		http.Error(w, "not found", http.StatusNotFound)
	default:
		s.opt.Log.Error("sweep page", "err", err)
		http.Error(w, "error: "+err.Error(), http.StatusInternalServerError)
	}
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"iterName": func(it string) string { return iterateNames[it] },
	"clabel":   cLabel,
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"eta": func(d time.Duration) string {
		if d < 0 {
			return "—"
		}
		return d.String()
	},
	"add":  func(a, b int) int { return a + b },
	"gib":  backend.GiB,
	"join": func(ids []string) string { return strings.Join(ids, ", ") },
	// short is the start of a long error, for a table cell (the failures list has it whole)
	"short": func(s string) string {
		if r := []rune(s); len(r) > 100 {
			return string(r[:100]) + "…"
		}
		return s
	},
	"url": func(base string, q query, edit string, arg string) template.URL {
		v := q.values(func(q *query) {
			switch edit {
			case "sort":
				if q.Sort == arg {
					q.Desc = !q.Desc
				} else {
					q.Sort, q.Desc = arg, false
				}
				q.Page = 1
			case "page":
				q.Page, _ = strconv.Atoi(arg)
			}
		})
		if len(v) == 0 {
			return template.URL(base)
		}
		return template.URL(base + "?" + v.Encode())
	},
	"live": func(base string, q query) string {
		v := q.values(nil)
		if len(v) == 0 {
			return base + "/live"
		}
		return base + "/live?" + v.Encode()
	},
	"stateClass": func(s string) string { return "st-" + strings.ReplaceAll(s, " ", "-") },
	"count":      func(m map[string]int, k string) int { return m[k] },
	"pct":        func(s summary) int { return s.Percent() },
	"g":          func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) },
	"optName": func(rv rowView) string {
		r := rv.row
		switch r.Optimizer {
		case training.SFAdamW:
			return "SF-AdamW"
		case training.AdamW:
			if r.Schedule != "" {
				return "AdamW (" + r.Schedule + ")"
			}
			return "AdamW"
		}
		return r.Optimizer
	},
	"steps": stepsText,
}

// stepsText is how far a trial got, or why it waits, for its progress cell.
func stepsText(rv rowView) string {
	r := rv.row
	switch {
	case r.State == sweepclient.TrialTraining && r.At > 0:
		return fmt.Sprintf("step %d/%d", r.At, r.Steps)
	case r.State == sweepclient.TrialAdmitting:
		return r.Waiting
	case r.Status == status.Stopped:
		return fmt.Sprintf("stopped (step %d)", r.Step)
	case r.Status == status.Diverged:
		return fmt.Sprintf("diverged (step %d)", r.Step)
	}
	return ""
}
