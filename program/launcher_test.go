package program

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A program that leaves its process group (torch ≥ 2 starts each rank of torchrun in a
// session of its own) is ended with it, whether the attempt is ended or the program exits
// leaving it behind.
func TestRunEndsStrays(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		cancel       bool
	}{
		{"canceled", "straychild\nline {\"step\": 1, \"train_loss\": 3.9}\nhang", true},
		{"left behind", "straychild\nline {\"step\": 1, \"val_loss\": 3.9}\nsleep 100ms\nexit 0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := attempt(t, tc.script)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				a.OnMetric = func(Metric) { time.AfterFunc(5*a.Poll, cancel) } // seen by a poll first
			}
			out, err := Run(ctx, a)
			if tc.cancel != errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %s, %v", out.Status, err)
			}
			pid, gone := childGone(t, a)
			if !gone {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("child %d, in a session of its own, still running after Run returned", pid)
			}
		})
	}
}

// torchPython is Debian's Python, which has python3-torch.
const torchPython = "/usr/bin/python3"

// ranks is a program of two ranks under torchrun on the CPU (gloo): each all-reduces its
// rank + 1 and writes its pid to rank<N>.pid; rank 0 writes the metrics line, with the sum
// as train loss and the world size as val loss. With --mode=hang they go on all-reducing.
const ranks = `import json, os, sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
x = torch.tensor([float(rank + 1)])
dist.all_reduce(x)
with open("rank%d.pid.tmp" % rank, "w") as f:
    f.write(str(os.getpid()))
os.rename("rank%d.pid.tmp" % rank, "rank%d.pid" % rank)
if rank == 0:
    with open(os.environ["SFSWEEP_METRICS"], "a") as f:
        f.write(json.dumps({"step": 1, "train_loss": float(x), "val_loss": float(world), "local_rank": int(os.environ["LOCAL_RANK"])}) + "\n")
while "--mode=hang" in sys.argv:
    dist.all_reduce(x)
    time.sleep(0.05)
dist.destroy_process_group()
`

