package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
//   - submit refuses a manifest that defines its program; a trial naming a trainer the
//     workers have not registered, or another version of it, fails without running
//     anything;
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

	workerA := startProcess(ctx, t, dir, "worker A", "worker", "-queue", "gpu", "-cache", cache, "-trainers", registry)
	for _, c := range []struct{ name, trainer, want string }{
		{"unregistered", "{name: evil, version: x}", "not registered on this worker"},
		{"other-version", "{name: fake, version: fake-2}", "this worker's is version:fake-1, the trial's version:fake-2"},
	} {
		id, code, msg := submit(c.name, c.trainer, "{mode: ok}")
		if code != 0 {
			t.Fatalf("submit %s: exit %d: %s", c.name, code, msg)
		}
		if res := wait(id); res.Progress.Failed != 1 {
			t.Fatalf("%s: progress %+v, want the trial failed", c.name, res.Progress)
		}
		failed, _ := filepath.Glob(filepath.Join(bucket, "trials", "*", "failed.json"))
		found := false
		for _, f := range failed {
			b, _ := os.ReadFile(f)
			found = found || strings.Contains(string(b), c.want)
		}
		if !found {
			b, _ := os.ReadFile(failed[0])
			t.Fatalf("%s: no failure says %q: %s", c.name, c.want, b)
		}
	}
	if left := fakeTrainerProcs(pids); len(left) > 0 {
		t.Fatalf("a refused trainer ran: pids %v", left)
	}

	// a worker killed mid-trial: its program dies with it; another worker resumes
	id, code, msg := submit("killed", "{name: fake, version: fake-1}", "{mode: slow, q: 0.25}")
	if code != 0 {
		t.Fatalf("submit: exit %d: %s", code, msg)
	}
	waitFor(ctx, t, "the program's checkpoint of step 2 in the store", func() bool {
		ck, _ := filepath.Glob(filepath.Join(bucket, "trials", "*", "program", "checkpoints", "step-2"))
		return len(ck) == 1
	}, workerA)
	running := fakeTrainerProcs(pids)
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
	var out, errb bytes.Buffer
	if code := runMain(ctx, []string{"cancel", id}, &out, &errb); code != 0 {
		t.Fatalf("cancel: exit %d: %s", code, errb.String())
	}
	waitFor(ctx, t, "no program running after the cancel", func() bool { return len(fakeTrainerProcs(pids)) == 0 }, workerB)
}
