package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/infra/temporalclient"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/workflows"
)

// The distributed mode: workers, submit, status, cancel and tables against any Temporal
// cluster and any S3 endpoint. Temporal is reached through -temporal-* flags or the
// Temporal CLI's environment (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
// TEMPORAL_TLS_*); S3 through -s3-* flags or SFSWEEP_S3_* and the standard AWS
// configuration chain for credentials (AWS_ACCESS_KEY_ID, ~/.aws, instance roles).

// remote holds the connection flags of the distributed mode.
type remote struct {
	temporal temporalclient.Options
	// envErr is a malformed Temporal setting in the environment (TEMPORAL_TLS=maybe).
	// It is kept, not dropped, and dial returns it: a setting that asks for TLS and
	// cannot be read must never mean a connection without TLS.
	envErr error
	s3     s3store.Config
}

func (r *remote) flags(fs *flag.FlagSet) {
	r.temporal, r.envErr = temporalclient.FromEnv(os.Getenv)
	r.s3.Endpoint, r.s3.Region, r.s3.Bucket = os.Getenv(envS3Endpoint), os.Getenv(envS3Region), os.Getenv(envS3Bucket)
	// a join file in the environment comes before the flags, which override it
	if p := os.Getenv(envJoin); p != "" {
		if err := r.loadJoin(p); err != nil && r.envErr == nil {
			r.envErr = fmt.Errorf("%s: %w", envJoin, err)
		}
	}
	fs.Func("join", "join file of an sfsweep server (Temporal and S3 with their certificates and key; docs/server.md); flags after it override it ["+envJoin+"]", r.loadJoin)
	r.temporal.RegisterFlags(fs)
	fs.StringVar(&r.s3.Endpoint, "s3-endpoint", r.s3.Endpoint, "S3 endpoint URL (empty: AWS) [SFSWEEP_S3_ENDPOINT]")
	fs.StringVar(&r.s3.Region, "s3-region", r.s3.Region, "S3 region (empty: the AWS configuration's) [SFSWEEP_S3_REGION]")
	fs.StringVar(&r.s3.Bucket, "s3-bucket", r.s3.Bucket, "S3 bucket [SFSWEEP_S3_BUCKET]")
	fs.StringVar(&r.s3.Prefix, "s3-prefix", os.Getenv("SFSWEEP_S3_PREFIX"), "key prefix in the bucket [SFSWEEP_S3_PREFIX]")
}

func (r *remote) connect(ctx context.Context) (client.Client, *s3store.Store, error) {
	if err := r.checkEnv(); err != nil {
		return nil, nil, err
	}
	if r.s3.Bucket == "" {
		return nil, nil, &usageError{msg: "-s3-bucket (or SFSWEEP_S3_BUCKET) = \"\": must name the bucket of the results"}
	}
	store, err := s3store.New(ctx, r.s3)
	if err != nil {
		return nil, nil, err
	}
	c, err := r.dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, store, nil
}

// dial connects to Temporal with the flags and the environment, refusing a malformed
// environment setting before anything is dialed.
func (r *remote) dial(ctx context.Context) (client.Client, error) {
	if err := r.checkEnv(); err != nil {
		return nil, err
	}
	return temporalclient.Dial(ctx, r.temporal)
}

