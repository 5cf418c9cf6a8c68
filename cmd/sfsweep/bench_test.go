package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/peak"
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
	if len(rep.Rounds) != 2 || rep.Native <= 0 || rep.TorchSkipped == "" || rep.Torch != 0 || rep.Threads != runtime.GOMAXPROCS(0) {
		t.Fatalf("unexpected report %+v", rep)
	}
	// the peak is measured here, on the engine's threads, where there is an FMA loop
	if _, ok := peak.Measure(1); ok != (rep.PeakGFLOPS > 0) || ok && rep.PeakSource != fmt.Sprintf("measured: %s FMA loop on %d threads", isaOf(rep.PeakSource), rep.Threads) {
		t.Errorf("peak %.1f GFLOP/s (%q), want one measured on %d threads", rep.PeakGFLOPS, rep.PeakSource, rep.Threads)
	}
	if want := rep.Native * rep.GFLOPStep / float64(rep.TokensStep) / rep.PeakGFLOPS; rep.PeakGFLOPS > 0 && math.Abs(rep.FracOfPeak-want) > 1e-12 {
		t.Errorf("fraction of peak %g, want %g", rep.FracOfPeak, want)
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
		{[]string{"-peak", "-1"}, "-peak -1"},
		{[]string{"-peak", "+Inf"}, "-peak +Inf"},
	} {
		code, _, stderr := run(t, append([]string{"bench"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// isaOf is the loop named in a peak's source, "avx512" in "measured: avx512 FMA loop ...".
func isaOf(source string) string {
	f := strings.Fields(source)
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// A peak given with -peak is the one the fraction is taken against, said to be given.
func TestBenchGivenPeak(t *testing.T) {
	code, stdout, stderr := run(t, "bench", "-model", "micro-llama", "-rounds", "1", "-steps", "1", "-warmup", "0", "-torch", "off", "-peak", "1000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "fp32 peak: 1000 GFLOP/s (-peak)") || !strings.Contains(stdout, "of the 1000 GFLOP/s peak)") {
		t.Errorf("output does not take the given peak:\n%s", stdout)
	}
}

// Whether the PyTorch peer is at its best: an optimised BLAS, on the engine's threads.
func TestPeerBLASNotAtBest(t *testing.T) {
	two, one := 2, 1
	for _, tc := range []struct {
		blas peerBLAS
		want string // in the reason; "" when at its best
	}{
		{peerBLAS{Vendor: "reference", Library: "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", Threads: &one, TorchThreads: 2}, "reference BLAS (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"},
		{peerBLAS{Vendor: "unknown", Library: "/opt/lib/libblas.so.3", TorchThreads: 2}, "not known to be optimised (/opt/lib/libblas.so.3"},
		{peerBLAS{Vendor: "", TorchThreads: 2}, "no BLAS library found"},
		{peerBLAS{Vendor: "openblas", Threads: &one, TorchThreads: 2}, "PyTorch's openblas runs on 1 thread, the engine on 2"},
		{peerBLAS{Vendor: "openblas", Threads: &two, TorchThreads: 1}, "PyTorch runs on 1 thread, the engine on 2"},
		{peerBLAS{Vendor: "openblas", Threads: &two, TorchThreads: 2}, ""},
		{peerBLAS{Vendor: "blis", Threads: &two, TorchThreads: 2}, ""},
		{peerBLAS{Vendor: "mkl", TorchThreads: 2}, ""},
	} {
		got := tc.blas.notAtBest(2)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.blas, got, tc.want)
		}
	}
}

// standInPython stands a shell script in for the peer's interpreter: it imports torch, and
// reports the BLAS named by $STAND_IN_VENDOR on the threads it is asked for; the peer's
// round reports 1000 tokens/s with that BLAS.
func standInPython(t *testing.T, vendor string) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "python3")
	src := `#!/bin/sh
threads=1; prev=
for a in "$@"; do [ "$prev" = --threads ] && threads=$a; prev=$a; done
blas="{\"vendor\":\"$STAND_IN_VENDOR\",\"library\":\"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0\",\"threads\":$threads,\"torch_threads\":$threads,\"torch_version\":\"1.13.0a0\"}"
case "$1" in
-c) exit 0 ;;
*/blas.py) echo "$blas" ;;
*/torch_llama.py) echo "{\"ms_per_step_median\":2048,\"tokens_per_s_median\":1000,\"achieved_gflops_median\":1,\"loss_first\":6.2,\"loss_last\":6.1,\"blas\":$blas}" ;;
*) exit 2 ;;
esac
`
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	oldPython, oldDir := torchPython, torchDir
	torchPython, torchDir = script, filepath.Join("..", "..", "bench", "torch")
	t.Cleanup(func() { torchPython, torchDir = oldPython, oldDir })
	t.Setenv("STAND_IN_VENDOR", vendor)
}

// A PyTorch on the reference BLAS is not run and gives no ratio; the report says why and
// names the BLAS; -torch on refuses to run without the peer at its best.
func TestBenchReferenceBLASNoRatio(t *testing.T) {
	standInPython(t, "reference")
	args := []string{"bench", "-model", "tiny-llama", "-rounds", "1", "-steps", "1", "-warmup", "0", "-peak", "1000"}
	code, stdout, stderr := run(t, append(args, "-json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Ratio != 0 || rep.Torch != 0 || len(rep.Rounds) != 1 || !strings.Contains(rep.TorchSkipped, "reference BLAS") ||
		rep.TorchBLAS == nil || rep.TorchBLAS.Vendor != "reference" {
		t.Errorf("report %+v (BLAS %+v): want no peer, no ratio, the reference BLAS named", rep, rep.TorchBLAS)
	}
	code, stdout, _ = run(t, args...)
	if code != 0 || strings.Contains(stdout, "ratio sfsweep/pytorch") || !strings.Contains(stdout, "PyTorch peer not run: PyTorch computes with the reference BLAS") {
		t.Errorf("exit %d, output:\n%s", code, stdout)
	}
	code, _, stderr = run(t, append(args, "-torch", "on")...)
	if code != 1 || !strings.Contains(stderr, "reference BLAS") {
		t.Errorf("-torch on: exit %d, %s; want 1 naming the reference BLAS", code, stderr)
	}
}

// A PyTorch on OpenBLAS on the engine's threads runs, and the ratio is taken against it.
func TestBenchOptimisedBLASRatio(t *testing.T) {
	standInPython(t, "openblas")
	code, stdout, stderr := run(t, "bench", "-model", "tiny-llama", "-rounds", "1", "-steps", "1", "-warmup", "0", "-peak", "1000", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.TorchSkipped != "" || rep.Torch != 1000 || math.Abs(rep.Ratio-rep.Native/1000) > 1e-12 || len(rep.Rounds) != 2 ||
		rep.TorchBLAS == nil || rep.TorchBLAS.Vendor != "openblas" || *rep.TorchBLAS.Threads != rep.Threads {
		t.Errorf("report %+v (BLAS %+v): want the peer run and the ratio against it", rep, rep.TorchBLAS)
	}
}
