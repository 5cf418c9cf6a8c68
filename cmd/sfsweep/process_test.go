package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/infra/s3gw"
)

// setRemoteEnv points the distributed-mode commands (and the processes this test starts,
// which inherit the environment) at srv and gw.
func setRemoteEnv(t *testing.T, srv *devserver.Server, gw *s3gw.Gateway) {
	creds := gw.Credentials()
	for k, v := range map[string]string{
		"TEMPORAL_ADDRESS": srv.HostPort(), "TEMPORAL_NAMESPACE": devserver.DefaultNamespace,
		"SFSWEEP_S3_ENDPOINT": gw.Endpoint(), "SFSWEEP_S3_BUCKET": gw.Bucket(), "SFSWEEP_S3_REGION": gw.Region(),
		"AWS_ACCESS_KEY_ID": creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": creds.SecretAccessKey,
	} {
		t.Setenv(k, v)
	}
}

// startCPUWorker runs a cpu worker (workflows, planning, tables) in this process until the
// test ends, its log in the buffer it returns.
func startCPUWorker(ctx context.Context, t *testing.T, cache string) *syncBuffer {
	t.Helper()
	log := &syncBuffer{}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan int)
	go func() { done <- runMain(wctx, []string{"worker", "-queue", "cpu", "-cache", cache}, log, log) }()
	t.Cleanup(func() { stop(); <-done })
	return log
}

// waitFor polls cond every 5 ms until it holds, failing the test (with the output of the
// processes given) if ctx ends first or one of them exits.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool, procs ...*process) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v\n%s", what, ctx.Err(), outputs(procs))
		case <-tick.C:
		}
		for _, p := range procs {
			if p.exited() {
				t.Fatalf("waiting for %s: %s exited\n%s", what, p.name, outputs(procs))
			}
		}
	}
}

func outputs(procs []*process) string {
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "--- %s:\n%s\n", p.name, p.output())
	}
	return b.String()
}

// process is the test binary re-executed as the sfsweep command.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}

	mu       sync.Mutex
	lines    []line
	watchers []watcher
}

// line is a line of a process's output and the time it arrived.
type line struct {
	text string
	at   time.Time
}

type watcher struct {
	substr string
	at     chan time.Time
}

// startProcess runs "sfsweep args..." as a child process in dir, with this process's
// environment; ctx ending kills it.
func startProcess(ctx context.Context, t *testing.T, dir, name string, args ...string) *process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{name: name, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, exe, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), reexecEnv+"=1")
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	scanned := make(chan struct{})
	go func() { p.scan(pr); close(scanned) }()
	go func() {
		p.cmd.Wait()
		pw.Close()
		<-scanned
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// scan keeps the process's output, line by line with the time each arrived, and tells
// the watchers.
func (p *process) scan(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := line{sc.Text(), time.Now()}
		p.mu.Lock()
		p.lines = append(p.lines, l)
		ws := p.watchers[:0]
		for _, w := range p.watchers {
			if strings.Contains(l.text, w.substr) {
				w.at <- l.at
			} else {
				ws = append(ws, w)
			}
		}
		p.watchers = ws
		p.mu.Unlock()
	}
	io.Copy(io.Discard, r)
}

// await returns a channel that receives the time the first line of output containing
// substr arrived.
func (p *process) await(substr string) <-chan time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := make(chan time.Time, 1)
	for _, l := range p.lines {
		if strings.Contains(l.text, substr) {
			c <- l.at
			return c
		}
	}
	p.watchers = append(p.watchers, watcher{substr, c})
	return c
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", p.name, err)
	}
	<-p.done
}

// interrupt asks the process to stop (os.Interrupt, as Ctrl-C) and waits for it: it must
// exit with status 0 within 10 s.
func (p *process) interrupt(t *testing.T) {
	t.Helper()
	if p.exited() {
		t.Errorf("%s exited before it was asked to stop\n%s", p.name, p.output())
		return
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%s: exit %d on interrupt\n%s", p.name, code, p.output())
		}
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not stop on interrupt", p.name)
		p.cmd.Process.Kill()
		<-p.done
	}
}

// exitCode is the process's exit status once it has exited.
func (p *process) exitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
