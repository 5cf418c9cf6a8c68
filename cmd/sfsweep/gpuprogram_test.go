package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/workflows"
)

// Program trials on a stand-in GPU, beside engine trials, with the fake trainer as their
// program, through "sfsweep worker -gpus" on the embedded stack. The GPU holds two engine
// trials; the worker's registry has three trainers: one that states no gpu_memory, one
// that states an engine trial's size, one larger than the GPU.
//   - A program of a stated size fits beside a training engine: it runs to its end while
//     the engine holds its memory.
//   - A program that states none takes the GPU whole: it waits, showing so in status,
//     until the engine has ended, and an engine trial that asks after it waits behind it
//     (though it would fit beside the first) until the program has ended (its sweep
//     canceled), then trains.
//   - A program larger than the GPU fails at once, not retried, with the figures, and
//     never starts.
func TestGPUProgramAdmission(t *testing.T) {
	ctx := serverTest(t, 5*time.Minute, "starts the embedded Temporal server and trains")
	dir, _, gw, _ := startRemote(ctx, t)
	engineA, per := gpuManifest(t, dir, "engine-a", "", "[1]")
	engineB, _ := gpuManifest(t, dir, "engine-b", "", "[2]")
	mib := mibFor(t, per, 2)
	capacity := mib<<20 - backend.ContextBytes
	gate := standInMachine(t, dir, 1, mib)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pids := filepath.Join(dir, "pids")
	if err := os.Mkdir(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	var reg strings.Builder
	reg.WriteString("trainers:\n")
	for name, memory := range map[string]string{"fake-whole": "", "fake-small": fmt.Sprintf("%dMiB", per>>20), "fake-huge": "1024GiB"} {
		fmt.Fprintf(&reg, "  %s:\n    program: %s\n    version: fake-1\n    env: {%s: \"1\", FAKE_PIDDIR: %q}\n", name, self, fakeTrainerEnv, pids)
		if memory != "" {
			fmt.Fprintf(&reg, "    gpu_memory: %s\n", memory)
		}
	}
	registry := filepath.Join(dir, "trainers.yaml")
	if err := os.WriteFile(registry, []byte(reg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	programManifest := func(trainer, mode string, steps int) string {
		file := filepath.Join(dir, trainer+".yaml")
		src := fmt.Sprintf("name: %s\nbackend: cuda\ntrainer: {name: %s, version: fake-1}\nparameters: {mode: %s}\nsteps: %d\nseeds: [1]\n", trainer, trainer, mode, steps)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	node := startProcess(ctx, t, dir, "gpu node", "worker", "-queue", "all", "-gpus", "0", "-slots", "3",
		"-cache", filepath.Join(dir, "cache"), "-trainers", registry)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the node's output:\n%s", node.output())
		}
	})
	s := sweeper{t, ctx}
	// heartbeats reach the server within seconds, for status
	submit := func(file string) string { return s.cmd("submit", "-heartbeat", "3s", file) }
	trialIn := func(id string) sweepclient.TrialState {
		if st := s.status(id); len(st.Trials) == 1 {
			return st.Trials[0]
		}
		return sweepclient.TrialState{}
	}

	// a program of a stated size trains beside an engine that holds its memory
	a := submit(engineA)
	waitFor(ctx, t, "engine A made", func() bool { return engines(t, gate) == 1 }, node)
	if st := s.finish(submit(programManifest("fake-small", "ok", 8)), node); st.Completed != 1 {
		t.Fatalf("program of gpu_memory %d MiB beside engine A: %+v\n%s", per>>20, st, node.output())
	}
	if st := s.status(a); st.Done() || engines(t, gate) != 1 {
		t.Fatalf("engine A ended, or another engine was made, before the gate opened: %+v", st)
	}

	// a program that states no size waits for the whole GPU, holds it whole while it runs
	// (it hangs at step 3), and gives it back when its sweep is canceled
	whole := submit(programManifest("fake-whole", "hang", 8))
	want := fmt.Sprintf("waiting for GPU memory: needs %s, %s free on GPU 0", backend.GiB(capacity), backend.GiB(capacity-per))
	waitFor(ctx, t, "the whole-GPU program waiting for memory", func() bool {
		return trialIn(whole).State == sweepclient.TrialAdmitting || len(fakeTrainerProcs(pids)) > 0
	}, node)
	if left := fakeTrainerProcs(pids); len(left) > 0 {
		t.Fatalf("the whole-GPU program started beside engine A: pids %v", left)
	}
	tr := trialIn(whole)
	if tr.Waiting != want {
		t.Errorf("the whole-GPU program: %+v, want %q", tr, want)
	}
	if text := s.cmd("status", whole); !strings.Contains(text, "trial "+tr.ID+": "+want) {
		t.Errorf("status does not show the program waiting (%q):\n%s", want, text)
	}
	b := submit(engineB)
	waitFor(ctx, t, "engine B waiting behind the program", func() bool { return trialIn(b).State == sweepclient.TrialAdmitting }, node)
	if left := fakeTrainerProcs(pids); len(left) > 0 || engines(t, gate) != 1 {
		t.Fatalf("while engine A trains: programs %v running, %d engines made; want none and A's", left, engines(t, gate))
	}
	openGate(t, gate)
	if st := s.finish(a, node); st.Completed != 1 {
		t.Fatalf("engine A: %+v\n%s", st, node.output())
	}
	waitFor(ctx, t, "the whole-GPU program holding the GPU, engine B waiting", func() bool {
		g := trialIn(whole).GPU
		return len(fakeTrainerProcs(pids)) == 1 && g != nil && g.Reserved == capacity && g.Free == 0 && g.Trials == 1 && g.Waiting == 1
	}, node)
	time.Sleep(2 * time.Second) // time for engine B to be made, were it admitted
	if n := engines(t, gate); n != 1 || len(fakeTrainerProcs(pids)) != 1 {
		t.Fatalf("%d engines made while the whole-GPU program runs, want engine A's alone", n)
	}
	s.cmd("cancel", whole)
	waitFor(ctx, t, "no program running after the cancel", func() bool { return len(fakeTrainerProcs(pids)) == 0 }, node)
	if st := s.finish(b, node); st.Completed != 1 || engines(t, gate) != 2 {
		t.Fatalf("engine B after the program was canceled: %+v, %d engines made\n%s", st, engines(t, gate), node.output())
	}
	for _, e := range standInEvents(node.output()) {
		if e.live > 1 {
			t.Errorf("%s holds %d engines: engine B was admitted beside engine A, before the program waiting ahead of it", e.gpu, e.live)
		}
	}

	// a program larger than the GPU fails at once, once, and never runs
	if st := s.finish(submit(programManifest("fake-huge", "ok", 8)), node); st.Failed != 1 {
		t.Fatalf("program larger than the GPU: %+v\n%s", st, node.output())
	}
	var failures []string
	for l := range strings.Lines(node.output()) {
		if strings.Contains(l, "ActivityType=Train Attempt=") && strings.Contains(l, "fake-huge") {
			failures = append(failures, l)
		}
	}
	if len(failures) != 1 {
		t.Fatalf("%d failed attempts of the huge program, want 1", len(failures))
	}
	for _, w := range []string{"Attempt=1 ", "retryable: false", "trainer fake-huge", "gpu_memory 1024.00 GiB", "needs 1024.00 GiB", "larger than the whole device"} {
		if !strings.Contains(failures[0], w) {
			t.Errorf("the failure does not say %q: %s", w, failures[0])
		}
	}
	for _, tr := range readAllTrialsUnder(t, filepath.Join(gw.Root(), gw.Bucket(), "trials")) {
		if tr.config.Trainer != nil && tr.config.Trainer.Name == "fake-huge" && len(tr.logs) > 0 {
			t.Errorf("the huge program ran: its logs %v", tr.logs)
		}
	}
	node.interrupt(t)
}

// standInGPUsOnly makes the machine of n stand-in GPUs of mib MiB each for a build without
// the cuda engine: "sfsweep worker -gpus" and "sfsweep run" find the GPUs, and no process
// has an engine on them.
func standInGPUsOnly(t *testing.T, n int, mib int64) {
	t.Helper()
	if backend.Check("cuda") == nil {
		t.Skip("this build carries the cuda backend: it cannot stand for one without")
	}
	t.Setenv(standInCUDAEnv, "")
	t.Setenv(standInGPUsEnv, standInGPUs(n, mib))
	t.Setenv("SFSWEEP_GPU_LOCKS", t.TempDir()) // the stand-ins' UUIDs are every test's
}

// visibleDevices is each CUDA_VISIBLE_DEVICES the fake trainer logged in a trial's logs
// (its attempts' output, not their summaries).
func visibleDevices(t *testing.T, tr programTrial) []string {
	t.Helper()
	var seen []string
	for _, l := range tr.logs {
		if strings.HasSuffix(l, ".json") {
			continue
		}
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)from step \d+, CUDA_VISIBLE_DEVICES=(\S*)$`).FindAllStringSubmatch(string(b), -1) {
			seen = append(seen, m[1])
		}
	}
	return seen
}

// A worker built without the cuda engine runs program trials on the GPUs it finds, with
// nvidia-smi's list (the stand-in's here): "sfsweep worker -gpus all" starts a process on
// each GPU, which trains the trials of program trainers on device cuda and no engine trial.
// A program trial of gpus: 1, the same trial as backend: cuda, sees exactly its process's
// GPU in CUDA_VISIBLE_DEVICES. Without -trainers, such a build refuses -gpus, saying what
// would run there.
func TestGPUProgramsWithoutEngine(t *testing.T) {
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server and trains")
	standInGPUsOnly(t, 2, 4096)
	var errb bytes.Buffer
	if code := runMain(ctx, []string{"worker", "-gpus", "all"}, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "no -trainers to run there") {
		t.Fatalf("-gpus without an engine or trainers: exit %d, %s", code, errb.String())
	}
	dir, _, gw, _ := startRemote(ctx, t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	registry := filepath.Join(dir, "trainers.yaml")
	reg := fmt.Sprintf("trainers:\n  fake:\n    program: %s\n    version: fake-1\n    env: {%s: \"1\"}\n    gpu_memory: 1GiB\n", self, fakeTrainerEnv)
	if err := os.WriteFile(registry, []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	node := startProcess(ctx, t, dir, "gpu node", "worker", "-queue", "all", "-gpus", "all", "-slots", "2",
		"-cache", filepath.Join(dir, "cache"), "-trainers", registry)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the node's output:\n%s", node.output())
		}
	})
	file := filepath.Join(dir, "on-gpu.yaml")
	src := "name: on-gpu\ngpus: 1\ntrainer: {name: fake, version: fake-1}\nparameters: {mode: ok}\nsteps: 6\nseeds: [1, 2, 3]\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sweeper{t, ctx}
	if st := s.finish(s.cmd("submit", file), node); st.Completed != 3 {
		t.Fatalf("%+v\n%s", st, node.output())
	}
	out := node.output()
	if n := strings.Count(out, "worker: program trainers on cuda"); n != 2 {
		t.Errorf("%d worker processes say they run program trainers on cuda, want 2", n)
	}
	if strings.Contains(out, "queue "+workflows.TrainQueue(backend.DeviceCUDA)) {
		t.Error("a worker process without the cuda engine polls the engine's cuda queue")
	}
	trials := readAllTrialsUnder(t, filepath.Join(gw.Root(), gw.Bucket(), "trials"))
	if len(trials) != 3 {
		t.Fatalf("%d trials, want 3", len(trials))
	}
	for _, tr := range trials {
		if tr.config.Backend != "cuda" || tr.config.GPUs != 0 {
			t.Errorf("trial %s: backend %q, gpus %d; want gpus: 1 as backend cuda", tr.dir, tr.config.Backend, tr.config.GPUs)
		}
		seen := visibleDevices(t, tr)
		if len(seen) != 1 || seen[0] != "GPU-stand-in-0" && seen[0] != "GPU-stand-in-1" {
			t.Errorf("trial %s saw CUDA_VISIBLE_DEVICES %v, want one stand-in GPU", tr.dir, seen)
		}
	}
	node.interrupt(t)
}

// sfsweep run of a build without the cuda engine trains a program trial of gpus: 1 on the
// GPU nvidia-smi lists first (of CUDA_VISIBLE_DEVICES), admitted by its memory, and gives
// the program that GPU alone, where a program on the cpu sees none; on a machine without a
// GPU it refuses the manifest at once.
func TestRunGPUProgramWithoutEngine(t *testing.T) {
	ctx := serverTest(t, 3*time.Minute, "runs sfsweep run on the embedded stack")
	standInGPUsOnly(t, 2, 4096)
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf("name: run-gpu-program\ngpus: 1\ntrainer: {name: fake, program: %s, version: fake-1, env: {%s: \"1\"}}\nparameters: {mode: ok}\nsteps: 6\nseeds: [1]\n", self, fakeTrainerEnv)
	if err := os.WriteFile(filepath.Join(dir, "gpu.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "1")
	run := startProcess(ctx, t, dir, "run", "run", "-ui=false", "gpu.yaml")
	<-run.done
	if code := run.exitCode(); code != 0 || !strings.Contains(run.output(), "1 completed") {
		t.Fatalf("run: exit %d\n%s", code, run.output())
	}
	trials := readAllTrials(t, filepath.Join(dir, ".sfsweep"))
	if len(trials) != 1 {
		t.Fatalf("%d trials", len(trials))
	}
	if seen := visibleDevices(t, trials[0]); !slices.Equal(seen, []string{"GPU-stand-in-1"}) {
		t.Errorf("the program saw CUDA_VISIBLE_DEVICES %v, want the GPU run trains on, GPU-stand-in-1", seen)
	}
	// the finished sweep from another terminal: status -dir, by its name and by its ID
	var idOut string
	for _, name := range []string{"run-gpu-program", ""} {
		if name == "" {
			name = idOut
		}
		var out, errb bytes.Buffer
		if code := runMain(ctx, []string{"status", "-dir", filepath.Join(dir, ".sfsweep"), name}, &out, &errb); code != 0 ||
			!strings.HasPrefix(out.String(), "sweep-run-gpu-program-") || !strings.Contains(out.String(), ": 1/1 trials done (1 completed") {
			t.Fatalf("status -dir %s: exit %d, %q %s", name, code, out.String(), errb.String())
		}
		idOut, _, _ = strings.Cut(out.String(), ":")
	}

	// a program on the cpu sees no GPU
	cpu := strings.Replace(strings.Replace(src, "gpus: 1\n", "", 1), "run-gpu-program", "run-cpu-program", 1)
	if err := os.WriteFile(filepath.Join(dir, "cpu.yaml"), []byte(cpu), 0o644); err != nil {
		t.Fatal(err)
	}
	onCPU := startProcess(ctx, t, dir, "run on the cpu", "run", "-ui=false", "cpu.yaml")
	<-onCPU.done
	if code := onCPU.exitCode(); code != 0 {
		t.Fatalf("run on the cpu: exit %d\n%s", code, onCPU.output())
	}
	for _, tr := range readAllTrials(t, filepath.Join(dir, ".sfsweep")) {
		if tr.config.Backend == "cpu" {
			if seen := visibleDevices(t, tr); !slices.Equal(seen, []string{""}) {
				t.Errorf("the program on the cpu saw CUDA_VISIBLE_DEVICES %q, want it empty", seen)
			}
		}
	}

	t.Setenv(standInGPUsEnv, "")
	t.Setenv("PATH", dir) // no nvidia-smi
	none := startProcess(ctx, t, dir, "run without a GPU", "run", "-ui=false", "gpu.yaml")
	<-none.done
	if code := none.exitCode(); code != 1 || !strings.Contains(none.output(), "train on a GPU, and this machine has none") {
		t.Fatalf("run on a machine without a GPU: exit %d\n%s", code, none.output())
	}
}
