package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fakeTrainerEnv, set in a trainer's env, makes the test binary a training program that
// follows docs/trainer.md: the program of the program-trainer tests, which need no
// Python. Its --mode picks a behaviour: ok, flaky (exits 1 at step 3 of its first two
// attempts), diverge (a NaN loss at step 4), garbage (refused lines between its metrics),
// hang (stops at step 3 and sleeps), invalid (exit 2 at once), early (exit 1 at once, a
// missing module), silent (exit 0 at once, no metrics line), nanppl (ok, but val_ppl is
// NaN), slow (ok, but a step a second). It logs its CUDA_VISIBLE_DEVICES. Its loss falls with the step to 1 + q (--q). It checkpoints every 2 steps
// into step-N files and resumes from the newest. FAKE_PIDDIR, if set, is where it leaves
// a file named by its pid while it runs.
const fakeTrainerEnv = "FAKE_TRAINER"

// fakeTrainer runs the test binary as that program and exits.
func fakeTrainer() {
	args := map[string]string{"mode": "ok", "q": "0", "every": "2"}
	for _, a := range os.Args[1:] {
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			fmt.Fprintf(os.Stderr, "fake: bad argument %q\n", a)
			os.Exit(2)
		}
		args[k] = v
	}
	if d := os.Getenv("FAKE_PIDDIR"); d != "" {
		f := filepath.Join(d, strconv.Itoa(os.Getpid()))
		_ = os.WriteFile(f, nil, 0o644)
		defer os.Remove(f)
	}
	mode := args["mode"]
	q, _ := strconv.ParseFloat(args["q"], 64)
	every, _ := strconv.Atoi(args["every"])
	steps, _ := strconv.Atoi(os.Getenv("SFSWEEP_STEPS"))
	until, _ := strconv.Atoi(os.Getenv("SFSWEEP_UNTIL"))
	attempt, _ := strconv.Atoi(os.Getenv("SFSWEEP_ATTEMPT"))
	ckpt := os.Getenv("SFSWEEP_CHECKPOINT_DIR")
	switch mode {
	case "invalid":
		fmt.Fprintln(os.Stderr, "fake: error: unrecognized arguments: --mode=invalid")
		os.Exit(2)
	case "early":
		fmt.Fprintln(os.Stderr, "ModuleNotFoundError: No module named 'torch'")
		os.Exit(1)
	case "silent":
		os.Exit(0)
	}
	start := 0
	names, _ := os.ReadDir(ckpt)
	for _, n := range names {
		if s, ok := strings.CutPrefix(n.Name(), "step-"); ok {
			if v, err := strconv.Atoi(s); err == nil {
				start = max(start, v)
			}
		}
	}
	metrics, err := os.OpenFile(os.Getenv("SFSWEEP_METRICS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		os.Exit(1)
	}
	loss := func(s int) float64 { return 1 + q + 4/float64(1+s) }
	devices, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	if !ok {
		devices = "(unset)"
	}
	fmt.Fprintf(os.Stderr, "fake: %s attempt %d from step %d, CUDA_VISIBLE_DEVICES=%s\n", mode, attempt, start, devices)
	for s := start + 1; s <= steps; s++ {
		switch {
		case mode == "slow":
			time.Sleep(time.Second)
		case mode == "hang" && s == 3:
			time.Sleep(time.Hour)
		case mode == "flaky" && s == 3 && attempt < 3:
			fmt.Fprintln(os.Stderr, "fake: lost the device")
			os.Exit(1)
		case mode == "diverge" && s == 4:
			fmt.Fprintf(metrics, "{\"step\": %d, \"train_loss\": NaN}\n", s)
			os.Exit(3)
		case mode == "garbage":
			fmt.Fprintf(metrics, "not json\n{\"loss\": 1}\n[%d]\n", s)
		}
		line := fmt.Sprintf(`{"step": %d, "tokens": %d, "train_loss": %g`, s, 64*s, loss(s)+0.01)
		switch {
		case (s%every == 0 || s == steps) && mode == "nanppl":
			line += fmt.Sprintf(`, "val_loss": %g, "val_ppl": NaN`, loss(s))
		case s%every == 0 || s == steps:
			line += fmt.Sprintf(`, "val_loss": %g, "val_ppl": %g`, loss(s), 2*loss(s))
		}
		if s == steps {
			line += fmt.Sprintf(`, "test_loss": %g`, loss(s)+0.02)
		}
		fmt.Fprintln(metrics, line+"}")
		if s%2 == 0 {
			tmp := filepath.Join(ckpt, ".tmp")
			_ = os.WriteFile(tmp, []byte(strconv.Itoa(s)), 0o644)
			_ = os.Rename(tmp, filepath.Join(ckpt, fmt.Sprintf("step-%d", s)))
		}
		if s == until {
			break
		}
	}
	fmt.Fprintln(os.Stdout, "fake: done")
	os.Exit(0)
}

// fakeTrainerProcs are the fake trainers still alive, by the pid files in dir (a
// trainer killed leaves its file).
func fakeTrainerProcs(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var pids []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && syscall.Kill(pid, 0) == nil {
			pids = append(pids, e.Name())
		}
	}
	slices.Sort(pids)
	return pids
}
