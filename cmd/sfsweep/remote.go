package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/infra/temporalclient"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/workflows"
)

// The distributed mode: workers, submit, status, cancel and tables against any Temporal
// cluster and any S3 endpoint. Temporal is reached through -temporal-* flags or the
// Temporal CLI's environment (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
// TEMPORAL_TLS_*); S3 through -s3-* flags or SFSWEEP_S3_* and the standard AWS
// configuration chain for credentials (AWS_ACCESS_KEY_ID, ~/.aws, instance roles).

func init() {
	register("worker", "run a worker of the gpu or cpu task queue against a Temporal cluster and S3", runWorker)
	register("submit", "submit a sweep manifest to a Temporal cluster and S3 (distributed mode)", runSubmit)
	register("status", "show a submitted sweep's progress", runStatus)
	register("cancel", "cancel a submitted sweep: no new trials start, running ones stop", runCancel)
	register("tables", "tables regenerate SWEEP-ID: rebuild a sweep's tables from the results in S3", runTables)
}

// remote holds the connection flags of the distributed mode.
type remote struct {
	temporal temporalclient.Options
	s3       s3store.Config
}

func (r *remote) flags(fs *flag.FlagSet) {
	env, _ := temporalclient.FromEnv(os.Getenv)
	r.temporal = env
	r.temporal.RegisterFlags(fs)
	fs.StringVar(&r.s3.Endpoint, "s3-endpoint", os.Getenv("SFSWEEP_S3_ENDPOINT"), "S3 endpoint URL (empty: AWS) [SFSWEEP_S3_ENDPOINT]")
	fs.StringVar(&r.s3.Region, "s3-region", os.Getenv("SFSWEEP_S3_REGION"), "S3 region (empty: the AWS configuration's) [SFSWEEP_S3_REGION]")
	fs.StringVar(&r.s3.Bucket, "s3-bucket", os.Getenv("SFSWEEP_S3_BUCKET"), "S3 bucket [SFSWEEP_S3_BUCKET]")
	fs.StringVar(&r.s3.Prefix, "s3-prefix", os.Getenv("SFSWEEP_S3_PREFIX"), "key prefix in the bucket [SFSWEEP_S3_PREFIX]")
}

func (r *remote) connect(ctx context.Context) (client.Client, *s3store.Store, error) {
	if r.s3.Bucket == "" {
		return nil, nil, &usageError{msg: "-s3-bucket (or SFSWEEP_S3_BUCKET) = \"\": must name the bucket of the results"}
	}
	store, err := s3store.New(ctx, r.s3)
	if err != nil {
		return nil, nil, err
	}
	c, err := temporalclient.Dial(ctx, r.temporal)
	if err != nil {
		return nil, nil, err
	}
	return c, store, nil
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("worker", stderr)
	var r remote
	r.flags(fs)
	queue := fs.String("queue", "gpu", "task queue: gpu (training, probes), cpu (workflows, planning, tables) or all")
	slots := fs.Int("slots", 1, "trials trained at once (one per GPU)")
	cache := fs.String("cache", filepath.Join(".sfsweep", "data"), "directory of prepared default corpora")
	exitOnStall := fs.Bool("exit-on-stall", true, "exit (status 1) when a training attempt is abandoned as stuck, so that the supervisor restarts the worker with a fresh device; its other trials resume elsewhere")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if *queue != "gpu" && *queue != "cpu" && *queue != "all" {
		return &usageError{msg: fmt.Sprintf("-queue = %q: must be gpu, cpu or all", *queue)}
	}
	if *slots < 1 {
		return &usageError{msg: fmt.Sprintf("-slots = %d: must be ≥ 1", *slots)}
	}
	c, store, err := r.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	cacheDir, err := filepath.Abs(*cache)
	if err != nil {
		return err
	}
	acts := &activities.Activities{Store: store, Client: c, CacheDir: cacheDir, Log: slog.New(slog.NewTextHandler(stderr, nil))}
	if *exitOnStall {
		acts.OnStall = func(err error) {
			// after a moment, so that the attempt's failure reaches the server first
			time.AfterFunc(2*time.Second, func() { stop(fmt.Errorf("worker: exiting to get a fresh device: %w", err)) })
		}
	}
	var ws []worker.Worker
	if *queue != "cpu" {
		w := worker.New(c, workflows.QueueGPU, worker.Options{MaxConcurrentActivityExecutionSize: *slots})
		acts.RegisterGPU(w)
		ws = append(ws, w)
	}
	if *queue != "gpu" {
		w := worker.New(c, workflows.QueueCPU, worker.Options{})
		acts.RegisterCPU(w)
		ws = append(ws, w)
	}
	for _, w := range ws {
		if err := w.Start(); err != nil {
			return err
		}
		defer w.Stop()
	}
	fmt.Fprintf(stderr, "worker: queue %s, %d slot(s), Temporal %s, bucket %s\n", *queue, *slots, r.temporal.Address, r.s3.Bucket)
	<-ctx.Done()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func runSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("submit", stderr)
	var r remote
	r.flags(fs)
	window := fs.Int("window", 8, "trials in flight (queued or training)")
	var tf trialFlags
	tf.register(fs)
	file, err := parseWithArg(fs, args, "a sweep manifest: sfsweep submit MANIFEST.yaml")
	if err != nil {
		return err
	}
	if err := tf.check(); err != nil {
		return err
	}
	src, m, _, err := loadManifest(file)
	if err != nil {
		return err
	}
	c, store, err := r.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	id, key := sweepKeys(m, src)
	if err := store.Put(ctx, key, src); err != nil {
		return err
	}
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: workflows.QueueCPU, WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.Sweep, tf.input(id, key, *window))
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if err := activities.EnsureTablesSchedule(ctx, c, id, key); err != nil {
		return fmt.Errorf("submit: tables schedule: %w", err)
	}
	fmt.Fprintln(stdout, id)
	return nil
}

