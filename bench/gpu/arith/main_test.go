package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// writeArm writes the results sfsweep train -json would leave for arm's seeds 1.., with
// these final validation losses at x.
func writeArm(t *testing.T, dir, arm string, losses ...float64) {
	t.Helper()
	for i, l := range losses {
		body := fmt.Sprintf(`{"status": "completed", "primary": "x", "steps": 100, "tokens": 6553600, "val_loss": {"x": %v, "y": 9}}`, l)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("arith-%s-%d.json", arm, i+1)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runDir(t *testing.T, dir string, margin float64) (bool, string) {
	t.Helper()
	var b strings.Builder
	ok, err := run(&b, dir, "default", margin)
	if err != nil {
		t.Fatal(err)
	}
	return ok, b.String()
}

func TestArithVerdicts(t *testing.T) {
	base := []float64{5.0, 5.1, 4.9, 5.05}
	shift := func(ds ...float64) []float64 {
		out := make([]float64, len(base))
		for i := range base {
			out[i] = base[i] + ds[i]
		}
		return out
	}
	dir := t.TempDir()
	writeArm(t, dir, "default", base...)
	// differences of 0.001, −0.002, 0.0015, 0.0005: mean 2.5e-4, sample sd 0.0015546,
	// se 7.773e-4; t_{0.95,3} = 2.353363 (tables), so the 90% interval is
	// [−0.0015793, 0.0020793], inside ±0.005·5.0125 = ±0.0250625
	writeArm(t, dir, "close", shift(0.001, -0.002, 0.0015, 0.0005)...)
	// 2% worse on every seed
	writeArm(t, dir, "worse", shift(0.1, 0.1, 0.1, 0.1)...)
	// no mean difference, but seed-to-seed noise of 1%: not shown equivalent, which is
	// not shown different either
	writeArm(t, dir, "noisy", shift(0.05, -0.05, 0.05, -0.05)...)
	ok, out := runDir(t, dir, 0.005)
	if ok {
		t.Errorf("every arm shown equivalent:\n%s", out)
	}
	for arm, want := range map[string]string{"close": "equivalent within", "worse": "NOT SHOWN EQUIVALENT", "noisy": "NOT SHOWN EQUIVALENT"} {
		line := regexp.MustCompile(`(?m)^== arith ` + arm + `: .*$`).FindString(out)
		if !strings.Contains(line, ": "+want) || !strings.Contains(line, "over 4 seeds") {
			t.Errorf("%s: %q, want %q over 4 seeds\n%s", arm, line, want, out)
		}
	}
	m := regexp.MustCompile(`== arith close: .*±([0-9.]+) .*mean difference ([-+0-9.e]+), 90% interval \[([-+0-9.e]+), ([-+0-9.e]+)\]`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no figures for close:\n%s", out)
	}
	for i, want := range []float64{0.0250625, 2.5e-4, -0.0015793, 0.0020793} {
		got, _ := strconv.ParseFloat(m[i+1], 64)
		if math.Abs(got-want) > 1e-5 {
			t.Errorf("figure %d = %v, want %v (by hand)", i, got, want)
		}
	}
	// how many seeds would show each arm, at its mean difference and spread: close, 2
	// (|2.5e-4| + t_{0.95,1}·0.0015546/√2 = 6.314·0.0010993 + 2.5e-4 = 0.0072 < 0.02506);
	// noisy, mean 0 and sd 0.057735, 17 (t_{0.95,15}·sd/4 = 1.7531·0.014434 = 0.025304, just
	// above the margin of 0.0250625; t_{0.95,16}·sd/√17 = 1.7459·0.014003 = 0.024447
	// below it; t from tables); worse, none: its mean difference is beyond the margin
	for arm, want := range map[string]string{"close": "2 seeds would show it", "noisy": "17 seeds would show it",
		"worse": "no number of seeds would show it"} {
		if line := regexp.MustCompile(`(?m)^== arith ` + arm + `: .*$`).FindString(out); !strings.Contains(line, want) {
			t.Errorf("%s: %q, want %q", arm, line, want)
		}
	}
	// with only the close arm, every arm is shown equivalent
	only := t.TempDir()
	writeArm(t, only, "default", base...)
	writeArm(t, only, "close", shift(0.001, -0.002, 0.0015, 0.0005)...)
	if ok, out := runDir(t, only, 0.005); !ok {
		t.Errorf("the close arm alone not shown equivalent:\n%s", out)
	}
	// a tighter margin than its interval: not shown
	if ok, out := runDir(t, only, 0.0003); ok {
		t.Errorf("shown equivalent within ±0.0015, inside its interval:\n%s", out)
	}
}

// A run cut short leaves an empty file, which is skipped: its seed has no pair. A pair
// with a run that diverged is never shown equivalent, and the verdict names the run.
// Output not of sfsweep train, a missing base arm or a margin of zero are errors.
func TestArithInput(t *testing.T) {
	dir := t.TempDir()
	writeArm(t, dir, "default", 5.0, 5.1, 4.9)
	writeArm(t, dir, "staged", 5.0, 5.1)
	if err := os.WriteFile(filepath.Join(dir, "arith-staged-3.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, out := runDir(t, dir, 0.005); !strings.Contains(out, "over 2 seeds") {
		t.Errorf("the empty result was not skipped:\n%s", out)
	}
	var b strings.Builder
	if _, err := run(&b, dir, "default", 0); err == nil || !strings.Contains(err.Error(), "margin") {
		t.Errorf("margin 0: %v", err)
	}
	if _, err := run(&b, dir, "fp32", 0.005); err == nil || !strings.Contains(err.Error(), `"fp32"`) {
		t.Errorf("a missing base arm: %v", err)
	}
	// a diverged candidate (val_loss left out, as sfsweep train leaves it) beside two close
	// pairs that alone would be shown equivalent
	writeArm(t, dir, "default", 5.0, 5.1, 4.9, 5.0)
	writeArm(t, dir, "staged", 5.0001, 5.1001, 4.9001)
	if err := os.WriteFile(filepath.Join(dir, "arith-staged-4.json"), []byte(`{"status": "diverged", "primary": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ok, out := runDir(t, dir, 0.005)
	if ok || !strings.Contains(out, "== arith staged: NOT SHOWN EQUIVALENT: seed 4's staged run diverged") || !strings.Contains(out, "| 4 | 5.00000 | diverged | |") {
		t.Errorf("a diverged run, ok %v:\n%s", ok, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "arith-staged-4.json"), []byte(`{"primary": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(&b, dir, "default", 0.005); err == nil || !strings.Contains(err.Error(), "arith-staged-4.json") {
		t.Errorf("output without a status: %v", err)
	}
}
