package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
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
	src, m, trials, err := loadManifest(file)
	if err != nil {
		return err
	}
	if err := m.CheckBackend(src); err != nil {
		return fmt.Errorf("%s: %w (sfsweep run trains in this process; a sweep given to sfsweep submit waits for workers that have it)", file, err)
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
	if err := report.CheckOutput(ctx, st.store, m, trials); err != nil {
		return fmt.Errorf("%s: %w", file, err)
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
	acts := &activities.Activities{Store: st.store, Client: st.client, CacheDir: filepath.Join(absDir, "data"), Log: logger,
		Progress: bars.step, AttemptFailed: bars.attemptFailed, Probe: bars.probe}
	stopWorkers, err := startWorkers(st.client, acts, workerRoles{cpu: true, devices: backend.Devices()}, *slots)
	if err != nil {
		return err
	}
	defer stopWorkers()

	run, err := sweepclient.Submit(ctx, st.client, st.store, src, tf.input(sweepID, manifestKey))
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "sweep workflow %s\n", sweepID)
	res, err := sweepclient.Wait(ctx, st.client, run, time.Second, bars.sweep)
	switch {
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
		return copyTables(ctx, st.store, m, absOut, stdout)
	}
	fmt.Fprintf(stderr, "sweep done: %d trials, %d run now (%d completed, %d diverged, %d failed), %d had results\n",
		p.Total, p.Completed+p.Diverged+p.Failed, p.Completed, p.Diverged, p.Failed, p.Skipped)
	return copyTables(ctx, st.store, m, absOut, stdout)
}

// stack is the embedded deployment: a Temporal server on a SQLite file, an S3 gateway on
// plain files, a store and a client.
type stack struct {
	server *devserver.Server
	gw     *s3gw.Gateway
	store  *s3store.Store
	client client.Client
}

func startStack(ctx context.Context, dir string, ui bool, logger *slog.Logger) (*stack, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	st := &stack{}
	var err error
	st.server, err = devserver.Start(ctx, devserver.Options{DBPath: filepath.Join(dir, "temporal.db"), UI: ui, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	st.gw, err = s3gw.Start(ctx, s3gw.Options{Root: filepath.Join(dir, "s3"), CredentialsFile: filepath.Join(dir, "s3-credentials.json")})
	if err != nil {
		st.stop()
		return nil, fmt.Errorf("s3 gateway: %w", err)
	}
	st.store, err = s3store.New(ctx, st.gw.StoreConfig(""))
	if err != nil {
		st.stop()
		return nil, err
	}
	st.client, err = client.Dial(client.Options{HostPort: st.server.HostPort(), Namespace: devserver.DefaultNamespace, Logger: sdklog.NewStructuredLogger(logger)})
	if err != nil {
		st.stop()
		return nil, fmt.Errorf("temporal client: %w", err)
	}
	return st, nil
}

func (st *stack) stop() {
	if st.client != nil {
		st.client.Close()
	}
	if st.gw != nil {
		st.gw.Stop()
	}
	if st.server != nil {
		st.server.Stop()
	}
}

// copyTables copies the sweep's tables and plots from the store to dir and prints the
// Markdown tables.
func copyTables(ctx context.Context, store blob.Store, m *sweeps.Manifest, dir string, stdout io.Writer) error {
	prefix := report.Output(m) + "/"
	for _, sub := range []string{"tables/", "plots/"} {
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
				fmt.Fprintf(stdout, "%s\n\n%s\n", p, b)
			}
		}
	}
	fmt.Fprintf(stdout, "tables and plots: %s (and in the embedded S3 under %s)\n", filepath.Join(dir, filepath.FromSlash(prefix)), prefix)
	return nil
}

// progressBars draws the sweep's progress and the running trials' steps on a terminal,
// or prints a line per finished trial and per evaluation otherwise.
type progressBars struct {
	mu     sync.Mutex
	w      io.Writer
	live   bool
	last   workflows.SweepProgress
	steps  map[string]training.Progress
	probes map[string]map[string]time.Time // by trial: the probes running, since when
	lines  int
}

func newProgressBars(w io.Writer, live bool) *progressBars {
	return &progressBars{w: w, live: live, steps: map[string]training.Progress{}, probes: map[string]map[string]time.Time{}}
}

// probe shows a trial's probe while it runs, and its end (a failure at once).
func (b *progressBars) probe(trial, what string, done bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !done {
		if b.probes[trial] == nil {
			b.probes[trial] = map[string]time.Time{}
		}
		b.probes[trial][what] = time.Now()
		b.draw()
		return
	}
	took := time.Since(b.probes[trial][what]).Round(time.Second)
	delete(b.probes[trial], what)
	if len(b.probes[trial]) == 0 {
		delete(b.probes, trial)
	}
	switch {
	case err != nil:
		b.printAbove(fmt.Sprintf("trial %s: %s failed: %v", trial, what, err))
	case !b.live:
		fmt.Fprintf(b.w, "trial %s: %s done in %s\n", trial, what, took)
	default:
		b.draw()
	}
}

// stepOf is the last progress of a trial training in this process.
func (b *progressBars) stepOf(trial string) (training.Progress, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.steps[trial]
	return p, ok
}

func (b *progressBars) step(trial string, p training.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.Step >= p.Steps {
		delete(b.steps, trial)
	} else {
		b.steps[trial] = p
	}
	if !b.live && p.Eval != nil {
		fmt.Fprintf(b.w, "trial %s step %d/%d  val %s\n", trial, p.Step, p.Steps, formatLosses(p.Eval.Val))
	}
	b.draw()
}

// attemptFailed reports a failed training attempt at once; Temporal retries it.
func (b *progressBars) attemptFailed(trial string, attempt int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.steps, trial)
	b.printAbove(fmt.Sprintf("trial %s: attempt %d failed: %v (retried with backoff from its newest checkpoint, up to -attempts)", trial, attempt, err))
}

