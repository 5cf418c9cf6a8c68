package program

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Run starts the program of a in its own process group and waits for it. Exit 0 is
// Completed (Failed if no accepted line carried a validation loss), 3 Diverged, 2 Invalid,
// anything else or a signal Failed. A line with a non-finite loss ends the program as
// Diverged at its step; a canceled ctx ends it as Canceled and Run returns ctx.Err().
//
// Ending is SIGTERM to the group, Grace, then SIGKILL to the group; Run returns only once
// the program has exited and no process of its group is left, including after a program
// that exits leaving children behind. An error other than ctx's is one of setting up
// (Status Failed) or of the final Sync.
func Run(ctx context.Context, a Attempt) (Outcome, error) {
	out := Outcome{Status: Failed, ExitCode: -1}
	fail := func(err error) (Outcome, error) {
		out.Reason = "cannot start: " + err.Error()
		return out, fmt.Errorf("program: %w", err)
	}
	if len(a.Argv) == 0 {
		return fail(errors.New("empty argv"))
	}
	if err := ctx.Err(); err != nil {
		out.Status, out.Reason = Canceled, "canceled before it started"
		return out, err
	}
	if a.Grace <= 0 {
		a.Grace = DefaultGrace
	}
	if a.Poll <= 0 {
		a.Poll = DefaultPoll
	}
	env, err := environ(a.Env, cmp.Or(a.Home, a.Dir), a.Pass)
	if err != nil {
		return fail(err)
	}
	for _, d := range []string{a.Dir, a.LogDir, filepath.Dir(a.Metrics), cmp.Or(a.Home, a.Dir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(err)
		}
	}
	metrics, err := os.OpenFile(a.Metrics, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fail(err)
	}
	defer metrics.Close()
	stdout, err := os.Create(filepath.Join(a.LogDir, "stdout"))
	if err != nil {
		return fail(err)
	}
	defer stdout.Close()
	stderr, err := startStderr(filepath.Join(a.LogDir, "stderr"))
	if err != nil {
		return fail(err)
	}
	defer stderr.close()

	cmd := exec.Command(a.Argv[0], a.Argv[1:]...)
	cmd.Dir, cmd.Env = a.Dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, stdout, stderr.w
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	stderr.started()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	p := &proc{pgid: cmd.Process.Pid, grace: a.Grace, done: done}
	t := &tailer{a: &a, f: metrics, out: &out, lastLine: time.Now(), chunk: make([]byte, 64<<10)}

	ending, why := run(ctx, &a, t, p, &out)
	if ending != "" || p.alive() {
		p.end()
	}
	p.wait()
	stderr.drain(a.Grace)
	t.read(true)
	out.StderrTail = stderr.tail.lines()
	outcome(&out, cmd.ProcessState, ending, why, t)
	if ending == Canceled {
		return out, ctx.Err()
	}
	if err := syncAttempt(ctx, &a, t); err != nil {
		return out, fmt.Errorf("program: final sync: %w", err)
	}
	return out, nil
}

// syncAttempt reads the metrics file to its end, calls a.Sync, and pushes a.Mirror, in the order
// Attempt.Mirror gives.
func syncAttempt(ctx context.Context, a *Attempt, t *tailer) error {
	settle := func() error {
		t.read(false)
		if a.Sync == nil {
			return nil
		}
		return a.Sync(ctx)
	}
	if a.Mirror == nil {
		return settle()
	}
	_, err := a.Mirror.Push(ctx, settle)
	return err
}

// run watches the program until it exits or must be ended, and returns why it must be
// ("" once it has exited by itself).
func run(ctx context.Context, a *Attempt, t *tailer, p *proc, out *Outcome) (Status, string) {
	tick := time.NewTicker(a.Poll)
	defer tick.Stop()
	for {
		select {
		case err := <-p.done:
			p.exited, p.err = true, err
			return "", ""
		case <-ctx.Done():
			return Canceled, "canceled: " + context.Cause(ctx).Error()
		case <-tick.C:
		}
		p.watch()
		t.read(false)
		if t.diverged {
			return Diverged, ""
		}
		if a.Stall > 0 && time.Since(t.lastLine) > a.Stall {
			if out.Lines == 0 { // a resumed attempt's step is its checkpoint's, which only the program knows
				return Stalled, fmt.Sprintf("no metrics line for %v since the attempt started", a.Stall)
			}
			return Stalled, fmt.Sprintf("no metrics line for %v (last step %d)", a.Stall, out.Last.Step)
		}
		seen := t.untilSeen // the rung's line was read before this push walked the directory
		err := syncAttempt(ctx, a, t)
		if err != nil && ctx.Err() == nil && len(out.SyncErrors) < syncErrorsKept {
			out.SyncErrors = append(out.SyncErrors, fmt.Sprintf("at step %d: %v", out.Last.Step, err))
		}
		if seen && err == nil {
			return Stopped, fmt.Sprintf("reached step %d of rung %d", t.untilStep, a.Until)
		}
	}
}

// outcome fills out's status, exit and reason from how the program ended.
func outcome(out *Outcome, ps *os.ProcessState, ending Status, why string, t *tailer) {
	exit := "never exited"
	if ps != nil {
		out.ExitCode = ps.ExitCode()
		exit = fmt.Sprintf("exit status %d", out.ExitCode)
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.ExitCode, out.Signal = -1, ws.Signal().String()
			exit = "signal " + out.Signal
		}
	}
	if ending == "" && t.diverged {
		ending = Diverged
	}
	switch {
	case ending == Diverged || (ending == "" && out.ExitCode == 3):
		out.Status = Diverged
		if t.diverged {
			out.DivergedAt = t.divergedAt
			out.Reason = fmt.Sprintf("non-finite loss at step %d (%s)", t.divergedAt, exit)
		} else {
			out.DivergedAt = out.Last.Step
			out.Reason = fmt.Sprintf("%s: the program diverged at step %d", exit, out.Last.Step)
		}
	case ending != "":
		out.Status, out.Reason = ending, why+"; ended: "+exit
	case out.ExitCode == 0 && !t.sawVal:
		out.Status, out.Reason = Failed, "exit status 0 without a metrics line with a validation loss"
	case out.ExitCode == 0:
		out.Status = Completed
	case out.ExitCode == 2:
		out.Status, out.Reason = Invalid, exit+": invalid config"
	default:
		out.Status, out.Reason = Failed, exit
	}
	if out.Status != Completed {
		if s := summary(out.StderrTail); s != "" {
			out.Reason += ": " + s
		}
	}
}

// summary is the last few lines of stderr on one line.
func summary(tail []string) string {
	var last []string
	for i := len(tail) - 1; i >= 0 && len(last) < 3; i-- {
		if l := strings.TrimSpace(tail[i]); l != "" {
			last = append([]string{l}, last...)
		}
	}
	return truncate(strings.Join(last, " | "), 500)
}

// environ is the program's environment: the few variables of ours it may see and those
// the patterns pass (never SFSWEEP_* or AWS_*), its own HOME, then extra, then
// PYTHONUNBUFFERED=1, so that its metrics and logs are not held in a buffer.
func environ(extra map[string]string, home string, pass []string) ([]string, error) {
	env := map[string]string{"HOME": home}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "USER", k == "LANG", k == "TZ", strings.HasPrefix(k, "LC_"), passEnv(k, pass):
			env[k] = v
		}
	}
	for k, v := range extra {
		if !validEnv.MatchString(k) || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("environment variable %q: not a name, or a value with a NUL byte", k)
		}
		env[k] = v
	}
	env["PYTHONUNBUFFERED"] = "1"
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out, nil
}
