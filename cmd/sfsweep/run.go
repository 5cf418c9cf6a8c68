package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/search"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/web"
	"github.com/sfsweep/sfsweep/workflows"
)

func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", stderr)
	dir := fs.String("dir", ".sfsweep", "state directory: the Temporal database, the S3 gateway's objects and credentials, the corpus cache")
	out := fs.String("out", "out", "directory the tables are copied to")
	slots := fs.Int("slots", 1, "trials trained at once by the local worker (each uses every core)")
	var tf trialFlags
	tf.register(fs, workflows.DefaultLocalWindow)
	verbose := fs.Bool("v", false, "log the embedded servers' warnings and the workers' events")
	ui := fs.Bool("ui", true, "serve Temporal's Web UI on 127.0.0.1 while the sweep runs")
	var pf pageFlags
	pf.register(fs, "127.0.0.1:0")
	record := fs.String("record-histories", "", "after the sweep, write the event histories of its workflows as JSON into this directory (for replay tests)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sfsweep run [flags] MANIFEST.yaml")
		fs.PrintDefaults()
	}
	file, err := parseWithArg(fs, args, "a sweep manifest: sfsweep run MANIFEST.yaml")
	if err != nil {
		return err
	}
	if *slots < 1 {
		return &usageError{msg: fmt.Sprintf("-slots = %d: must be ≥ 1", *slots)}
	}
	if err := tf.check(); err != nil {
		return err
	}
	if err := pf.check(); err != nil {
		return err
	}
	src, m, trials, err := loadManifest(ctx, file)
	if err != nil {
		return err
	}
	warnRungs(stderr, file, m)
	if err := m.CheckBackend(src); err != nil {
		return fmt.Errorf("%s: %w (sfsweep run trains in this process; a sweep given to sfsweep submit waits for workers that have it)", file, err)
	}
	// the manifest's trainer resolves its paths against the manifest's directory, taken
	// now: the S3 gateway changes the working directory while it runs
	trainers, err := manifestTrainers(m, file)
	if err != nil {
		return err
	}
	if m.Searched() {
		p, err := m.Plan()
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		fmt.Fprintf(stderr, "search %s (%s): at most %d trials, %d steps, %.3g tokens, %.3g FLOPs\n", m.Name, p.Method, p.Worst.Trials, p.Worst.Steps, float64(p.Worst.Tokens), p.Worst.FLOPs)
	} else {
		cost := sweeps.TotalCost(trials)
		fmt.Fprintf(stderr, "sweep %s: %d trials, %d steps, %.3g tokens, %.3g FLOPs\n", m.Name, cost.Trials, cost.Steps, float64(cost.Tokens), cost.FLOPs)
	}

	// every path absolute: the S3 gateway changes the working directory while it runs
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	absOut, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	logLevel := slog.LevelError + 4
	if *verbose {
		logLevel = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel}))

	st, err := startStack(ctx, absDir, *ui, logger)
	if err != nil {
		return err
	}
	defer st.stop()
	fmt.Fprintf(stderr, "temporal %s (namespace %s) · s3 %s (bucket %s, objects under %s)\n",
		st.server.HostPort(), devserver.DefaultNamespace, st.gw.Endpoint(), st.gw.Bucket(), st.gw.Root())
	if *ui {
		fmt.Fprintf(stderr, "Temporal Web UI: http://%s\n", st.server.UIAddr())
	}

	sweepID := keys.SweepID(m.Name, src)
	manifestKey := keys.Manifest(sweepID)
	if err := tf.claimOutput(ctx, st.store, m, trials, file, stderr); err != nil {
		return err
	}

	bars := newProgressBars(stderr, isTerminal(stderr))
	page := web.Options{Store: st.store, Temporal: st.client, Namespace: devserver.DefaultNamespace, Steps: bars.stepOf, Log: logger}
	if *ui {
		page.UI = "http://" + st.server.UIAddr()
	}
	stopPage, err := pf.start(ctx, page, stderr)
	if err != nil {
		return err
	}
	defer stopPage()
	// a program trainer's trials on a GPU need no engine there: any build runs them
	devices := backend.Devices()
	programGPU := trainers != nil && manifestDevice(m) == backend.DeviceCUDA && !slices.Contains(devices, backend.DeviceCUDA)
	if programGPU {
		devices = append(devices, backend.DeviceCUDA)
	}
	gpu, visible, err := runGPU(ctx, devices, stderr)
	if err != nil {
		return err
	}
	if programGPU && gpu == nil {
		return fmt.Errorf("%s: the trials of trainer %s train on a GPU, and this machine has none that nvidia-smi lists (see above)", file, m.Trainer.Name)
	}
	// a trial of several GPUs takes the first of the machine's whole, and the first is
	// the one the trials of one GPU train on
	var node []activities.NodeGPU
	if n := nodeGPUs(m); n > 1 {
		if node, err = runNode(ctx, n); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		gpu, visible = node[0].Ledger, node[0].UUID
	}
	acts := &activities.Activities{Store: st.store, Client: st.client, CacheDir: filepath.Join(absDir, "data"), Log: logger,
		Progress: bars.step, AttemptFailed: bars.attemptFailed, Probe: bars.probe, Waiting: bars.waiting, Trainers: trainers, GPU: gpu, GPUDevices: visible, Node: node}
	// A device fault has lost this process's device context, which no attempt in it can
	// use again: run stops taking tasks at once and ends a moment later, once the attempt's
	// failure is recorded; main then restarts it in a fresh process (restartError), whose
	// trials resume from their checkpoints.
	ctx, faulted := context.WithCancelCause(ctx)
	defer faulted(nil)
	var faults faultStop
	acts.OnDeviceFault = faults.handler(func(err error) { faulted(&deviceFaultError{err}) })
	stopWorkers, err := startWorkers(st.client, acts, workerRoles{cpu: true, devices: devices, node: len(node)}, *slots)
	if err != nil {
		return err
	}
	defer stopWorkers()
	faults.started(stopWorkers)

	run, err := sweepclient.Submit(ctx, st.client, st.store, src, tf.input(sweepID, manifestKey))
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "sweep workflow %s\n", sweepID)
	res, err := sweepclient.Wait(ctx, st.client, run, time.Second, bars.sweep)
	var df *deviceFaultError
	switch {
	case errors.As(context.Cause(ctx), &df):
		bars.finish()
		return df
	case ctx.Err() != nil:
		bars.finish()
		fmt.Fprintln(stderr, "interrupted: run the same command again to resume")
		return ctx.Err()
	case err != nil:
		bars.finish()
		return fmt.Errorf("sweep %s: %w", sweepID, err)
	}
	bars.sweep(res.Progress)
	bars.finish()
	// the sweep's last notification makes the Tables workflow build once more and end
	var ts workflows.TablesState
	if err := st.client.GetWorkflow(ctx, workflows.TablesWorkflowID(sweepID), "").Get(ctx, &ts); err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	if err := sweepclient.RetireSchedule(ctx, st.client, sweepID, workflows.TablesScheduleID(sweepID)); err != nil {
		return fmt.Errorf("tables schedule: %w", err)
	}
	if *record != "" {
		ids := []string{sweepID, workflows.TablesWorkflowID(sweepID)}
		for _, t := range trials {
			ids = append(ids, workflows.TrialWorkflowID(sweepID, t.ID))
		}
		if err := recordHistories(ctx, st.client, ids, *record); err != nil {
			return err
		}
	}
	if pf.addr != "off" && pf.addr != "" {
		fmt.Fprintf(stderr, "the sweep page goes with this process; sfsweep serve -dir %s serves it again\n", *dir)
	}
	p := res.Progress
	if p.Configs != nil {
		fmt.Fprintf(stderr, "search done: %d configurations (%s); %d trials completed, %d diverged, %d failed\n",
			sum(p.Configs), countsText(p.Configs), p.Completed, p.Diverged, p.Failed)
		if err := printSearchSummary(ctx, st.store, m, sweepID, stdout); err != nil {
			return err
		}
		if err := copyTables(ctx, st.store, m, absOut, stdout); err != nil {
			return err
		}
		return sweepOutcome(p, *dir)
	}
	fmt.Fprintf(stderr, "sweep done: %d trials, %d run now (%d completed, %d diverged, %d failed), %d had results\n",
		p.Total, p.Completed+p.Diverged+p.Failed, p.Completed, p.Diverged, p.Failed, p.Skipped)
	if err := copyTables(ctx, st.store, m, absOut, stdout); err != nil {
		return err
	}
	return sweepOutcome(p, *dir)
}

