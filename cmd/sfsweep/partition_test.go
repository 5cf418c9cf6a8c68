package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/workflows"
)

// cutProxy forwards TCP connections to a target until it is cut: then it closes every
// connection it carries and every new one at once, as a network partition would, until it
// is joined again.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *cutProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// setCut cuts the proxy (closing what it carries) or joins it again.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

// A gpu worker is cut off from Temporal in the middle of a trial while it keeps running
// and keeps reaching S3 (a network partition). Its heartbeats stop reaching the server,
// the Train activity times out and a second gpu worker takes the retry, resuming from the
// newest checkpoint, while the first one may still be training and writing the same
// trial's objects. The trial's result and curves are bitwise those of an uninterrupted
// run, every checkpoint verifies; when the partition heals, the cut-off worker is still
// serving and trains the next trial it is given.
func TestWorkerPartitioned(t *testing.T) {
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server, worker processes, and trains")
	lab := newGPULab(ctx, t, killManifest)
	const ckEvery = 50
	proxy := startCutProxy(t, lab.srv.HostPort())
	workerA := startProcess(ctx, t, lab.dir, "worker A", "worker", "-queue", "gpu", "-cache", lab.cache, "-temporal-address", proxy.addr())
	defer workerA.interrupt(t)
	sweepID := lab.submit(ctx, t, lab.manifest)
	lab.waitPastCheckpoint(ctx, t, ckEvery, workerA)
	proxy.setCut(true)
	cutStep := lastCurveStep(lab.objects)

	workerB := startProcess(ctx, t, lab.dir, "worker B", "worker", "-queue", "gpu", "-cache", lab.cache)
	var res workflows.SweepResult
	if err := lab.tc.GetWorkflow(ctx, sweepID, "").Get(ctx, &res); err != nil {
		t.Fatalf("sweep: %v\n%s", err, outputs([]*process{workerA, workerB}))
	}
	if p := res.Progress; p.Total != 1 || p.Completed != 1 {
		t.Fatalf("sweep progress %+v", p)
	}
	attempt, cause := trainAttempt(ctx, t, lab.tc, workflows.TrialWorkflowID(sweepID, lab.trial.ID))
	if attempt < 2 {
		t.Errorf("the Train activity completed on attempt %d: the partition caused no retry", attempt)
	}
	if workerA.exited() {
		t.Fatalf("worker A exited during the partition:\n%s", workerA.output())
	}
	// worker A trained on, cut off, until it finished or its SDK gave up on the heartbeats
	// (after the heartbeat timeout) and cancelled the attempt: wait for its end before
	// checking the objects both workers wrote
	actx, acancel := context.WithTimeout(ctx, time.Minute)
	defer acancel()
	waitFor(actx, t, "worker A to end its attempt", func() bool {
		out := workerA.output()
		return strings.Contains(out, "msg=finished") || strings.Contains(out, `msg="train attempt failed"`)
	}, workerA)
	ended := "finished it"
	if !strings.Contains(workerA.output(), "msg=finished") {
		ended = "had it cancelled"
	}
	lab.sameAsUninterrupted(ctx, t)
	bucket, err := blob.NewDir(filepath.Join(lab.gw.Root(), lab.gw.Bucket()))
	if err != nil {
		t.Fatal(err)
	}
	checkpointsVerify(ctx, t, bucket, lab.trial.ID)
	t.Logf("cut off at step %d; worker A %s; Train completed on attempt %d (last failure: %s)", cutStep, ended, attempt, cause)

	// the partition heals: worker B stops, and worker A alone trains a new trial
	proxy.setCut(false)
	workerB.interrupt(t)
	next := strings.Replace(killManifest, "seeds: [1]", "seeds: [2]", 1)
	next = strings.Replace(next, "steps: 400", "steps: 20", 1)
	next = strings.Replace(next, "name: worker-kill", "name: worker-kill-next", 1) // its own tables
	if next == killManifest {
		t.Fatal("the next manifest is the first")
	}
	nextFile := filepath.Join(lab.dir, "next.yaml")
	if err := os.WriteFile(nextFile, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := lab.tc.GetWorkflow(ctx, lab.submit(ctx, t, nextFile), "").Get(ctx, &res); err != nil || res.Progress.Completed != 1 {
		t.Fatalf("the next sweep on worker A after the partition: %+v, %v\n%s", res.Progress, err, workerA.output())
	}
}

// The Temporal server stops in the middle of a trial (its state in SQLite, as a
// persistent deployment keeps it) and starts again on the same port 5 s later, longer
// than the heartbeat timeout, while the gpu worker process and the cpu worker keep
// running and reconnect by themselves. The sweep completes with the trial bitwise equal to
// an uninterrupted run, and the worker never exits.
func TestServerRestartedUnderWorkers(t *testing.T) {
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server, worker processes, and trains")
	// long enough that training goes on through the server's stop (graceful, seconds),
	// its 5 s down and its start
	long := strings.Replace(killManifest, "steps: 400", "steps: 1200", 1)
	var opts devserver.Options
	lab := newGPULabWith(ctx, t, long, func(dir string) devserver.Options {
		opts = devserver.Options{DBPath: filepath.Join(dir, "temporal.db")}
		return opts
	})
	const ckEvery = 50
	worker := startProcess(ctx, t, lab.dir, "gpu worker", "worker", "-queue", "gpu", "-cache", lab.cache)
	defer worker.interrupt(t)
	sweepID := lab.submit(ctx, t, lab.manifest)
	lab.waitPastCheckpoint(ctx, t, ckEvery, worker)

	_, port, err := net.SplitHostPort(lab.srv.HostPort())
	if err != nil {
		t.Fatal(err)
	}
	stopStep := lastCurveStep(lab.objects)
	lab.srv.Stop()
	stoppedAt := time.Now()
	time.Sleep(5 * time.Second)
	opts.FrontendPort, _ = strconv.Atoi(port)
	if lab.srv, err = devserver.Start(ctx, opts); err != nil {
		t.Fatal(err)
	}
	down := time.Since(stoppedAt)

	var res workflows.SweepResult
	if err := lab.tc.GetWorkflow(ctx, sweepID, "").Get(ctx, &res); err != nil {
		t.Fatalf("sweep after the restart: %v\n%s\ncpu worker:\n%s", err, worker.output(), lab.cpuLog.String())
	}
	if p := res.Progress; p.Total != 1 || p.Completed != 1 {
		t.Fatalf("sweep progress %+v", p)
	}
	if worker.exited() {
		t.Fatalf("the gpu worker exited:\n%s", worker.output())
	}
	got := readResult(t, filepath.Join(lab.objects, keys.ResultName))
	sameResult(t, got, lab.want)
	attempt, cause := trainAttempt(ctx, t, lab.tc, workflows.TrialWorkflowID(sweepID, lab.trial.ID))
	t.Logf("server stopping at step %d, down %.1f s; sweep done %.1f s after the stop; Train completed on attempt %d (%s), resumed from step %d",
		stopStep, down.Seconds(), time.Since(stoppedAt).Seconds(), attempt, cause, got.Resumed)
}
