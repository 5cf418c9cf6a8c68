package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/sfsweep/sfsweep/internal/peak"
	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/model"
	"github.com/sfsweep/sfsweep/training/native"
)

// benchResult is one measured engine over one round.
type benchResult struct {
	Engine    string  `json:"engine"`
	Round     int     `json:"round"`
	MsPerStep float64 `json:"ms_per_step"` // median over the round's timed steps
	TokensPS  float64 `json:"tokens_per_s"`
	GFLOPS    float64 `json:"gflops"`
	LossFirst float64 `json:"loss_first,omitempty"`
	LossLast  float64 `json:"loss_last,omitempty"`
}

// benchReport is what `bench -json` prints.
type benchReport struct {
	Model      string  `json:"model"`
	Params     int     `json:"params"`
	TokensStep int     `json:"tokens_per_step"`
	GFLOPStep  float64 `json:"gflop_per_step"`
	Threads    int     `json:"threads"` // the engine's, and the peer's and the peak loop's
	// PeakGFLOPS is the fp32 peak the fraction is taken against: measured on this machine
	// by internal/peak's FMA loop on Threads threads, or given with -peak (PeakSource
	// says which); 0 where neither.
	PeakGFLOPS   float64       `json:"peak_gflops,omitempty"`
	PeakSource   string        `json:"peak_source,omitempty"`
	Rounds       []benchResult `json:"rounds"`
	Native       float64       `json:"native_tokens_per_s"` // median over rounds
	Torch        float64       `json:"torch_tokens_per_s,omitempty"`
	Ratio        float64       `json:"native_over_torch,omitempty"`
	FracOfPeak   float64       `json:"native_fraction_of_peak,omitempty"`
	TorchSkipped string        `json:"torch_skipped,omitempty"`
	// TorchBLAS is the BLAS the PyTorch peer computes with, or would have: with a
	// reference BLAS the peer is not run and there is no ratio.
	TorchBLAS *peerBLAS `json:"torch_blas,omitempty"`
	// Memory: the budget is parameters + gradients + AdamW state + the engine's activation
	// and scratch buffers; peak RSS is this process's (Linux only, 0 elsewhere), of which
	// the program's own (runtime, package data of everything linked in) is the RSS before
	// the engine is built; the engine's share is compared with the budget.
	BudgetMiB     float64 `json:"memory_budget_mib"`
	PeakRSSMiB    float64 `json:"peak_rss_mib,omitempty"`
	BaseRSSMiB    float64 `json:"base_rss_mib,omitempty"`
	RSSOverBudget float64 `json:"engine_rss_over_budget,omitempty"`
}

func runBenchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stderr)
	preset := fs.String("model", "tiny-llama", fmt.Sprintf("model preset, one of %v", model.PresetNames()))
	batch := fs.Int("batch", 0, "sequences per step (0: the preset's)")
	steps := fs.Int("steps", 20, "timed steps per round, ≥ 1")
	warmup := fs.Int("warmup", 3, "untimed steps before each round, ≥ 0")
	rounds := fs.Int("rounds", 2, "rounds, alternating engines, ≥ 1")
	torch := fs.String("torch", "auto", "PyTorch peer: auto (when python3 can import torch and computes with an optimised BLAS), on (refuse to run without it), or off")
	peakFlag := fs.Float64("peak", 0, "fp32 peak in GFLOP/s the fraction of peak is taken against (0: measure it on this machine with a loop of fused multiply-adds on every thread the engine uses)")
	asJSON := fs.Bool("json", false, "print a JSON report instead of text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := model.Preset(*preset)
	if err != nil {
		return &usageError{msg: fmt.Sprintf("-model %q: unknown preset; known: %v", *preset, model.PresetNames())}
	}
	switch {
	case *batch < 0:
		return &usageError{msg: fmt.Sprintf("-batch %d: must be ≥ 0", *batch)}
	case *steps < 1:
		return &usageError{msg: fmt.Sprintf("-steps %d: must be ≥ 1", *steps)}
	case *warmup < 0:
		return &usageError{msg: fmt.Sprintf("-warmup %d: must be ≥ 0", *warmup)}
	case *rounds < 1:
		return &usageError{msg: fmt.Sprintf("-rounds %d: must be ≥ 1", *rounds)}
	case *torch != "auto" && *torch != "on" && *torch != "off":
		return &usageError{msg: fmt.Sprintf("-torch %q: must be auto, on or off", *torch)}
	case !(*peakFlag >= 0) || math.IsInf(*peakFlag, 0):
		return &usageError{msg: fmt.Sprintf("-peak %g: must be ≥ 0 (0: measure)", *peakFlag)}
	}
	if *batch > 0 {
		cfg.Batch = *batch
	}
	B, T := cfg.Batch, cfg.Context
	// the engine's kernels run on a pool of GOMAXPROCS workers (internal/par, training/gemm)
	threads := runtime.GOMAXPROCS(0)
	rep := benchReport{Model: *preset, Params: cfg.NumParams(), TokensStep: B * T,
		GFLOPStep: cfg.FLOPsPerStep(B, T) / 1e9, Threads: threads}

	peer, blas, why := newTorchPeer(ctx, *torch, *preset, *batch, threads)
	rep.TorchBLAS = blas
	if peer == nil {
		if *torch == "on" {
			return errors.New("PyTorch peer unavailable: " + why)
		}
		rep.TorchSkipped = why
	}
	rep.PeakGFLOPS, rep.PeakSource = *peakFlag, "-peak"
	if *peakFlag == 0 {
		rep.PeakSource = ""
		if p, ok := peak.Measure(threads); ok {
			rep.PeakGFLOPS = p.GFLOPS
			rep.PeakSource = fmt.Sprintf("measured: %s FMA loop on %d threads", p.ISA, p.Threads)
		}
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "%s: %d parameters, %d tokens/step, %.2f GFLOP/step, %d threads\n", *preset, rep.Params, rep.TokensStep, rep.GFLOPStep, threads)
		if rep.PeakGFLOPS > 0 {
			fmt.Fprintf(stdout, "fp32 peak: %.0f GFLOP/s (%s)\n", rep.PeakGFLOPS, rep.PeakSource)
		} else {
			fmt.Fprintln(stdout, "fp32 peak: unknown (no FMA loop for this CPU or build; -peak gives one)")
		}
		if peer == nil {
			fmt.Fprintf(stdout, "PyTorch peer not run: %s\n", why)
		} else {
			fmt.Fprintf(stdout, "PyTorch peer: %s\n", peer.blas)
		}
	}

	runtime.GC()
	base := currentRSS()
	eng, err := newBenchEngine(cfg, B, T)
	if err != nil {
		return err
	}
	const mib = 1 << 20
	rep.BudgetMiB = float64(4*4*cfg.NumParams()+eng.m.ActivationBytes()) / mib // params, grads, m, v
	var nat, tor []float64
	for r := 1; r <= *rounds; r++ {
		res, err := eng.round(ctx, r, *warmup, *steps, stderr)
		if err != nil {
			return err
		}
		rep.Rounds = append(rep.Rounds, res)
		nat = append(nat, res.TokensPS)
		line := fmt.Sprintf("round %d: sfsweep %7.1f ms/step  %8.0f tokens/s  %6.1f GFLOP/s%s",
			r, res.MsPerStep, res.TokensPS, res.GFLOPS, ofPeak(res.GFLOPS, rep.PeakGFLOPS))
		if peer != nil {
			pr, err := peer.round(ctx, r)
			if err != nil {
				return fmt.Errorf("PyTorch peer: %w", err)
			}
			rep.Rounds = append(rep.Rounds, pr)
			tor = append(tor, pr.TokensPS)
			line += fmt.Sprintf("  |  pytorch %7.1f ms/step  %8.0f tokens/s", pr.MsPerStep, pr.TokensPS)
		}
		if !*asJSON {
			fmt.Fprintln(stdout, line)
		}
	}
	rep.Native = median(nat)
	if rep.PeakGFLOPS > 0 {
		rep.FracOfPeak = rep.Native * rep.GFLOPStep / float64(rep.TokensStep) / rep.PeakGFLOPS
	}
	if len(tor) > 0 {
		rep.Torch = median(tor)
		rep.Ratio = rep.Native / rep.Torch
	}
	if rss := peakRSS(); rss > 0 {
		rep.PeakRSSMiB = float64(rss) / mib
		rep.BaseRSSMiB = float64(base) / mib
		rep.RSSOverBudget = (rep.PeakRSSMiB - rep.BaseRSSMiB) / rep.BudgetMiB
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "median: sfsweep %.0f tokens/s%s", rep.Native, ofPeak(rep.Native*rep.GFLOPStep/float64(rep.TokensStep), rep.PeakGFLOPS))
	if rep.Torch > 0 {
		fmt.Fprintf(stdout, ", pytorch %.0f tokens/s, ratio sfsweep/pytorch = %.2f×", rep.Torch, rep.Ratio)
	}
	fmt.Fprintln(stdout)
	if rep.PeakRSSMiB > 0 {
		fmt.Fprintf(stdout, "memory: peak RSS %.0f MiB, %.0f MiB of it the engine's: %.2f× the budget of %.0f MiB (params + grads + AdamW state + activations)\n",
			rep.PeakRSSMiB, rep.PeakRSSMiB-rep.BaseRSSMiB, rep.RSSOverBudget, rep.BudgetMiB)
	}
	return nil
}