// printAbove prints a line above the live bars (or as a plain line when not live).
func (b *progressBars) printAbove(line string) {
	if b.live {
		for range b.lines {
			fmt.Fprint(b.w, "\033[1A\033[K")
		}
		b.lines = 0
	}
	fmt.Fprintln(b.w, line)
	b.draw()
}

func (b *progressBars) sweep(p workflows.SweepProgress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	finished := p.Completed + p.Diverged + p.Failed
	if !b.live && finished != b.last.Completed+b.last.Diverged+b.last.Failed {
		fmt.Fprintf(b.w, "sweep: %d/%d trials done (%d completed, %d diverged, %d failed, %d had results)\n",
			finished+p.Skipped, p.Total, p.Completed, p.Diverged, p.Failed, p.Skipped)
	}
	failed := p.Failed > b.last.Failed
	b.last = p
	if failed {
		b.printAbove(fmt.Sprintf("sweep: a trial failed (%d so far); its cell reads \"failed\"", p.Failed))
		return
	}
	b.draw()
}

func (b *progressBars) draw() {
	if !b.live {
		return
	}
	for range b.lines {
		fmt.Fprint(b.w, "\033[1A\033[K")
	}
	p := b.last
	done := p.Completed + p.Diverged + p.Failed + p.Skipped
	const width = 30
	fill := 0
	if p.Total > 0 {
		fill = width * done / p.Total
	}
	fmt.Fprintf(b.w, "sweep [%s%s] %d/%d trials  %d diverged  %d failed\n", strings.Repeat("█", fill), strings.Repeat("·", width-fill), done, p.Total, p.Diverged, p.Failed)
	b.lines = 1
	for _, id := range slices.Sorted(maps.Keys(b.steps)) {
		s := b.steps[id]
		fmt.Fprintf(b.w, "  trial %s  step %d/%d  loss %.4f  %.0f tok/s  ETA %s\n", id, s.Step, s.Steps, s.TrainLoss, s.TokensPerSec, s.ETA.Round(time.Second))
		b.lines++
	}
	for _, id := range slices.Sorted(maps.Keys(b.probes)) {
		for _, what := range slices.Sorted(maps.Keys(b.probes[id])) {
			fmt.Fprintf(b.w, "  trial %s  %s  %s\n", id, what, time.Since(b.probes[id][what]).Round(time.Second))
			b.lines++
		}
	}
}

func (b *progressBars) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = 0
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

// trialFlags are the flags of run and submit that say how many trials are in flight and
// how a trial's training is watched and retried.
type trialFlags struct {
	window    int
	heartbeat time.Duration
	stall     time.Duration
	retry     workflows.TrainRetry
}

// register adds the flags to fs, with window as -window's default.
func (t *trialFlags) register(fs *flag.FlagSet, window int) {
	def := workflows.RetryTransient
	fs.IntVar(&t.window, "window", window, "trials in flight in the sweep (queued or training)")
	fs.DurationVar(&t.heartbeat, "heartbeat", workflows.DefaultHeartbeatTimeout, "heartbeat timeout of a training activity: a lost worker's trial is retried after it")
	fs.DurationVar(&t.stall, "stall-timeout", workflows.DefaultStallTimeout, "a training attempt whose forward and backward passes stop returning for this long is abandoned as stuck (a hung GPU) and retried")
	fs.IntVar(&t.retry.MaxAttempts, "attempts", int(def.MaximumAttempts), "attempts of a trial's training (lost workers, GPU and storage errors) before it is recorded failed")
	fs.DurationVar(&t.retry.InitialInterval, "retry-initial", def.InitialInterval, "wait before a trial's first retry; it doubles with each retry")
	fs.DurationVar(&t.retry.MaximumInterval, "retry-max", def.MaximumInterval, "longest wait between two attempts of a trial")
}

func (t *trialFlags) check() error {
	switch {
	case t.window < 1:
		return &usageError{msg: fmt.Sprintf("-window = %d: must be ≥ 1", t.window)}
	case t.heartbeat <= 0:
		return &usageError{msg: fmt.Sprintf("-heartbeat = %v: must be > 0", t.heartbeat)}
	case t.stall <= 0:
		return &usageError{msg: fmt.Sprintf("-stall-timeout = %v: must be > 0", t.stall)}
	case t.retry.MaxAttempts < 1:
		return &usageError{msg: fmt.Sprintf("-attempts = %d: must be ≥ 1", t.retry.MaxAttempts)}
	case t.retry.InitialInterval <= 0:
		return &usageError{msg: fmt.Sprintf("-retry-initial = %v: must be > 0", t.retry.InitialInterval)}
	case t.retry.MaximumInterval < t.retry.InitialInterval:
		return &usageError{msg: fmt.Sprintf("-retry-max = %v: must be ≥ -retry-initial (%v)", t.retry.MaximumInterval, t.retry.InitialInterval)}
	}
	return nil
}

// input is the Sweep workflow's input for a sweep.
func (t *trialFlags) input(sweepID, manifestKey string) workflows.SweepInput {
	return workflows.SweepInput{SweepID: sweepID, ManifestKey: manifestKey, Window: t.window, HeartbeatTimeout: t.heartbeat, StallTimeout: t.stall, Retry: t.retry}
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
		p := trials[0].Points[0]
		fmt.Fprintf(w, "best: %s = %.4g (mean of %d seeds): %s lr %g, betas (%g, %g), C %s, batch %d tokens\n",
			m.MetricName(), *best.Final, seeds, p.Optimizer, p.LR, p.Beta1, p.Beta2, p.CLabel(), p.BatchTokens)
	}
	return nil
}
