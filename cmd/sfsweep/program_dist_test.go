package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/workflows"
)

// TestProgramTrainerDistributed runs program trials on a cluster of separate parts (a
// Temporal server, an S3 gateway, worker processes with a registry of trainers):
//   - submit refuses a manifest that defines its program;
//   - in a pool of workers with different registries, or none, a trial goes only to a
//     worker that has its trainer at its identity: a sweep submitted by a relative path
//     completes every trial, one of another version waits for a worker that has it (a
//     rolling update), one of an unregistered trainer waits and never runs;
//   - a worker SIGKILLed mid-trial takes its program with it, and another worker resumes
//     the trial from the checkpoint the program left in the store;
//   - a sweep canceled while its program trains leaves no program running.
func TestProgramTrainerDistributed(t *testing.T) {
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server and worker processes")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	if err := os.Mkdir(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	registry := filepath.Join(dir, "trainers.yaml")
	reg := fmt.Sprintf("trainers:\n  fake:\n    program: %s\n    version: fake-1\n    env: {%s: \"1\", FAKE_PIDDIR: %q}\n", self, fakeTrainerEnv, pids)
	if err := os.WriteFile(registry, []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, srv, gw, _ := startRemote(ctx, t)
	tc, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: devserver.DefaultNamespace, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	cache := filepath.Join(dir, "cache")
	cpuLog := startCPUWorker(ctx, t, cache)
	bucket := filepath.Join(gw.Root(), gw.Bucket())

	submit := func(name, trainer, params string) (string, int, string) {
		t.Helper()
		file := filepath.Join(dir, name+".yaml")
		src := fmt.Sprintf("name: %s\ntrainer: %s\nparameters: %s\nsteps: 8\nseeds: [1]\n", name, trainer, params)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := runMain(ctx, []string{"submit", "-heartbeat", "3s", "-retry-initial", "100ms", file}, &out, &errb)
		return strings.TrimSpace(out.String()), code, errb.String()
	}
	wait := func(id string) workflows.SweepResult {
		t.Helper()
		var res workflows.SweepResult
		if err := tc.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
			t.Fatalf("sweep %s: %v\n%s", id, err, cpuLog.String())
		}
		return res
	}

	// a manifest that carries a command line never reaches a worker
	if _, code, msg := submit("hostile", fmt.Sprintf("{name: fake, version: fake-1, program: %s}", self), "{mode: ok}"); code == 0 || !strings.Contains(msg, "registered") {
		t.Fatalf("submit of a manifest with a program: exit %d, %s", code, msg)
	}

	// A pool that mixes registries: worker A has trainer fake at version fake-1 (its
	// program by a path relative to its registry), worker X runs no trainer, worker C
	// comes later with fake-2, as a rolling update brings it. Each trial goes only to a
	// worker that has its trainer at its identity, and waits until one does: nothing
	// fails, and a trainer no worker registered never runs.
	if err := os.WriteFile(filepath.Join(dir, "train.sh"), []byte(fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", self)), 0o755); err != nil {
		t.Fatal(err)
	}
	relReg := filepath.Join(dir, "trainers-rel.yaml")
	if err := os.WriteFile(relReg, []byte(strings.Replace(reg, "program: "+self, "program: train.sh", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	workerA := startProcess(ctx, t, dir, "worker A", "worker", "-queue", "gpu", "-cache", cache, "-trainers", "trainers-rel.yaml")
	workerX := startProcess(ctx, t, dir, "worker X", "worker", "-queue", "gpu", "-cache", cache)
	waitFor(ctx, t, "worker A's trainer", func() bool { return strings.Contains(workerA.output(), "identity version:fake-1") }, workerA)
	otherID, code, msg := submit("other-version", "{name: fake, version: fake-2}", "{mode: ok}")
	if code != 0 {
		t.Fatalf("submit other-version: exit %d: %s", code, msg)
	}
	evilID, code, msg := submit("unregistered", "{name: evil, version: x}", "{mode: ok}")
	if code != 0 {
		t.Fatalf("submit unregistered: exit %d: %s", code, msg)
	}
	// submitted by a relative path, from the manifest's folder
	if err := os.WriteFile(filepath.Join(dir, "mixed.yaml"), []byte("name: mixed\ntrainer: {name: fake, version: fake-1}\nparameters: {mode: ok, q: [0.1, 0.2, 0.3, 0.4]}\nsteps: 4\nseeds: [1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := startProcess(ctx, t, dir, "submit mixed", "submit", "-retry-initial", "100ms", "mixed.yaml")
	if code := sub.exitCode(); code != 0 {
		t.Fatalf("submit mixed.yaml: exit %d\n%s", code, sub.output())
	}
	mixedID := regexp.MustCompile(`sweep-mixed-[0-9a-f]+`).FindString(sub.output())
	if res := wait(mixedID); res.Progress.Completed != 4 || res.Progress.Failed != 0 {
		t.Fatalf("mixed pool: progress %+v, want all 4 trials completed\nworker A:\n%s\nworker X:\n%s", res.Progress, workerA.output(), workerX.output())
	}
	for _, id := range []string{otherID, evilID} {
		var p workflows.SweepProgress
		v, err := tc.QueryWorkflow(ctx, id, "", workflows.QueryProgress)
		if err == nil {
			err = v.Get(&p)
		}
		if err != nil || p.Failed != 0 || p.Completed != 0 || p.Done() {
			t.Fatalf("sweep %s, whose trainer no worker has: progress %+v (%v), want its trial waiting", id, p, err)
		}
	}
	var st, stErr bytes.Buffer
	if code := runMain(ctx, []string{"status", evilID}, &st, &stErr); code != 0 || !strings.Contains(st.String(), "waiting for a worker with trainer evil at the trial's identity") {
		t.Errorf("status of a trial whose trainer no worker has: exit %d\n%s%s", code, st.String(), stErr.String())
	}
	regC := filepath.Join(dir, "trainers-2.yaml")
	if err := os.WriteFile(regC, []byte(strings.Replace(reg, "version: fake-1", "version: fake-2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(ctx, t, dir, "worker C", "worker", "-queue", "gpu", "-cache", cache, "-trainers", regC)
	if res := wait(otherID); res.Progress.Completed != 1 {
		t.Fatalf("other-version once worker C has fake-2: progress %+v", res.Progress)
	}
	var out, errb bytes.Buffer
	if code := runMain(ctx, []string{"cancel", evilID}, &out, &errb); code != 0 {
		t.Fatalf("cancel: exit %d: %s", code, errb.String())
	}
	if left := fakeTrainerProcs(pids); len(left) > 0 {
		t.Fatalf("programs left running: pids %v", left)
	}
	if strings.Contains(workerX.output(), "train attempt failed") {
		t.Errorf("worker X, which runs no trainer, took a program trial:\n%s", workerX.output())
	}

	// a worker killed mid-trial: its program dies with it; another worker resumes
	stepTwo := func() int {
		ck, _ := filepath.Glob(filepath.Join(bucket, "trials", "*", "program", "checkpoints", "step-2"))
		return len(ck)
	}
	before := stepTwo() // the mixed sweep's
	id, code, msg := submit("killed", "{name: fake, version: fake-1}", "{mode: slow, q: 0.25}")
	if code != 0 {
		t.Fatalf("submit: exit %d: %s", code, msg)
	}
	waitFor(ctx, t, "the program's checkpoint of step 2 in the store", func() bool { return stepTwo() == before+1 }, workerA)
	running := fakeTrainerProcs(pids)
	// the killed attempt's output is in the store already, streamed while it ran
	waitFor(ctx, t, "the running attempt's stderr in the store", func() bool {
		logs, _ := filepath.Glob(filepath.Join(bucket, "trials", "*", "program", "logs", "attempt-1.stderr"))
		for _, l := range logs {
			if b, _ := os.ReadFile(l); strings.Contains(string(b), "fake: slow attempt 1 from step 0") {
				return true
			}
		}
		return false
	}, workerA)
	workerA.kill(t)
	waitFor(ctx, t, "the killed worker's program to end", func() bool {
		for _, p := range fakeTrainerProcs(pids) {
			for _, q := range running {
				if p == q {
					return false
				}
			}
		}
		return true
	})
	workerB := startProcess(ctx, t, dir, "worker B", "worker", "-queue", "gpu", "-cache", cache, "-trainers", registry)
	if res := wait(id); res.Progress.Completed != 1 {
		t.Fatalf("killed: progress %+v\nworker B:\n%s", res.Progress, workerB.output())
	}
	resumed := false
	logs, _ := filepath.Glob(filepath.Join(bucket, "trials", "*", "program", "logs", "attempt-*.stderr"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		resumed = resumed || strings.Contains(string(b), "fake: slow attempt 2 from step ")
	}
	if !resumed {
		t.Errorf("no second attempt resumed from a checkpoint: logs %v", logs)
	}
	for _, tr := range readAllTrialsUnder(t, filepath.Join(bucket, "trials")) {
		if tr.config.Trainer.Params["mode"] != "slow" {
			continue
		}
		var steps []int
		for _, p := range tr.curves {
			steps = append(steps, p.Step)
		}
		if tr.result == nil || tr.result.Status != status.Completed || fmt.Sprint(steps) != "[1 2 3 4 5 6 7 8]" {
			t.Errorf("killed trial: result %+v, curve steps %v", tr.result, steps)
		}
	}

	// canceled while its program trains: no program is left
	id, code, msg = submit("canceled", "{name: fake, version: fake-1}", "{mode: slow, q: 0.75}")
	if code != 0 {
		t.Fatalf("submit: exit %d: %s", code, msg)
	}
	waitFor(ctx, t, "the program to start", func() bool { return len(fakeTrainerProcs(pids)) > 0 }, workerB)
	out.Reset()
	errb.Reset()
	if code := runMain(ctx, []string{"cancel", id}, &out, &errb); code != 0 {
		t.Fatalf("cancel: exit %d: %s", code, errb.String())
	}
	waitFor(ctx, t, "no program running after the cancel", func() bool { return len(fakeTrainerProcs(pids)) == 0 }, workerB)
}
