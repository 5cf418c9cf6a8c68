package report

// Build: a manifest's tables and plots, rebuilt from the results in the object store.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
)

// Formats are the table formats written, with their file extensions.
var Formats = []struct{ Format, Ext string }{{FormatMarkdown, "md"}, {FormatCSV, "csv"}, {FormatLaTeX, "tex"}, {FormatJSON, "json"}}

// MaxPlottedLines bounds the lines (configurations, each the mean of its seeds) drawn in a
// sweep's plots: a figure of more reads as noise, and the tables hold the results.
const MaxPlottedLines = 64

// Output is where a manifest's tables and plots go.
func Output(m *sweeps.Manifest) string { return keys.Output(m.Name, m.Output.Prefix) }

// Options adjust Build.
type Options struct {
	// Result reads a trial's result, nil if it has none yet; nil: read result.json from
	// the store each time. A worker passes its cache (results are written once).
	Result func(ctx context.Context, trialID string) (*training.Result, error)
	// Progress, if set, is told every so many trials read (a heartbeat).
	Progress func(trials int)
	// SweepID is the sweep whose search state (keys.SearchState) gives a search's trials
	// and which it stopped; a manifest that is no search needs none.
	SweepID string
}

// ErrInvalid matches (errors.Is) a Build error that the same manifest would meet again: a
// manifest that does not expand, a table it cannot build, an output another sweep holds.
var ErrInvalid = errors.New("invalid manifest for its tables")

type invalidError struct{ error }

func (e invalidError) Unwrap() error        { return e.error }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// Results are a manifest's trials and what is known of each when they are read.
type Results struct {
	Trials   []sweeps.Trial
	Outcomes map[string]Outcome // by trial ID
	Listed   []string           // the keys under trials/, sorted: which probe results exist
}

// Load reads the outcome of every trial of manifest m from store.
func Load(ctx context.Context, store blob.Store, m *sweeps.Manifest, opt Options) (*Results, error) {
	if opt.Result == nil {
		opt.Result = func(ctx context.Context, id string) (*training.Result, error) { return ReadResult(ctx, store, id) }
	}
	trials, stopped, err := searchTrials(ctx, store, m, opt.SweepID)
	if err != nil {
		return nil, err
	}
	// one listing tells which objects exist; only those are read
	listed, err := store.List(ctx, keys.Trials)
	if err != nil {
		return nil, err
	}
	exists := make(map[string]bool, len(listed))
	for _, k := range listed {
		exists[k] = true
	}
	outcomes := make(map[string]Outcome, len(trials))
	for i, t := range trials {
		var o Outcome
		if exists[keys.RunResult(keys.Trial(t.ID))] {
			if o.Result, err = opt.Result(ctx, t.ID); err != nil {
				return nil, err
			}
		}
		if i%256 == 0 && opt.Progress != nil {
			opt.Progress(i)
		}
		if o.Result == nil && exists[keys.TrialFailed(t.ID)] {
			o.Failed = readFailed(ctx, store, t.ID)
		}
		if o.Result == nil && o.Failed == "" {
			o.Stopped = stopped[t.ID]
		}
		if exists[keys.TrialAttempts(t.ID)] {
			o.Attempts = readAttempts(ctx, store, t.ID)
		}
		outcomes[t.ID] = o
	}
	return &Results{Trials: trials, Outcomes: outcomes, Listed: listed}, nil
}

