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

// supervisor keeps a worker process running on each of its GPUs, and, where it runs
// program trainers on several GPUs, the node's process, which trains the trials of several
// GPUs (gpus: N) and takes their GPUs whole from the processes of each (gpulock).
type supervisor struct {
	exe   string
	args  []string // the workers' arguments, "worker" and its flags, without -slots
	gpus  []gpu
	slots []int // by GPU
	node  bool  // start the node's process
	out   *lineWriter
}

// member is one worker process a supervisor keeps running: of one GPU, or the node's.
type member struct {
	name  string   // as lines name it: "GPU 3", "GPUs 0,1 (node)"
	about string   // what its start line says of its GPUs
	env   []string // its GPUs, for it
	slots int
}

// members are the processes s keeps running.
func (s *supervisor) members() []member {
	var ms []member
	var uuids, lines, indices []string
	for i, g := range s.gpus {
		ms = append(ms, member{name: g.name(), about: fmt.Sprintf("%s, %s", g.UUID, backend.GiB(g.Memory)), slots: s.slots[i],
			env: []string{"CUDA_VISIBLE_DEVICES=" + g.UUID, gpuEnv + "=" + g.line()}})
		uuids, lines, indices = append(uuids, g.UUID), append(lines, g.line()), append(indices, g.Index)
	}
	if s.node {
		ms = append(ms, member{name: "GPUs " + strings.Join(indices, ",") + " (node)", about: "the trials of several GPUs", slots: max(len(s.gpus)/2, 1),
			env: []string{"CUDA_VISIBLE_DEVICES=" + strings.Join(uuids, ","), nodeEnv + "=" + strings.Join(lines, "\n")}})
	}
	return ms
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
	// the trials of several GPUs are program trainers': their launcher starts a rank a GPU
	trainers := fs.Lookup("trainers")
	node := len(sel) > 1 && trainers != nil && trainers.Value.String() != ""
	return &supervisor{exe: exe, args: args, gpus: sel, slots: per, node: node, out: &lineWriter{w: stderr}}, nil
}

// run starts the workers and restarts each one that exits, until ctx ends; then it asks
// them to stop and waits for them. A worker process that refuses its flags (exit status
// 2, a usage error) would refuse them again: run then stops them all and returns why.
func (s *supervisor) run(ctx context.Context) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	for _, m := range s.members() {
		wg.Go(func() {
			if err := s.keep(ctx, m); err != nil {
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

// keep runs the worker process m until ctx ends, starting it again when it exits, but
// for a usage error, which it returns.
func (s *supervisor) keep(ctx context.Context, m member) error {
	delay := restartFirst
	for ctx.Err() == nil {
		started := time.Now()
		err := s.start(ctx, m)
		if ctx.Err() != nil {
			return nil
		}
		if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() == 2 {
			return fmt.Errorf("worker: %s: the worker process refused its flags (%v): see its output above", m.name, err)
		}
		if err == nil {
			err = errors.New("exit status 0")
		}
		if time.Since(started) >= restartReset {
			delay = restartFirst
		}
		s.out.printf("worker: %s: worker process exited (%v): starting it again in %v", m.name, err, delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, restartMax)
	}
	return nil
}

// start runs the worker process m and waits for it to exit; ctx ending asks it to stop
// (os.Interrupt), and kills it after stopGrace.
func (s *supervisor) start(ctx context.Context, m member) error {
	args := append(append([]string(nil), s.args[1:]...), "-slots", fmt.Sprint(m.slots))
	cmd := exec.CommandContext(ctx, s.exe, append([]string{s.args[0]}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = stopGrace
	dieWithParent(cmd)
	cmd.Env = append(append(os.Environ(), m.env...), childEnv...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.out.printf("%s: %s", m.name, sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Start()
	if err == nil {
		s.out.printf("worker: %s (%s): worker process %d, %d slot(s)", m.name, m.about, cmd.Process.Pid, m.slots)
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
