package main

import (
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"testing"
)

// TestBenchCommand runs the benchmark for real on the smallest preset and checks the report
// is consistent: positive speeds, the FLOP arithmetic, and a loss near ln(vocab) at init.
func TestBenchCommand(t *testing.T) {
	code, stdout, stderr := run(t, "bench", "-model", "micro-llama", "-rounds", "2", "-steps", "3", "-warmup", "1", "-torch", "off", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout)
	}
	if len(rep.Rounds) != 2 || rep.Native <= 0 || rep.TorchSkipped == "" || rep.Torch != 0 {
		t.Fatalf("unexpected report %+v", rep)
	}
	if rep.BudgetMiB <= float64(4*4*rep.Params)/(1<<20) {
		t.Errorf("memory budget %.3f MiB does not exceed the 4 parameter-sized vectors", rep.BudgetMiB)
	}
	if runtime.GOOS == "linux" && (rep.PeakRSSMiB <= 0 || rep.BaseRSSMiB <= 0 || rep.BaseRSSMiB >= rep.PeakRSSMiB ||
		math.Abs(rep.RSSOverBudget-(rep.PeakRSSMiB-rep.BaseRSSMiB)/rep.BudgetMiB) > 1e-12) {
		t.Errorf("peak RSS %.1f MiB, ratio %.3f: inconsistent", rep.PeakRSSMiB, rep.RSSOverBudget)
	}
	for _, r := range rep.Rounds {
		want := r.TokensPS * rep.GFLOPStep / float64(rep.TokensStep)
		if math.Abs(r.GFLOPS-want) > 1e-9*want || math.Abs(r.MsPerStep*r.TokensPS/1e3-float64(rep.TokensStep)) > 1e-6*float64(rep.TokensStep) {
			t.Errorf("round %d: inconsistent figures %+v", r.Round, r)
		}
		if math.Abs(r.LossFirst-math.Log(32)) > 0.1 {
			t.Errorf("round %d: first loss %.4f, want ≈ ln(32) = %.4f", r.Round, r.LossFirst, math.Log(32))
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-model", "giant"}, `-model "giant"`},
		{[]string{"-steps", "0"}, "-steps 0"},
		{[]string{"-rounds", "-1"}, "-rounds -1"},
		{[]string{"-torch", "maybe"}, `-torch "maybe"`},
		{[]string{"-peak", "0"}, "-peak 0"},
	} {
		code, _, stderr := run(t, append([]string{"bench"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