// manifestDevice is the device a manifest's trials train on: its backend's.
func manifestDevice(m *sweeps.Manifest) string {
	b, _ := backend.Lookup(manifestSetup(m).Backend) // Parse checked it
	return b.Device
}

// nodeGPUs is how many GPUs each trial of m takes: 0 for none or one.
func nodeGPUs(m *sweeps.Manifest) int { return manifestSetup(m).GPUs }

// manifestSetup is m's setup with its defaults.
func manifestSetup(m *sweeps.Manifest) training.Setup {
	c := training.Config{Setup: m.Setup}
	if m.Trainer != nil {
		c.Trainer = m.Trainer.Config(nil)
	}
	return c.WithDefaults().Setup
}

// deviceFaultError ends sfsweep run after a device fault lost its process's device context;
// main restarts the command in a fresh process.
type deviceFaultError struct{ err error }

func (e *deviceFaultError) Error() string {
	return "run: ended after a device fault, which lost this process's GPU context: " + e.err.Error()
}

func (e *deviceFaultError) Unwrap() error { return e.err }

// restartable makes the fault a restartError: a fresh process has a fresh device context.
func (e *deviceFaultError) restartable() {}

// sweepOutcome is the error sfsweep run ends with when its sweep did not do its job, so
// that a script or CI can tell by the exit code: a trial failed after its retries, or a
// search completed no configuration. A diverged trial is a result, not a failure. Its
// tables and plots are written all the same.
func sweepOutcome(p workflows.SweepProgress, dir string) error {
	where := fmt.Sprintf("their reasons are in the sweep's failed trials (sfsweep serve -dir %s, or trials/<id>/failed.json in its store); running the same command again retrains them", dir)
	if p.Configs != nil {
		done := p.Configs[string(search.StatusCompleted)]
		if done == 0 {
			return fmt.Errorf("the search completed no configuration (%s); %s", countsText(p.Configs), where)
		}
		if f := p.Configs[string(search.StatusFailed)]; f > 0 {
			return fmt.Errorf("%d of the search's %d configurations failed; %s", f, sum(p.Configs), where)
		}
		return nil
	}
	if p.Failed > 0 {
		return fmt.Errorf("%d of %d trials failed; %s", p.Failed, p.Total, where)
	}
	return nil
}

