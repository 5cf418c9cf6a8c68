//go:build cuda

package cuda

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// Steps replayed from the micro-batch graph are bitwise the steps taken through Forward
// and Backward: each micro-batch's loss, the gradients of every step and the parameters
// after a device optimizer's steps, which the graph reads through the bfloat16 copy remade
// before each launch. The graph is captured once and replayed for every later
// micro-batch, and replaying it allocates no device memory.
func TestGraphBitwise(t *testing.T) {
	for _, tc := range hostCases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := preset(t, tc.preset)
			toks := tokenSets(cfg, tc.batch*tc.seqLen, 3, 41)
			const steps, micro = 3, 4
			eager := traceSteps(t, hostEngine(t, cfg, tc.batch, tc.seqLen, tc.prec), false, toks, steps, micro)
			e := graphEngine(t, cfg, tc.batch, tc.seqLen, tc.prec)
			replayed := traceSteps(t, e, true, toks, steps, micro)
			if e.graph.err != nil {
				t.Fatalf("capture failed: %v", e.graph.err)
			}
			// the first micro-batch warms up, the second is captured, then launched
			if want := steps*micro - 1; e.graph.launches != want {
				t.Fatalf("%d graph launches, want %d", e.graph.launches, want)
			}
			sameTrace(t, "graph", cfg, replayed, eager)
			free := func() int64 {
				f, _, err := cu.MemInfo()
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			before := free()
			timeSteps(t, e, true, toks, 2, micro) // no optimizer: its state would take memory
			if after := free(); after != before {
				t.Errorf("replaying the graph changed the device's free memory from %d to %d bytes", before, after)
			}
		})
	}
}

// A capture that fails leaves the engine running its passes eagerly, with the same bits,
// and says why: here the passes of a Forward, whose copy of the losses to the host waits
// for the stream, which the capture refuses.
func TestGraphCaptureFallsBack(t *testing.T) {
	cfg := preset(t, "micro-llama")
	n := 16
	toks := tokenSets(cfg, n, 2, 51)
	eager := traceSteps(t, hostEngine(t, cfg, 2, 8, backend.BF16), false, toks, 2, 3)
	e := graphEngine(t, cfg, 2, 8, backend.BF16)
	func() {
		unlock := e.st.lock()
		defer unlock()
		if err := e.stage(toks[0][:n], toks[0][1:]); err != nil {
			t.Fatal(err)
		}
		e.graph.plan = graphPlan{fast: e.fast, warm: true} // this micro-batch captures
		if err := e.passes(); err != nil {                 // not queued: a Forward's passes
			t.Fatalf("the passes after a failed capture: %v", err)
		}
	}()
	if e.graph.err == nil || !e.graph.plan.failed || e.graph.exec != nil {
		t.Fatalf("capturing a Forward's passes succeeded (%v)", e.graph.err)
	}
	t.Logf("the capture failed as it should: %v", e.graph.err)
	fellBack := traceSteps(t, e, true, toks, 2, 3)
	sameTrace(t, "after a failed capture", cfg, fellBack, eager)
	if e.graph.launches != 0 {
		t.Errorf("%d graph launches after a failed capture", e.graph.launches)
	}
}

// Engines made and closed while another engine captures its micro-batch, as a sweep's
// trials start and end beside each other on one GPU, wait for the capture, which
// completes: closing one destroys a cuBLAS handle, which synchronises the whole device and
// would invalidate a capture in flight on any stream (deviceWide).
func TestGraphBesideNewAndClose(t *testing.T) {
	cfg := preset(t, "micro-llama")
	toks := tokenSets(cfg, 16, 2, 61)
	eager := traceSteps(t, hostEngine(t, cfg, 2, 8, backend.BF16), false, toks, 2, 3)
	e := graphEngine(t, cfg, 2, 8, backend.BF16)
	other, err := New(cfg, 2, 8, backend.BF16)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	t.Cleanup(func() { captureHook = nil })
	captureHook = func() {
		go func() { done <- other.Close() }()
		go func() {
			o, err := New(cfg, 2, 8, backend.BF16)
			if err == nil {
				err = o.Close()
			}
			done <- err
		}()
		// time for both to reach the device, were they not made to wait
		time.Sleep(200 * time.Millisecond)
	}
	got := traceSteps(t, e, true, toks, 2, 3)
	captureHook = nil
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("beside a capture: %v", err)
		}
	}
	if e.graph.err != nil || e.graph.launches == 0 {
		t.Fatalf("the capture beside New and Close: %v, %d launches", e.graph.err, e.graph.launches)
	}
	sameTrace(t, "graph beside New and Close", cfg, got, eager)
}

