package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ddpProgram is a trainer of two or more ranks under torchrun, written from docs/trainer.md
// alone: the ranks all-reduce their gradients over gloo (the CPU's backend); rank 0 alone
// writes the metrics lines and, after each, its checkpoint, from which every rank resumes.
// With $KILL_RANK1 set, rank 1 SIGKILLs itself at step 3 of its first attempt. With
// $WINDOWS, rank 0 marks its times there (mark).
const ddpProgram = markTimes + `import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
if rank == 0:
    mark("ddp")
steps = int(os.environ["SFSWEEP_STEPS"])
ckpt = os.environ["SFSWEEP_CHECKPOINT_DIR"]
latest = os.path.join(ckpt, "latest.pt")
start, w = 0, torch.zeros(4, dtype=torch.float64)
if os.path.exists(latest):
    state = torch.load(latest)
    start, w = state["step"], state["w"]
if rank == 0:
    print("from step %d, CUDA_VISIBLE_DEVICES=%s" % (start, os.environ.get("CUDA_VISIBLE_DEVICES", "")), flush=True)
target = torch.arange(4, dtype=torch.float64)
for step in range(start + 1, steps + 1):
    g = (w - target) * (rank + 1)
    dist.all_reduce(g)
    w -= 0.1 * g / (world * (world + 1) / 2)
    if rank == 1 and step == 3 and os.environ["SFSWEEP_ATTEMPT"] == "1" and os.environ.get("KILL_RANK1"):
        os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()
    if rank == 0:
        loss = float(((w - target) ** 2).sum())
        with open(os.environ["SFSWEEP_METRICS"], "a") as f:
            f.write(json.dumps({"step": step, "train_loss": loss, "val_loss": loss, "world": world, "from": start}) + "\n")
        os.makedirs(ckpt, exist_ok=True)
        torch.save({"step": step, "w": w}, latest + ".tmp")
        os.replace(latest + ".tmp", latest)
        mark("ddp")
    time.sleep(0.2)
dist.destroy_process_group()
`

// markTimes defines mark(tag): with $WINDOWS set, it appends the time to the file
// $WINDOWS/<tag>-<trial>-<pid>, so that a test can tell when each attempt ran.
const markTimes = `import json, os, signal, sys, time
def mark(tag):
    if os.environ.get("WINDOWS"):
        with open(os.path.join(os.environ["WINDOWS"], "%s-%s-%d" % (tag, os.environ["SFSWEEP_TRIAL_ID"], os.getpid())), "a") as f:
            f.write("%f\n" % time.time())
`

// oneProgram is a trainer of one GPU that takes half a second a step and marks its times.
const oneProgram = markTimes + `mark("one")
for step in range(1, int(os.environ["SFSWEEP_STEPS"]) + 1):
    time.sleep(0.5)
    mark("one")
    with open(os.environ["SFSWEEP_METRICS"], "a") as f:
        f.write(json.dumps({"step": step, "train_loss": 1.0, "val_loss": 1.0}) + "\n")
`

