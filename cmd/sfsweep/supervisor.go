package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/sfsweep/sfsweep/training/backend"
)

// A worker on a machine of several GPUs ("sfsweep worker -gpus ...") supervises one worker
// process per GPU. Each process sees only its GPU (CUDA_VISIBLE_DEVICES), on which the
// engine's device 0 is that GPU, and admits its trials to that GPU's memory (gpuEnv). A
// sticky CUDA error (an illegal address, an ECC error) ends the process of one GPU, not the
// node: the supervisor starts it again, and Temporal retries its trials from their
// checkpoints on whichever worker takes them.

// childEnv is added to the environment of the sfsweep processes this one starts (the
// worker processes of a supervisor, the fresh process of a restart): the test binary sets
// what makes them run as the sfsweep command.
var childEnv []string

// Restart delays of a worker process that exited: doubled after each exit that follows a
// short run, back to the first after a run of restartReset.
const (
	restartFirst = time.Second
	restartMax   = 30 * time.Second
	restartReset = time.Minute
	// stopGrace is how long a worker process has to stop after it is asked to.
	stopGrace = 30 * time.Second
)

// supervisor keeps a worker process running on each of its GPUs.
type supervisor struct {
	exe   string
	args  []string // the workers' arguments, "worker" and its flags, without -slots
	gpus  []gpu
	slots []int // by GPU
	out   *lineWriter
}

// newSupervisor makes the supervisor of "sfsweep worker -gpus": a worker process on each
// GPU of gpus, with slots spread over them, each with the flags fs was given (but -gpus,
// -slots and -queue: a process trains, on the devices of -devices, or by default on every
// device of the build but the CPU). A build without the cuda engine runs program trainers
// (-trainers) on the GPUs: its processes train the trials of device cuda that programs
// train, and no engine trial.
func newSupervisor(ctx context.Context, fs *flag.FlagSet, gpus string, slots int, stderr io.Writer) (*supervisor, error) {
	var devices []string
	for _, d := range backend.Devices() {
		if d != backend.DeviceCPU {
			devices = append(devices, d)
		}
	}
	if len(devices) == 0 {
		if f := fs.Lookup("trainers"); f == nil || f.Value.String() == "" {
			return nil, &usageError{msg: fmt.Sprintf("-gpus = %q: this build has no backend on a GPU, and no -trainers to run there; %s, or give -trainers: program trainers run on the GPUs of any build", gpus, buildHint(backend.DeviceCUDA))}
		}
		devices = []string{backend.DeviceCUDA}
	}
	have, err := listGPUs(ctx)
	if err != nil {
		return nil, err
	}
	sel, err := selectGPUs(gpus, have)
	if err != nil {
		return nil, err
	}
	per, err := spread(slots, len(sel))
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"worker", "-queue", "gpu", "-devices", strings.Join(devices, ",")}
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "gpus" && f.Name != "slots" && f.Name != "queue" {
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	return &supervisor{exe: exe, args: args, gpus: sel, slots: per, out: &lineWriter{w: stderr}}, nil
}

// run starts the workers and restarts each one that exits, until ctx ends; then it asks
// them to stop and waits for them. A worker process that refuses its flags (exit status
// 2, a usage error) would refuse them again: run then stops them all and returns why.
func (s *supervisor) run(ctx context.Context) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	for i, g := range s.gpus {
		wg.Go(func() {
			if err := s.keep(ctx, g, s.slots[i]); err != nil {
				stop(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// keep runs the worker process of g until ctx ends, starting it again when it exits, but
// for a usage error, which it returns.
func (s *supervisor) keep(ctx context.Context, g gpu, slots int) error {
	delay := restartFirst
	for ctx.Err() == nil {
		started := time.Now()
		err := s.start(ctx, g, slots)
		if ctx.Err() != nil {
			return nil
		}
		if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() == 2 {
			return fmt.Errorf("worker: %s: the worker process refused its flags (%v): see its output above", g.name(), err)
		}
		if err == nil {
			err = errors.New("exit status 0")
		}
		if time.Since(started) >= restartReset {
			delay = restartFirst
		}
		s.out.printf("worker: %s: worker process exited (%v): starting it again in %v", g.name(), err, delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, restartMax)
	}
	return nil
}

// start runs one worker process on g and waits for it to exit; ctx ending asks it to
// stop (os.Interrupt), and kills it after stopGrace.
func (s *supervisor) start(ctx context.Context, g gpu, slots int) error {
	args := append(append([]string(nil), s.args[1:]...), "-slots", fmt.Sprint(slots))
	cmd := exec.CommandContext(ctx, s.exe, append([]string{s.args[0]}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = stopGrace
	dieWithParent(cmd)
	cmd.Env = append(append(os.Environ(), "CUDA_VISIBLE_DEVICES="+g.UUID, gpuEnv+"="+g.line()), childEnv...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.out.printf("%s: %s", g.name(), sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Start()
	if err == nil {
		s.out.printf("worker: %s (%s, %s): worker process %d, %d slot(s)", g.name(), g.UUID, backend.GiB(g.Memory), cmd.Process.Pid, slots)
		err = cmd.Wait()
	}
	pw.Close()
	<-done
	return err
}

// lineWriter writes whole lines from several goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}