// graphEngine is hostEngine with the micro-batch graph on.
func graphEngine(t *testing.T, cfg model.Config, batch, seqLen int, prec backend.Precision) *Engine {
	t.Helper()
	f, err := fastFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return fastEngine(t, cfg, batch, seqLen, prec, f|fastGraph)
}

// hostSpeedEnv names the environment variable that runs TestHostSpeed.
const hostSpeedEnv = "SFSWEEP_CUDA_HOST_SPEED"

// The host side's speed, steady state, in one process: tokens per second of steps taken
// through Forward and Backward (a wait per micro-batch), through Accumulate (one wait a
// step) and through Accumulate with the micro-batch graph, on a small model whose
// micro-batch is short enough for the host to matter and on llama-124m at the paper's
// micro-batch, with FastEnv's paths. Each line gives the ratios to the first mode.
func TestHostSpeed(t *testing.T) {
	if os.Getenv(hostSpeedEnv) == "" {
		t.Skipf("set %s=1 to time the host side", hostSpeedEnv)
	}
	for _, tc := range []struct {
		preset               string
		batch, seqLen, micro int
		steps                int
	}{
		{"tiny-llama", 4, 128, 16, 20},
		{"llama-124m", 16, 512, 8, 3},
	} {
		cfg := preset(t, tc.preset)
		n := tc.batch * tc.seqLen
		toks := tokenSets(cfg, n, 2, 61)
		var rates []float64
		var line []string
		for _, mode := range []string{"Forward+Backward", "Accumulate", "Accumulate+graph"} {
			open := hostEngine
			if mode == "Accumulate+graph" {
				open = graphEngine
			}
			e := open(t, cfg, tc.batch, tc.seqLen, backend.BF16)
			queued := mode != "Forward+Backward"
			traceSteps(t, e, queued, toks, 1, tc.micro) // warm-up (and the graph's capture)
			start := time.Now()
			timeSteps(t, e, queued, toks, tc.steps, tc.micro)
			rate := float64(tc.steps*tc.micro*n) / time.Since(start).Seconds()
			rates = append(rates, rate)
			line = append(line, fmt.Sprintf("%s %.0f tok/s (%.3fx)", mode, rate, rate/rates[0]))
			if e.graph.err != nil {
				line = append(line, "capture failed: "+e.graph.err.Error())
			}
			e.Close()
		}
		t.Logf("host speed: %s bf16 %d×%d, %d micro-batches a step: %s", tc.preset, tc.batch, tc.seqLen, tc.micro, strings.Join(line, ", "))
	}
}

// timeSteps is traceSteps without the optimizer and the reads, which are the same for
// every mode: ZeroGrad, the micro-batches and the step's losses.
func timeSteps(t *testing.T, e *Engine, queued bool, toks [][]int32, steps, micro int) {
	t.Helper()
	for s := range steps {
		e.ZeroGrad()
		for m := range micro {
			tk := toks[(s*micro+m)%len(toks)]
			var err error
			if queued {
				err = e.Accumulate(tk[:e.n], tk[1:])
			} else if _, err = e.Forward(tk[:e.n], tk[1:]); err == nil {
				err = e.Backward()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if queued {
			if _, err := e.Losses(nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}