// sweepKeys are a manifest's sweep ID (its name and the hash of its bytes: the same
// manifest submitted twice is one sweep) and its key in the store.
func sweepKeys(m *sweeps.Manifest, src []byte) (id, key string) {
	sum := sha256.Sum256(src)
	id = "sweep-" + m.Name + "-" + hex.EncodeToString(sum[:])[:8]
	return id, "sweeps/" + id + "/manifest.yaml"
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	var r remote
	r.flags(fs)
	asJSON := fs.Bool("json", false, "print the progress as JSON")
	follow := fs.Bool("follow", false, "print the progress every few seconds until the sweep ends")
	id, err := parseWithArg(fs, args, "a sweep ID: sfsweep status SWEEP-ID")
	if err != nil {
		return err
	}
	c, err := temporalclient.Dial(ctx, r.temporal)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryProgress)
		if err != nil {
			return fmt.Errorf("status %s: %w", id, err)
		}
		var p workflows.SweepProgress
		if err := v.Get(&p); err != nil {
			return err
		}
		if *asJSON {
			b, _ := json.Marshal(p)
			fmt.Fprintln(stdout, string(b))
		} else {
			fmt.Fprintf(stdout, "%s: %d/%d trials done (%d completed, %d diverged, %d failed, %d had results), %d running\n",
				id, p.Completed+p.Diverged+p.Failed+p.Skipped, p.Total, p.Completed, p.Diverged, p.Failed, p.Skipped, len(p.Running))
		}
		if !*follow || p.Done() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}

func runCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cancel", stderr)
	var r remote
	r.flags(fs)
	id, err := parseWithArg(fs, args, "a sweep ID: sfsweep cancel SWEEP-ID")
	if err != nil {
		return err
	}
	c, err := temporalclient.Dial(ctx, r.temporal)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SignalWorkflow(ctx, id, "", workflows.SignalCancel, nil); err != nil {
		return fmt.Errorf("cancel %s: %w", id, err)
	}
	fmt.Fprintf(stdout, "%s: cancel requested\n", id)
	return nil
}

func runTables(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "regenerate" {
		return &usageError{msg: "want: sfsweep tables regenerate [flags] SWEEP-ID"}
	}
	fs := newFlagSet("tables regenerate", stderr)
	var r remote
	r.flags(fs)
	id, err := parseWithArg(fs, args[1:], "a sweep ID: sfsweep tables regenerate SWEEP-ID")
	if err != nil {
		return err
	}
	if r.s3.Bucket == "" {
		return &usageError{msg: "-s3-bucket (or SFSWEEP_S3_BUCKET) = \"\": must name the bucket of the results"}
	}
	store, err := s3store.New(ctx, r.s3)
	if err != nil {
		return err
	}
	acts := &activities.Activities{Store: store}
	out, err := acts.BuildTables(ctx, workflows.BuildTablesInput{SweepID: id, ManifestKey: "sweeps/" + id + "/manifest.yaml"})
	if err != nil {
		return err
	}
	for _, k := range out.Keys {
		fmt.Fprintln(stdout, k)
	}
	return nil
}