// torchrunAttempt is an attempt of ranks under torchrun with n ranks.
func torchrunAttempt(t *testing.T, n int, mode string) Attempt {
	t.Helper()
	if err := exec.Command(torchPython, "-c", "import "+torchrunModule).Run(); err != nil {
		t.Skipf("%s cannot import %s (apt-get install python3-torch): %v", torchPython, torchrunModule, err)
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "ranks.py")
	if err := os.WriteFile(prog, []byte(ranks), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Spec{Name: "ddp", Program: prog, Interpreter: torchPython, Launcher: LauncherTorchrun}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckRunnable(dir); err != nil {
		t.Fatal(err)
	}
	argv, err := s.Argv(dir, []Arg{{"mode", mode}})
	if err != nil {
		t.Fatal(err)
	}
	a := attempt(t, "")
	if a.Argv, err = s.Launch(argv, n); err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(a.Argv, "--no_python"); i < 0 || !slices.Equal(a.Argv[i+1:], argv) || a.Argv[0] != torchPython || a.Argv[2] != torchrun {
		t.Fatalf("launched argv %q: want %s -c <torchrun> ... --no_python %q", a.Argv, torchPython, argv)
	}
	a.Grace = 5 * time.Second
	a.Poll = 50 * time.Millisecond
	return a
}

// rankPid is the pid rank wrote, once it has.
func rankPid(a Attempt, rank int) (int, bool) {
	b, err := os.ReadFile(filepath.Join(a.Dir, "rank"+strconv.Itoa(rank)+".pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(string(b))
	return pid, err == nil
}

func TestTorchrunTwoRanks(t *testing.T) {
	a := torchrunAttempt(t, 2, "once")
	var lines []Metric
	a.OnMetric = func(m Metric) { lines = append(lines, m) }
	out := runFake(t, a)
	if out.Status != Completed {
		b, _ := os.ReadFile(filepath.Join(a.LogDir, "stderr"))
		t.Fatalf("status %s (%s)\n%s", out.Status, out.Reason, b)
	}
	// 1 + 2 from two ranks, and only rank 0's line
	if len(lines) != 1 || lines[0].TrainLoss == nil || *lines[0].TrainLoss != 3 || *lines[0].ValLoss != 2 || lines[0].Named["local_rank"] != 0 {
		t.Errorf("metrics lines %+v: want rank 0's one line, train loss 3 (the all-reduced 1 + 2), val loss 2", lines)
	}
	for r := range 2 {
		if _, ok := rankPid(a, r); !ok {
			t.Errorf("rank %d never ran", r)
		}
	}
	// two attempts at once, each on a rendezvous port of its own
	s := Spec{Name: "ddp", Program: "ranks.py", Launcher: LauncherTorchrun}
	a1, err1 := s.Launch([]string{"ranks.py"}, 2)
	a2, err2 := s.Launch([]string{"ranks.py"}, 2)
	if err1 != nil || err2 != nil || a1[slices.IndexFunc(a1, isPort)] == a2[slices.IndexFunc(a2, isPort)] {
		t.Errorf("two attempts share a rendezvous port: %q, %q (%v, %v)", a1, a2, err1, err2)
	}
}

func isPort(s string) bool { return strings.HasPrefix(s, "--master_port=") }

// A rank SIGKILLed fails the attempt (torchrun ends the other ranks and exits non-zero),
// and once Run returns no rank is left.
func TestTorchrunRankKilled(t *testing.T) {
	a := torchrunAttempt(t, 2, "hang")
	a.OnMetric = func(Metric) {
		for { // rank 0's line is written after rank 1's pid file: it is there or soon
			if pid, ok := rankPid(a, 1); ok {
				syscall.Kill(pid, syscall.SIGKILL)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	start := time.Now()
	out := runFake(t, a)
	if out.Status != Failed || out.ExitCode == 0 {
		t.Errorf("status %s, exit %d (%s): want failed, non-zero", out.Status, out.ExitCode, out.Reason)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v to fail", d)
	}
	pid0, _ := rankPid(a, 0)
	if _, running := procStat(pid0); running {
		syscall.Kill(pid0, syscall.SIGKILL)
		t.Errorf("rank 0 (%d) still running after Run returned", pid0)
	}
}

// Ending the attempt (a cancel, a rung, a stall) ends every rank.
func TestTorchrunCanceled(t *testing.T) {
	a := torchrunAttempt(t, 2, "hang")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.OnMetric = func(Metric) { cancel() }
	if _, err := Run(ctx, a); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want canceled", err)
	}
	for r := range 2 {
		if pid, ok := rankPid(a, r); !ok {
			t.Errorf("rank %d never ran", r)
		} else if _, running := procStat(pid); running {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("rank %d (%d) still running after Run returned", r, pid)
		}
	}
}

func TestLaunchWithout(t *testing.T) {
	s := Spec{Name: "one", Program: "train.py"}
	if got, err := s.Launch([]string{"a", "b"}, 1); err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Launch without a launcher = %q, %v", got, err)
	}
	if _, err := s.Launch([]string{"a"}, 2); err == nil || !strings.Contains(err.Error(), "trainer.launcher") {
		t.Errorf("two ranks without a launcher: %v", err)
	}
	s.Launcher = "mpirun"
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "unknown launcher") {
		t.Errorf("Check of launcher mpirun: %v", err)
	}
	s = Spec{Name: "x", Program: "train.py", Interpreter: "no-such-python-here", Launcher: LauncherTorchrun}
	if err := s.checkLauncher(context.Background()); err == nil || !strings.Contains(err.Error(), "not on this worker's PATH") {
		t.Errorf("checkLauncher of a missing Python: %v", err)
	}
	s.Interpreter = "false"
	if err := s.checkLauncher(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot import") {
		t.Errorf("checkLauncher of a Python without torch: %v", err)
	}
}