// checkEnv returns the environment's malformed Temporal setting, if any, as a usage error.
func (r *remote) checkEnv() error {
	if r.envErr != nil {
		return &usageError{msg: r.envErr.Error()}
	}
	return nil
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("worker", stderr)
	var r remote
	r.flags(fs)
	queue := fs.String("queue", "gpu", "role: gpu (training and probes, on the task queue of each device served), cpu (workflows, planning, tables) or all")
	devices := fs.String("devices", strings.Join(backend.Devices(), ","), "devices whose trials the gpu role trains, comma-separated: those of the backends this build has")
	slots := fs.Int("slots", 0, "trials trained at once: with -gpus, spread over the GPUs (0: one a GPU); without, in this process (0: one)")
	gpus := fs.String("gpus", "", "GPUs to train on, one worker process each, which admits its trials by the GPU's memory: all, or indices and UUIDs (GPU-…, MIG-…), comma-separated (docs/gpu-node.md); empty: train in this process")
	cache := fs.String("cache", filepath.Join(".sfsweep", "data"), "directory of prepared default corpora")
	trainersFile := fs.String("trainers", "", "file of the program trainers this worker runs (docs/trainer.md); none: only sfsweep's engine")
	exitOnStall := fs.Bool("exit-on-stall", true, "exit (status 1) when a training attempt is abandoned as stuck, so that the supervisor restarts the worker with a fresh device; its other trials resume elsewhere")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	roles, err := parseRoles(*queue, *devices)
	if err != nil {
		return err
	}
	if *slots < 0 {
		return &usageError{msg: fmt.Sprintf("-slots = %d: must be ≥ 0", *slots)}
	}
	if *gpus != "" {
		if len(roles.devices) == 0 {
			return &usageError{msg: fmt.Sprintf("-gpus = %q with -queue %s: the GPUs' worker processes train; use -queue gpu or all", *gpus, *queue)}
		}
		sup, err := newSupervisor(ctx, fs, *gpus, *slots, stderr)
		if err != nil {
			return err
		}
		supervised := make(chan struct{})
		go func() { stop(sup.run(ctx)); close(supervised) }()
		defer func() { stop(nil); <-supervised }()
		if !roles.cpu {
			<-ctx.Done()
			return ctxErr(ctx)
		}
		roles.devices = nil // the GPUs' processes train; this one serves the cpu role
	}
	*slots = max(*slots, 1)
	gpu, err := workerGPU(os.Getenv(gpuEnv))
	if err != nil {
		return err
	}
	node, err := workerNode(os.Getenv(nodeEnv))
	if err != nil {
		return err
	}
	if node != nil { // the node's process: only trials of several GPUs
		roles.devices, roles.node = nil, len(node)
	}
	trainers, err := loadTrainers(*trainersFile, stderr)
	if err != nil {
		return err
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
	acts := &activities.Activities{Store: store, Client: c, CacheDir: cacheDir, Log: slog.New(slog.NewTextHandler(stderr, nil)), Trainers: trainers, GPU: gpu, Node: node}
	if *exitOnStall {
		acts.OnStall = func(err error) {
			// after a moment, so that the attempt's failure reaches the server first
			time.AfterFunc(2*time.Second, func() { stop(fmt.Errorf("worker: exiting to get a fresh device: %w", err)) })
		}
	}
	// A device fault has lost this process's device context: it stops polling at once, so
	// that it takes no other attempt, and exits a moment later, once the faulted attempt's
	// failure has reached the server; its supervisor starts it again.
	var faults faultStop
	acts.OnDeviceFault = faults.handler(func(err error) {
		stop(fmt.Errorf("worker: exiting for a fresh device context after a device fault: %w", err))
	})
	stopWorkers, err := startWorkers(c, acts, roles, *slots)
	if err != nil {
		return err
	}
	faults.started(stopWorkers)
	defer stopWorkers()
	fmt.Fprintf(stderr, "worker: %s, %d slot(s) per device, Temporal %s, bucket %s\n", roles, *slots, r.temporal.Address, r.s3.Bucket)
	if gpu != nil {
		u := gpu.Usage()
		fmt.Fprintf(stderr, "worker: trials admitted by memory on %s (%s, %s)\n", u.Device, os.Getenv("CUDA_VISIBLE_DEVICES"), backend.GiB(u.Total))
	}
	<-ctx.Done()
	return ctxErr(ctx)
}

// ctxErr is why a worker's context ended, nil when it was asked to stop.
func ctxErr(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func runSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("submit", stderr)
	var r remote
	r.flags(fs)
	var tf trialFlags
	tf.register(fs, workflows.DefaultWindow)
	file, err := parseWithArg(fs, args, "a sweep manifest: sfsweep submit MANIFEST.yaml")
	if err != nil {
		return err
	}
	if err := tf.check(); err != nil {
		return err
	}
	src, m, trials, err := loadManifest(ctx, file)
	if err != nil {
		return err
	}
	if t := m.Trainer; t != nil && t.Local() {
		return fmt.Errorf("%s: trainer: %s defines its program (program, interpreter, command, files or env), which only sfsweep run starts: a distributed worker runs only the trainers its operator registered (sfsweep worker -trainers FILE); name one with trainer.name and trainer.version", file, t.Name)
	}
	warnRungs(stderr, file, m)
	c, store, err := r.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := warnUnserved(ctx, c, m, stderr); err != nil {
		return err
	}
	id := keys.SweepID(m.Name, src)
	key := keys.Manifest(id)
	if err := tf.claimOutput(ctx, store, m, trials, file, stderr); err != nil {
		return err
	}
	if _, err := sweepclient.Submit(ctx, c, store, src, tf.input(id, key)); err != nil {
		return err
	}
	fmt.Fprintln(stdout, id)
	return nil
}

// warnUnserved tells, before a sweep is scheduled, if no worker polls the training queue
// of its backend's device, or of its program trainer at its identity: its trials will
// wait (they do not fail) until one does.
func warnUnserved(ctx context.Context, c client.Client, m *sweeps.Manifest, stderr io.Writer) error {
	name, _ := backend.Resolve(m.Backend, m.Precision) // Parse checked both
	b, _ := backend.Lookup(name)
	queue := workflows.TrainQueue(backend.RouteOf(b))
	if m.Trainer != nil {
		t := m.Trainer.Config(nil)
		queue = workflows.TrainerQueue(b.Device, t.Name, t.Identity)
	}
	q, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return fmt.Errorf("submit: task queue %s: %w", queue, err)
	}
	if len(q.GetPollers()) == 0 && m.Trainer != nil {
		t := m.Trainer.Config(nil)
		fmt.Fprintf(stderr, "submit: no worker runs trainer %s at %s on device %s now (none polls task queue %s): its trials wait until one does (a worker's -trainers registers it)\n", t.Name, t.Identity, b.Device, queue)
	} else if len(q.GetPollers()) == 0 {
		hint := "sfsweep worker -queue gpu"
		if b.Build != "" {
			hint += ", " + strings.Replace(b.Build, "build sfsweep", "built", 1)
		}
		fmt.Fprintf(stderr, "submit: no worker serves backend %s now (none polls task queue %s): its trials wait until one does (%s)\n", b.Name, queue, hint)
	}
	return nil
}