// A trial of two GPUs (gpus: 2) of a trainer with launcher: torchrun, through sfsweep run
// on three stand-in GPUs: two ranks under Debian's torchrun, given the first two GPUs; rank
// 1's SIGKILL fails the first attempt, and the second resumes from rank 0's checkpoint and
// completes.
func TestRunTorchrunTrial(t *testing.T) {
	requireTorchrun(t)
	ctx := serverTest(t, 4*time.Minute, "runs sfsweep run on the embedded stack")
	standInGPUsOnly(t, 3, 4096)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ddp.py"), []byte(ddpProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "name: ddp\ngpus: 2\ntrainer: {name: ddp, program: ddp.py, interpreter: /usr/bin/python3, launcher: torchrun, env: {KILL_RANK1: \"1\"}}\nsteps: 6\nseeds: [1]\n"
	if err := os.WriteFile(filepath.Join(dir, "ddp.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := startProcess(ctx, t, dir, "run", "run", "-ui=false", "ddp.yaml")
	<-run.done
	if code := run.exitCode(); code != 0 || !strings.Contains(run.output(), "1 completed") {
		t.Fatalf("run: exit %d\n%s", code, run.output())
	}
	trials := readAllTrials(t, filepath.Join(dir, ".sfsweep"))
	if len(trials) != 1 || trials[0].result == nil {
		t.Fatalf("trials %+v", trials)
	}
	tr := trials[0]
	if tr.config.GPUs != 2 {
		t.Errorf("config gpus %d, want 2", tr.config.GPUs)
	}
	if seen := visibleDevices(t, tr); len(seen) != 2 || seen[0] != "GPU-stand-in-0,GPU-stand-in-1" || seen[1] != seen[0] {
		t.Errorf("rank 0 saw CUDA_VISIBLE_DEVICES %q in its two attempts, want GPU-stand-in-0,GPU-stand-in-1 in each", seen)
	}
	var steps []int
	for _, p := range tr.curves {
		steps = append(steps, p.Step)
	}
	if !slices.Equal(steps, []int{1, 2, 3, 4, 5, 6}) {
		t.Errorf("curve steps %v, want 1..6, each once: the second attempt resumed where the first left off", steps)
	}
	var from []string
	for _, l := range tr.logs {
		if b, err := os.ReadFile(l); err == nil && !strings.HasSuffix(l, ".json") {
			for _, m := range regexp.MustCompile(`(?m)^from step (\d+),`).FindAllStringSubmatch(string(b), -1) {
				from = append(from, m[1])
			}
		}
	}
	if len(from) != 2 || from[0] != "0" || from[1] == "0" {
		t.Errorf("the attempts started from steps %v, want 0, then the checkpoint rank 0 wrote before rank 1 died", from)
	}
}

// A trial of several GPUs is refused before anything runs where it could never start: its
// trainer has no launcher, or the machine has fewer GPUs.
func TestRunTorchrunRefused(t *testing.T) {
	requireTorchrun(t)
	ctx := serverTest(t, time.Minute, "runs sfsweep run")
	standInGPUsOnly(t, 3, 4096)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ddp.py"), []byte(ddpProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"no launcher", "name: plain\ngpus: 2\ntrainer: {name: plain, program: ddp.py, interpreter: sh}\nsteps: 6\nseeds: [1]\n", "gpus = 2: trainer plain has no launcher"},
		{"four of three", "name: four\ngpus: 4\ntrainer: {name: ddp, program: ddp.py, interpreter: /usr/bin/python3, launcher: torchrun}\nsteps: 6\nseeds: [1]\n", "gpus = 4: this machine has 3 GPUs"},
	} {
		file := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(file, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p := startProcess(ctx, t, dir, tc.name, "run", "-ui=false", tc.name+".yaml")
		<-p.done
		if code := p.exitCode(); code == 0 || !strings.Contains(p.output(), tc.want) {
			t.Errorf("%s: exit %d, %s; want it refused: %q", tc.name, code, p.output(), tc.want)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s: refused after %v", tc.name, d)
		}
	}
}

// requireTorchrun skips a test where Debian's Python has no torchrun, saying so.
func requireTorchrun(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import torch.distributed.run").Run(); err != nil {
		t.Skipf("/usr/bin/python3 cannot import torch.distributed.run (apt-get install python3-torch): %v", err)
	}
}

// A node of two stand-in GPUs, "sfsweep worker -gpus all -trainers": beside the process of
// each GPU, the node's process trains a trial of gpus: 2 under torchrun, taking both GPUs
// whole from the trials of one GPU the processes of each train (two at once on each GPU,
// eight in all): it starts only once those running have ended, none starts while it waits
// or runs, and all complete.
func TestNodeTorchrunTrial(t *testing.T) {
	requireTorchrun(t)
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server and trains")
	standInGPUsOnly(t, 2, 4096)
	dir, _, gw, _ := startRemote(ctx, t)
	windows := filepath.Join(dir, "windows")
	for name, src := range map[string]string{"ddp.py": ddpProgram, "one.py": oneProgram} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(windows, 0o755); err != nil {
		t.Fatal(err)
	}
	registry := filepath.Join(dir, "trainers.yaml")
	reg := fmt.Sprintf(`trainers:
  one:
    program: one.py
    interpreter: /usr/bin/python3
    version: one-1
    env: {WINDOWS: %[1]q}
    gpu_memory: 1GiB
  ddp:
    program: ddp.py
    interpreter: /usr/bin/python3
    version: ddp-1
    launcher: torchrun
    env: {WINDOWS: %[1]q}
`, windows)
	if err := os.WriteFile(registry, []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	node := startProcess(ctx, t, dir, "gpu node", "worker", "-queue", "all", "-gpus", "all", "-slots", "4",
		"-cache", filepath.Join(dir, "cache"), "-trainers", registry)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the node's output:\n%s", node.output())
		}
	})
	write := func(name, src string) string {
		file := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	s := sweeper{t, ctx}
	ones := s.cmd("submit", write("ones", "name: ones\ngpus: 1\ntrainer: {name: one, version: one-1}\nsteps: 16\nseeds: [1, 2, 3, 4, 5, 6, 7, 8]\n"))
	waitFor(ctx, t, "a trial of one GPU to start", func() bool {
		m, _ := filepath.Glob(filepath.Join(windows, "one-*"))
		return len(m) > 0
	}, node)
	ddp := s.cmd("submit", write("ddp", "name: ddp\ngpus: 2\ntrainer: {name: ddp, version: ddp-1}\nsteps: 4\nseeds: [1]\n"))
	if st := s.finish(ddp, node); st.Completed != 1 {
		t.Fatalf("ddp: %+v", st)
	}
	if st := s.finish(ones, node); st.Completed != 8 {
		t.Fatalf("ones: %+v", st)
	}
	if !strings.Contains(node.output(), "(node)") {
		t.Error("no node process started")
	}
	span := func(file string) (first, last float64) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Fields(string(b)) {
			v, err := strconv.ParseFloat(l, 64)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = v
			}
			last = v
		}
		return first, last
	}
	ddpRuns, _ := filepath.Glob(filepath.Join(windows, "ddp-*"))
	oneRuns, _ := filepath.Glob(filepath.Join(windows, "one-*"))
	if len(ddpRuns) != 1 || len(oneRuns) < 8 {
		t.Fatalf("attempts: ddp %v, one %v", ddpRuns, oneRuns)
	}
	d0, d1 := span(ddpRuns[0])
	for _, f := range oneRuns {
		if o0, o1 := span(f); o0 < d1 && d0 < o1 {
			t.Errorf("%s ran from %.2f to %.2f, while the trial of two GPUs ran from %.2f to %.2f", filepath.Base(f), o0, o1, d0, d1)
		}
	}
	trials := readAllTrialsUnder(t, filepath.Join(gw.Root(), gw.Bucket(), "trials"))
	for _, tr := range trials {
		if tr.config.GPUs == 2 {
			if seen := visibleDevices(t, tr); len(seen) != 1 || seen[0] != "GPU-stand-in-0,GPU-stand-in-1" {
				t.Errorf("the trial of two GPUs saw CUDA_VISIBLE_DEVICES %q", seen)
			}
		}
	}
	node.interrupt(t)
}