// Build rebuilds every table and plot of manifest m from the results in store, writes
// them under Output(m) with the index of its trials, and returns the keys written.
func Build(ctx context.Context, store blob.Store, m *sweeps.Manifest, opt Options) ([]string, error) {
	res, err := Load(ctx, store, m, opt)
	if err != nil {
		return nil, err
	}
	trials, outcomes, listed := res.Trials, res.Outcomes, res.Listed
	tables, err := BuildTables(m, trials, outcomes)
	if err != nil {
		return nil, invalidError{err}
	}
	if err := claim(ctx, store, m, trials); err != nil {
		var taken *OutputTakenError
		if errors.As(err, &taken) {
			err = invalidError{err}
		}
		return nil, err
	}
	w := &writer{ctx: ctx, store: store, out: Output(m)}
	w.index(m.Name, opt.SweepID, res)
	for _, nt := range tables {
		if nt.Table.Kind == TableCSensitivity {
			if fig, err := HeatMap(nt.Table); err == nil {
				w.figure(nt.Name+"-heatmap", fig)
			}
		}
		for _, f := range Formats {
			w.put(keys.Table(w.out, nt.Name, f.Ext), func(b *bytes.Buffer) error { return nt.Table.Write(b, f.Format) })
		}
	}
	if err := writeSearch(ctx, store, w, m, opt.SweepID); err != nil {
		return w.keys, err
	}
	if w.err != nil {
		return w.keys, w.err
	}
	sp, err := sweepSeries(ctx, store, m, trials, outcomes, listed)
	if err != nil || sp.lines > MaxPlottedLines {
		return w.keys, err
	}
	seeds := len(m.Seeds)
	opts := CurvesOptions{Title: m.Name + ": validation loss", Seeds: seeds}
	if linesPerPanel(sp.curves) > 2 {
		opts.Iterates = []string{training.IterX, training.IterW} // the primary iterate only
	}
	if fig, err := CurvesPlot(sp.curves, opts); err == nil {
		w.figure("curves", fig)
	}
	if fig, err := DecayProbePlot(sp.probes, DecayProbeOptions{Title: m.Name + ": decay probe", Seeds: seeds}); err == nil {
		w.figure("decay-probe", fig)
	}
	if fig, err := DecayProbePlot(sp.lrDecays, DecayProbeOptions{Title: m.Name + ": LR-decay branch", After: "after the LR decay", Seeds: seeds}); err == nil {
		w.figure("lr-decay", fig)
	}
	if ip := m.Probes.Interpolate; ip != nil {
		title := fmt.Sprintf("%s: α·w(%d) + (1−α)·w(%d)", m.Name, ip.From, ip.To)
		opts := InterpolationOptions{Title: title, Decayed: fmt.Sprintf("into the LR decay to step %d", ip.To), Seeds: seeds}
		if fig, err := InterpolationPlot(sp.interpolations, opts); err == nil {
			w.figure("interpolation", fig)
		}
	}
	return w.keys, w.err
}

// ReadResult reads a trial's result from the store: nil if it has none yet, or a damaged
// one (which is recomputed).
func ReadResult(ctx context.Context, store blob.Store, id string) (*training.Result, error) {
	b, err := store.Get(ctx, keys.RunResult(keys.Trial(id)))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r training.Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, nil
	}
	return &r, nil
}

// curvesOf is what a trial's curve in the plots is: a completed run's evaluations, or those
// of a run a search stopped, up to its rung; nothing for any other.
func curvesOf(ctx context.Context, store blob.Store, id string, out Outcome) ([]training.CurvePoint, error) {
	switch {
	case out.Result != nil && out.Result.Status == status.Completed:
		return out.Result.Curves, nil
	case out.Result == nil && out.Stopped > 0:
		points, err := ReadCurves(ctx, store, id)
		return slices.DeleteFunc(points, func(p training.CurvePoint) bool { return p.Step > out.Stopped }), err
	}
	return nil, nil
}