// sweepClient parses the flags of a command (name) that takes a sweep ID and connects to
// Temporal.
func (r *remote) sweepClient(ctx context.Context, fs *flag.FlagSet, args []string, name string) (string, client.Client, error) {
	id, err := parseWithArg(fs, args, "a sweep ID: sfsweep "+name+" SWEEP-ID")
	if err != nil {
		return "", nil, err
	}
	c, err := r.dial(ctx)
	return id, c, err
}

func runCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cancel", stderr)
	var r remote
	r.flags(fs)
	id, c, err := r.sweepClient(ctx, fs, args, "cancel")
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
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		args = []string{"regenerate", "-h"} // its one subcommand's usage
	}
	if len(args) == 0 || args[0] != "regenerate" {
		return &usageError{msg: "want: sfsweep tables regenerate [flags] SWEEP-ID (with -dir, a sweep's name or ID)"}
	}
	fs := newFlagSet("tables regenerate", stderr)
	var r remote
	r.flags(fs)
	dir := fs.String("dir", "", "the state directory of sfsweep run (.sfsweep): rebuild from its store, by the sweep's name or ID, with no Temporal, and copy the tables to -out")
	out := fs.String("out", "out", "with -dir, the directory the tables, plots and runs.csv are copied to, as sfsweep run copies them")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sfsweep tables regenerate [flags] SWEEP-ID (with -dir, a sweep's name or ID)")
		fs.PrintDefaults()
	}
	id, err := parseWithArg(fs, args[1:], "a sweep ID: sfsweep tables regenerate SWEEP-ID (with -dir, a sweep's name or ID)")
	if err != nil {
		return err
	}
	var store blob.Store
	if *dir != "" {
		st, closeStore, err := openResults(ctx, &r, *dir)
		if err != nil {
			return err
		}
		defer closeStore()
		if id, err = localSweepID(ctx, st, *dir, id); err != nil {
			return fmt.Errorf("tables regenerate: %w", err)
		}
		store = st
	} else {
		if r.s3.Bucket == "" {
			return &usageError{msg: "-s3-bucket (or SFSWEEP_S3_BUCKET) = \"\": must name the bucket of the results (or give -dir, the state directory of sfsweep run)"}
		}
		if store, err = s3store.New(ctx, r.s3); err != nil {
			return err
		}
	}
	src, err := store.Get(ctx, keys.Manifest(id))
	if err != nil {
		return fmt.Errorf("tables regenerate %s: %w", id, err)
	}
	m, err := sweeps.Parse(src)
	if err != nil {
		return fmt.Errorf("%s: %w", keys.Manifest(id), err)
	}
	written, err := report.Build(ctx, store, m, report.Options{SweepID: id})
	if err != nil {
		return err
	}
	if *dir != "" {
		return copyTables(ctx, store, m, *out, stdout)
	}
	for _, k := range written {
		fmt.Fprintln(stdout, k)
	}
	return nil
}

// localSweepID is the ID of sweep (its name, or its ID: sweep-<name>-<hash>) in the store
// of sfsweep run's state directory dir: a name is looked up in its output's index of
// trials, which names the sweep that built it last.
func localSweepID(ctx context.Context, store blob.Store, dir, sweep string) (string, error) {
	if strings.HasPrefix(sweep, "sweep-") {
		return sweep, nil
	}
	ix, err := report.ReadIndex(ctx, store, keys.Output(sweep, ""))
	if err != nil {
		return "", fmt.Errorf("%s: %w", sweep, err)
	}
	if ix == nil || ix.Sweep == "" {
		return "", fmt.Errorf("%s: -dir %s has no sweep of that name with tables built (%s); give its ID (sweep-%s-…)", sweep, dir, keys.TrialIndex(keys.Output(sweep, "")), sweep)
	}
	return ix.Sweep, nil
}