// ofPeak writes gflops as a fraction of peak, " (66% of the 234 GFLOP/s peak)", or nothing
// where the peak is unknown.
func ofPeak(gflops, peakGFLOPS float64) string {
	if peakGFLOPS <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.0f%% of the %.0f GFLOP/s peak)", 100*gflops/peakGFLOPS, peakGFLOPS)
}

// benchEngine trains the native engine with AdamW on uniformly random tokens, as the PyTorch
// peer does.
type benchEngine struct {
	cfg             model.Config
	m               *native.Model[float32]
	opt             *sfadamw.AdamW[float32]
	tokens, targets []int32
	rng             *rand.Rand
	B, T            int
}

func newBenchEngine(cfg model.Config, B, T int) (*benchEngine, error) {
	m, err := native.New[float32](cfg, B, T)
	if err != nil {
		return nil, err
	}
	model.Init(cfg, 0, m.Params())
	opt, err := sfadamw.NewAdamW(sfadamw.AdamWConfig{Schedule: sfadamw.Schedule{Kind: sfadamw.Constant, Peak: 1e-3},
		Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}, m.Params())
	if err != nil {
		return nil, err
	}
	return &benchEngine{cfg: cfg, m: m, opt: opt, tokens: make([]int32, B*T), targets: make([]int32, B*T),
		rng: rand.New(rand.NewPCG(0, 0)), B: B, T: T}, nil
}

func (e *benchEngine) step() (float64, error) {
	// a random sequence of T+1 tokens per row: inputs are the first T, targets the last T
	for b := range e.B {
		prev := int32(e.rng.IntN(e.cfg.Vocab))
		for t := range e.T {
			next := int32(e.rng.IntN(e.cfg.Vocab))
			e.tokens[b*e.T+t], e.targets[b*e.T+t] = prev, next
			prev = next
		}
	}
	e.m.ZeroGrad()
	loss, err := e.m.Forward(e.tokens, e.targets)
	if err != nil {
		return 0, err
	}
	e.m.Backward()
	e.opt.Step(e.m.Grads())
	return loss, nil
}

func (e *benchEngine) round(ctx context.Context, r, warmup, steps int, status io.Writer) (benchResult, error) {
	res := benchResult{Engine: "sfsweep", Round: r}
	times := make([]float64, 0, steps)
	live := isTerminal(status)
	for s := 0; s < warmup+steps; s++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		t0 := time.Now()
		loss, err := e.step()
		if err != nil {
			return res, err
		}
		dt := time.Since(t0).Seconds()
		if s == 0 {
			res.LossFirst = loss
		}
		res.LossLast = loss
		if s >= warmup {
			times = append(times, dt)
		}
		if live {
			fmt.Fprintf(status, "\rround %d: step %d/%d  loss %.4f  %.1f ms/step ", r, s+1, warmup+steps, loss, dt*1e3)
		}
	}
	if live {
		fmt.Fprint(status, "\r\033[K")
	}
	med := median(times)
	res.MsPerStep = med * 1e3
	res.TokensPS = float64(e.B*e.T) / med
	res.GFLOPS = e.cfg.FLOPsPerStep(e.B, e.T) / med / 1e9
	return res, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