// copyTables copies the sweep's tables, plots and runs.csv from the store to dir and
// prints the tables as a terminal shows them (report.Terminal: aligned columns, bold cells
// in bold on a terminal and marked "*" elsewhere).
func copyTables(ctx context.Context, store blob.Store, m *sweeps.Manifest, dir string, stdout io.Writer) error {
	prefix := report.Output(m) + "/"
	for _, sub := range []string{"tables/", "plots/", "runs.csv"} {
		keys, err := store.List(ctx, prefix+sub)
		if err != nil {
			return err
		}
		for _, k := range keys {
			b, err := store.Get(ctx, k)
			if err != nil {
				return err
			}
			p := filepath.Join(dir, filepath.FromSlash(k))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return err
			}
			if strings.HasSuffix(k, ".md") {
				fmt.Fprintf(stdout, "%s\n\n%s\n", p, report.Terminal(string(b), isTerminal(stdout)))
			}
		}
	}
	fmt.Fprintf(stdout, "tables and plots: %s (and in the embedded S3 under %s)\n", filepath.Join(dir, filepath.FromSlash(prefix)), prefix)
	return nil
}

// recordHistories writes the event history of each workflow (its latest run) as JSON,
// the format worker.WorkflowReplayer reads.
func recordHistories(ctx context.Context, c client.Client, ids []string, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, id := range ids {
		h := &historypb.History{}
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return fmt.Errorf("history of %s: %w", id, err)
			}
			h.Events = append(h.Events, ev)
		}
		b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
		if err != nil {
			return err
		}
		name := strings.NewReplacer("/", "_").Replace(id) + ".json"
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sum is the total of counts.
func sum(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// countsText writes counts by name, sorted: "3 completed, 6 stopped".
func countsText(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return strings.Join(parts, ", ")
}

// printSearchSummary prints a search's best configuration and the steps it trained,
// against those of every configuration trained to the end.
func printSearchSummary(ctx context.Context, store blob.Store, m *sweeps.Manifest, sweepID string, w io.Writer) error {
	s, err := report.ReadSearch(ctx, store, sweepID)
	if err != nil || s == nil {
		return err
	}
	seeds := int64(len(m.Seeds))
	var steps int64
	var best *search.Candidate
	for i, c := range s.Candidates {
		trained := c.Until
		if c.StoppedAt > 0 {
			trained = c.StoppedAt
		}
		steps += seeds * int64(trained)
		if c.Status == search.StatusCompleted && (best == nil || *c.Final < *best.Final) {
			best = &s.Candidates[i]
		}
	}
	all := seeds * int64(m.Steps) * int64(len(s.Candidates))
	fmt.Fprintf(w, "search %s: %d steps trained, %.1f%% of the %d its %d configurations take to the end\n",
		m.Name, steps, 100*float64(steps)/float64(all), all, len(s.Candidates))
	if best != nil {
		trials, err := m.PointTrials(best.Grid, best.Point)
		if err != nil {
			return err
		}
		if cfg := trials[0].Config; cfg.Trainer != nil && cfg.Optimizer.Name == "" {
			var params []string
			for _, k := range cfg.Trainer.ParamNames() {
				params = append(params, k+" "+program.Format(cfg.Trainer.Params[k]))
			}
			fmt.Fprintf(w, "best: %s = %.4g (mean of %d seeds): trainer %s, %s\n",
				m.MetricName(), m.MetricSign()**best.Final, seeds, cfg.Trainer.Name, strings.Join(params, ", "))
			return nil
		}
		p := trials[0].Points[0]
		fmt.Fprintf(w, "best: %s = %.4g (mean of %d seeds): %s lr %g, betas (%g, %g), C %s, batch %d tokens\n",
			m.MetricName(), *best.Final, seeds, p.Optimizer, p.LR, p.Beta1, p.Beta2, p.CLabel(), p.BatchTokens)
	}
	return nil
}
