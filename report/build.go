package report

// Build: a manifest's tables and plots, rebuilt from the results in the object store.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/figure"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
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
	Outcomes map[string]trial.Outcome // by trial ID
	Listed   trial.Listing            // which of the trials' objects exist
}

// Load reads the outcome of every trial of manifest m from store.
func Load(ctx context.Context, store blob.Store, m *sweeps.Manifest, opt Options) (*Results, error) {
	trials, stopped, err := searchTrials(ctx, store, m, opt.SweepID)
	if err != nil {
		return nil, err
	}
	// one listing tells which objects exist; only those are read
	listed, err := trial.List(ctx, store)
	if err != nil {
		return nil, err
	}
	outcomes := make(map[string]trial.Outcome, len(trials))
	for i, t := range trials {
		o, err := listed.Outcome(ctx, store, t.ID, opt.Result)
		if err != nil {
			return nil, err
		}
		if i%256 == 0 && opt.Progress != nil {
			opt.Progress(i)
		}
		if o.Result == nil && o.Failed == "" {
			o.Stopped = stopped[t.ID]
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
	w.put(keys.Runs(w.out), func(b *bytes.Buffer) error { return WriteRuns(b, trials, outcomes) })
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
	if pt := NewParamTable(m, trials, outcomes); pt != nil {
		for _, f := range Formats {
			w.put(keys.Table(w.out, "parameters", f.Ext), func(b *bytes.Buffer) error { return pt.Write(b, f.Format) })
		}
		metric := ParamPlotMetric(pt, m.MetricName())
		for _, param := range pt.Params {
			if fig, err := ParamPlot(pt, metric, param); err == nil {
				w.figure("parameters-"+param, fig)
			}
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
	if fig, err := DecayProbePlot(sp.lrDecays, DecayProbeOptions{Title: m.Name + ": LR-decay branch", After: "at the end of the LR decay", Seeds: seeds}); err == nil {
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

// curvesOf is what a trial's curve in the plots is: a completed run's evaluations, or those
// of a run a search stopped, up to its rung; nothing for any other.
func curvesOf(ctx context.Context, store blob.Store, id string, out trial.Outcome) ([]training.CurvePoint, error) {
	switch {
	case out.Result != nil && out.Result.Status == status.Completed:
		return out.Result.Curves, nil
	case out.Result == nil && out.Stopped > 0:
		points, err := trial.ReadCurves(ctx, store, id)
		return slices.DeleteFunc(points, func(p training.CurvePoint) bool { return p.Step > out.Stopped }), err
	}
	return nil, nil
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
	for _, f := range figure.Formats {
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
// LR-decay branches and interpolations, as the manifest asks for them (those listed), and the curves of the trials a search stopped, to their rung.
// Diverged and unfinished trials are left out (the plots say how many seeds each line
// averages), and so is a trial whose line and seed an earlier one has (grids that differ
// only in what a Line does not hold, such as weight decay: the tables tell them apart). It
// stops reading once there are more lines than are plotted.
func sweepSeries(ctx context.Context, store blob.Store, m *sweeps.Manifest, trials []sweeps.Trial, outcomes map[string]trial.Outcome, listed trial.Listing) (series, error) {
	var sp series
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
		if err := sp.addProbes(ctx, store, m.ProbesFor(t), t, listed, line, seed); err != nil {
			return sp, err
		}
	}
	return sp, nil
}

// addProbes adds trial t's probe results to the plots' series, drawn as line and seed: its
// decay probes and LR-decay branches from every checkpoint probed, and its
// interpolations, as tp asks for them.
func (sp *series) addProbes(ctx context.Context, store blob.Store, tp probe.Set, t sweeps.Trial, listed trial.Listing, line Line, seed int) error {
	// keep adds a probe's curve, a point a step, if it has points; end is the step its
	// after is drawn at, 0 for the checkpoint's
	keep := func(dst *[]DecayProbeCurve, n int, point func(i int) (step, end int, before float64, after training.Loss)) {
		if n == 0 {
			return
		}
		pc := DecayProbeCurve{Line: line, Seed: seed}
		tokens := int64(t.Config.BatchTokens)
		for i := range n {
			step, end, before, after := point(i)
			pc.Points = append(pc.Points, DecayProbePoint{Tokens: int64(step) * tokens, AfterTokens: int64(end) * tokens, Before: before, After: float64(after)})
		}
		*dst = append(*dst, pc)
	}
	if d := tp.Decay; d != nil {
		rs, err := listed.DecayProbes(ctx, store, t.ID, training.DecayProbeFrom(0, *d))
		if err != nil {
			return err
		}
		keep(&sp.probes, len(rs), func(i int) (int, int, float64, training.Loss) { return rs[i].FromStep, 0, rs[i].Before, rs[i].After })
	}
	if b := tp.LRDecay; b != nil {
		rs, err := listed.LRDecays(ctx, store, t.ID, b.Frac)
		if err != nil {
			return err
		}
		keep(&sp.lrDecays, len(rs), func(i int) (int, int, float64, training.Loss) {
			return rs[i].FromStep, rs[i].FromStep + rs[i].Steps, rs[i].Before, rs[i].After
		})
	}
	if ip := tp.Interpolate; ip != nil {
		for _, decayed := range []bool{false, true} {
			which := *ip
			which.Decayed = decayed
			res, err := listed.Interpolation(ctx, store, t.ID, which)
			if err != nil {
				return err
			}
			if res == nil {
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
	return nil
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