// ReadCurves reads a trial's evaluations so far (curves.jsonl, written as they land): nil
// if it has none. A line that does not decode (an evaluation whose loss was not finite
// is written empty) is left out.
func ReadCurves(ctx context.Context, store blob.Store, id string) ([]training.CurvePoint, error) {
	b, err := store.Get(ctx, keys.RunCurves(keys.Trial(id)))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []training.CurvePoint
	for _, line := range bytes.Split(b, []byte("\n")) {
		var c training.CurvePoint
		if len(bytes.TrimSpace(line)) > 0 && json.Unmarshal(line, &c) == nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// readFailed reads why a trial failed after its retries ("failed" if that is unknown).
func readFailed(ctx context.Context, store blob.Store, id string) string {
	reason := "failed"
	if b, err := store.Get(ctx, keys.TrialFailed(id)); err == nil {
		reason = failedReason(b)
	}
	return reason
}

// Attempts is the record of a trial's training attempts (keys.TrialAttempts).
type Attempts struct {
	Attempts int `json:"attempts"`
}

// readAttempts reads how many attempts a trial's training took (0: unknown).
func readAttempts(ctx context.Context, store blob.Store, id string) int {
	var a Attempts
	if b, err := store.Get(ctx, keys.TrialAttempts(id)); err == nil {
		_ = json.Unmarshal(b, &a)
	}
	return a.Attempts
}

// failedReason is the reason a failed.json gives ("failed" if it gives none).
func failedReason(b []byte) string {
	var f map[string]string
	_ = json.Unmarshal(b, &f)
	return cmp.Or(f["reason"], "failed")
}

// ReadOutcome reads a trial's outcome from the store: its result, or why it failed after
// its retries; the zero Outcome if it has neither yet.
func ReadOutcome(ctx context.Context, store blob.Store, id string) (Outcome, error) {
	r, err := ReadResult(ctx, store, id)
	if err != nil || r != nil {
		return Outcome{Result: r, Attempts: readAttempts(ctx, store, id)}, err
	}
	b, err := store.Get(ctx, keys.TrialFailed(id))
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return Outcome{}, nil
	case err != nil:
		return Outcome{}, err
	}
	return Outcome{Failed: failedReason(b), Attempts: readAttempts(ctx, store, id)}, nil
}

// writer writes a build's objects, keeping the first error; later writes do nothing.
type writer struct {
	ctx   context.Context
	store blob.Store
	out   string
	keys  []string
	err   error
}

func (w *writer) put(key string, write func(*bytes.Buffer) error) {
	if w.err != nil {
		return
	}
	var buf bytes.Buffer
	if w.err = write(&buf); w.err != nil {
		return
	}
	if w.err = w.store.Put(w.ctx, key, buf.Bytes()); w.err == nil {
		w.keys = append(w.keys, key)
	}
}

func (w *writer) figure(name string, fig *figure.Figure) {
	for _, f := range []string{figure.FormatPNG, figure.FormatSVG} {
		w.put(keys.Plot(w.out, name, f), func(b *bytes.Buffer) error { return fig.Write(b, f) })
	}
}

// trialLine is the line a trial is drawn in: its canonical configuration less its seed.
func trialLine(t sweeps.Trial) Line {
	o := t.Config.Optimizer
	l := Line{Optimizer: o.Name, LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, C: o.C, BatchTokens: t.Config.BatchTokens}
	if o.Name != training.SFAdamW {
		l.Schedule = o.Schedule
	}
	return l
}

// series are what a sweep's plots draw.
type series struct {
	lines            int // distinct lines among the curves
	curves           []Curve
	probes, lrDecays []DecayProbeCurve
	interpolations   []InterpolationCurve
}

// sweepSeries gathers the validation curves of the completed trials, their decay probes,
// LR-decay branches and interpolations, as the manifest asks for them (listed: the keys
// under trials/, sorted), and the curves of the trials a search stopped, to their rung.
// Diverged and unfinished trials are left out (the plots say how many seeds each line
// averages), and so is a trial whose line and seed an earlier one has (grids that differ
// only in what a Line does not hold, such as weight decay: the tables tell them apart). It
// stops reading once there are more lines than are plotted.
func sweepSeries(ctx context.Context, store blob.Store, m *sweeps.Manifest, trials []sweeps.Trial, outcomes map[string]Outcome, listed []string) (series, error) {
	var sp series
	has := func(k string) bool { _, found := slices.BinarySearch(listed, k); return found }
	type drawn struct {
		line Line
		seed int
	}
	seen := map[drawn]bool{}
	lines := map[Line]bool{}
	for _, t := range trials {
		out := outcomes[t.ID]
		points, err := curvesOf(ctx, store, t.ID, out)
		if err != nil {
			return sp, err
		}
		if len(points) == 0 {
			continue
		}
		line, seed := trialLine(t), t.Points[0].Seed
		if seen[drawn{line, seed}] {
			continue
		}
		seen[drawn{line, seed}] = true
		if !lines[line] {
			lines[line] = true
			if sp.lines++; sp.lines > MaxPlottedLines {
				return series{lines: sp.lines}, nil
			}
		}
		c := Curve{Line: line, Seed: seed, Stopped: out.Stopped}
		for _, p := range points {
			c.Points = append(c.Points, CurvePoint{Step: p.Step, Tokens: p.Tokens, Val: p.Val})
		}
		sp.curves = append(sp.curves, c)
		if out.Result == nil {
			continue // a stopped trial has no probes
		}
		// keep adds a trial's probe curve if it has points
		keep := func(dst *[]DecayProbeCurve, pc DecayProbeCurve, err error) error {
			if err == nil && len(pc.Points) > 0 {
				pc.Line, pc.Seed = line, seed
				*dst = append(*dst, pc)
			}
			return err
		}
		tp := m.ProbesFor(t)
		if d := tp.Decay; d != nil {
			same := func(r *training.DecayProbeResult) bool {
				return r.Steps == d.Steps && r.PeakLR == d.PeakLR && training.SameIterate(r.Iterate, d.Iterate)
			}
			pc, err := probePoints(ctx, store, t, listed, keys.DecayProbe(t.ID, 0, d.Iterate), same, func(r *training.DecayProbeResult) (int, float64, training.Loss) {
				return r.FromStep, r.Before, r.After
			})
			if err := keep(&sp.probes, pc, err); err != nil {
				return sp, err
			}
		}
		if b := tp.LRDecay; b != nil {
			same := func(*training.LRDecayResult) bool { return true }
			pc, err := probePoints(ctx, store, t, listed, keys.LRDecay(t.ID, 0, b.Frac), same, func(r *training.LRDecayResult) (int, float64, training.Loss) {
				return r.FromStep, r.Before, r.After
			})
			if err := keep(&sp.lrDecays, pc, err); err != nil {
				return sp, err
			}
		}
		if ip := tp.Interpolate; ip != nil {
			for _, decayed := range []bool{false, true} {
				key := keys.Interpolation(t.ID, ip.From, ip.To, ip.Points, decayed)
				if !has(key) {
					continue
				}
				b, err := store.Get(ctx, key)
				if err != nil {
					return sp, err
				}
				var res training.InterpolationResult
				if json.Unmarshal(b, &res) != nil {
					continue
				}
				ic := InterpolationCurve{Line: line, Seed: seed, Decayed: decayed}
				for _, q := range res.Points {
					ic.Points = append(ic.Points, InterpolationPoint{Alpha: q.Alpha, Loss: float64(q.Loss)})
				}
				if len(ic.Points) > 0 {
					sp.interpolations = append(sp.interpolations, ic)
				}
			}
		}
	}
	return sp, nil
}

// probePoints reads a trial's probe results of one kind (the keys that share key0's name
// up to its step, the key of step 0) that same accepts, in the order of their steps.
func probePoints[R any](ctx context.Context, store blob.Store, t sweeps.Trial, listed []string, key0 string, same func(*R) bool,
	point func(*R) (step int, before float64, after training.Loss),
) (DecayProbeCurve, error) {
	var pc DecayProbeCurve
	prefix := strings.TrimSuffix(key0, fmt.Sprintf("%08d.json", 0))
	lo, _ := slices.BinarySearch(listed, prefix)
	for _, k := range listed[lo:] {
		if !strings.HasPrefix(k, prefix) {
			break
		}
		b, err := store.Get(ctx, k)
		if err != nil {
			return pc, err
		}
		var r R
		if json.Unmarshal(b, &r) != nil || !same(&r) {
			continue
		}
		step, before, after := point(&r)
		pc.Points = append(pc.Points, DecayProbePoint{Tokens: int64(step) * int64(t.Config.BatchTokens), Before: before, After: float64(after)})
	}
	return pc, nil
}

// writeSearch writes the table of a search and its sensitivity plots (search-<param>),
// when the manifest is a search and its state is in the store; nothing otherwise.
func writeSearch(ctx context.Context, store blob.Store, w *writer, m *sweeps.Manifest, sweepID string) error {
	if !m.Searched() || sweepID == "" {
		return nil
	}
	st, err := ReadSearch(ctx, store, sweepID)
	if err != nil || st == nil {
		return err
	}
	t := NewSearchTable(m, st)
	for _, f := range Formats {
		w.put(keys.Table(w.out, "search", f.Ext), func(b *bytes.Buffer) error { return t.Write(b, f.Format) })
	}
	for _, p := range searchPlotParams(t) {
		if fig, err := SearchPlot(t, p); err == nil {
			w.figure("search-"+p, fig)
		}
	}
	return nil
}
