package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/cpu"
)

// The PyTorch peer of sfsweep bench: bench/torch/torch_llama.py, the same model and
// optimizer in PyTorch, run at its best (OpenBLAS, every core the engine uses) or not at
// all. A ratio against PyTorch on Netlib's reference BLAS would measure that BLAS.

// torchPeers maps our presets to the PyTorch peer's configurations (bench/torch/torch_llama.py).
var torchPeers = map[string]string{"tiny-llama": "tiny", "small-llama": "small"}

// torchDir holds the peer's scripts, relative to the repository root.
var torchDir = filepath.Join("bench", "torch")

// torchPython is the peer's interpreter: Debian's, where bench/torch/torch-best.sh installs
// PyTorch. A variable, so that tests can stand another in.
var torchPython = "/usr/bin/python3"

// peerBLAS is what bench/torch/blas.py reports of the BLAS PyTorch computes with.
type peerBLAS struct {
	Vendor       string `json:"vendor"` // openblas, blis, mkl; reference (Netlib's) or unknown
	Version      string `json:"version,omitempty"`
	Library      string `json:"library,omitempty"`
	Threads      *int   `json:"threads"` // the BLAS's own threads; nil where it does not say
	TorchThreads int    `json:"torch_threads"`
	TorchVersion string `json:"torch_version"`
}

// notAtBest says why PyTorch with this BLAS is not at its best beside an engine on threads
// cores, or "" when it is: an optimised BLAS (OpenBLAS, BLIS, MKL), and PyTorch and its
// BLAS on as many threads as the engine.
func (b peerBLAS) notAtBest(threads int) string {
	switch b.Vendor {
	case "openblas", "blis", "mkl":
	case "reference":
		return fmt.Sprintf("PyTorch computes with the reference BLAS (%s: unblocked loops, one thread)", b.Library)
	default:
		lib := b.Library
		if lib == "" {
			lib = "no BLAS library found"
		}
		return fmt.Sprintf("PyTorch computes with a BLAS not known to be optimised (%s; OpenBLAS, BLIS and MKL are)", lib)
	}
	if b.TorchThreads != threads {
		return fmt.Sprintf("PyTorch runs on %s, the engine on %d", threadsText(b.TorchThreads), threads)
	}
	if b.Threads != nil && *b.Threads != threads {
		return fmt.Sprintf("PyTorch's %s runs on %s, the engine on %d", b.Vendor, threadsText(*b.Threads), threads)
	}
	return ""
}

func (b peerBLAS) String() string {
	name := b.Version
	if name == "" {
		name = b.Vendor
	}
	threads := "its threads unknown"
	if b.Threads != nil {
		threads = "on " + threadsText(*b.Threads)
	}
	return fmt.Sprintf("torch %s on %s; BLAS %s (%s) %s", b.TorchVersion, threadsText(b.TorchThreads), name, b.Library, threads)
}

func threadsText(n int) string {
	if n == 1 {
		return "1 thread"
	}
	return strconv.Itoa(n) + " threads"
}

// torchPeer is the PyTorch peer, ready to run rounds.
type torchPeer struct {
	script, cfg string
	steps, warm string
	threads     int
	env         []string
	blas        peerBLAS
}

// newTorchPeer returns the peer of preset on threads threads, or nil and the reason it
// cannot run at its best. blas is the BLAS it would compute with, where that was found.
func newTorchPeer(ctx context.Context, mode, preset string, batch, threads int) (p *torchPeer, blas *peerBLAS, why string) {
	if mode == "off" {
		return nil, nil, "-torch off"
	}
	peerCfg, ok := torchPeers[preset]
	if !ok {
		return nil, nil, fmt.Sprintf("no PyTorch peer configuration for %s (peers exist for %v)", preset, slices.Sorted(maps.Keys(torchPeers)))
	}
	if batch > 0 {
		return nil, nil, "the PyTorch peer runs only the preset's batch size"
	}
	dir, err := filepath.Abs(torchDir)
	script := filepath.Join(dir, "torch_llama.py")
	if err != nil || !fileExists(script) {
		return nil, nil, "bench/torch/torch_llama.py not found (run from the repository root)"
	}
	if err := exec.CommandContext(ctx, torchPython, "-c", "import torch").Run(); err != nil {
		return nil, nil, "python3 cannot import torch (bench/torch/torch-best.sh setup installs it)"
	}
	p = &torchPeer{script: script, cfg: peerCfg, steps: "30", warm: "5", threads: threads, env: peerEnv(threads)}
	if peerCfg == "small" {
		p.steps, p.warm = "8", "2"
	}
	cmd := exec.CommandContext(ctx, torchPython, filepath.Join(dir, "blas.py"), "--threads", strconv.Itoa(threads))
	cmd.Env = p.env
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Sprintf("bench/torch/blas.py: %v", err)
	}
	if err := json.Unmarshal(out, &p.blas); err != nil {
		return nil, nil, fmt.Sprintf("bench/torch/blas.py: %v", err)
	}
	if why := p.blas.notAtBest(threads); why != "" {
		return nil, &p.blas, why + ": not PyTorch at its best, so no ratio against it " +
			"(bench/torch/torch-best.sh setup unpacks the OpenMP build of OpenBLAS, which bench then uses; SFSWEEP_OMPBLAS names another place)"
	}
	return p, &p.blas, ""
}

// peerEnv is the environment of PyTorch at its best on this kind of machine
// (bench/torch/torch-best.sh): OpenBLAS's OpenMP build, with its AVX-512 kernels where the
// CPU has AVX-512 and its AVX2 ones otherwise, on threads threads.
func peerEnv(threads int) []string {
	env := append(os.Environ(), "OMP_WAIT_POLICY=PASSIVE", "OPENBLAS_NUM_THREADS="+strconv.Itoa(threads), "OPENBLAS_CORETYPE="+openBLASCoreType())
	if omp := ompBLASDir(); omp != "" {
		env = append(env, "LD_LIBRARY_PATH="+omp)
	}
	return env
}

// round runs one round of the peer; a round that did not run at its best is an error.
func (p *torchPeer) round(ctx context.Context, round int) (benchResult, error) {
	cmd := exec.CommandContext(ctx, torchPython, p.script, "--config", p.cfg, "--steps", p.steps, "--warmup", p.warm,
		"--threads", strconv.Itoa(p.threads))
	cmd.Env = p.env
	out, err := cmd.Output()
	if err != nil {
		return benchResult{}, fmt.Errorf("%s: %w", p.script, err)
	}
	var r struct {
		Ms     float64  `json:"ms_per_step_median"`
		Tokens float64  `json:"tokens_per_s_median"`
		GFLOPS float64  `json:"achieved_gflops_median"`
		First  float64  `json:"loss_first"`
		Last   float64  `json:"loss_last"`
		BLAS   peerBLAS `json:"blas"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return benchResult{}, fmt.Errorf("parse the peer's JSON: %w", err)
	}
	if why := r.BLAS.notAtBest(p.threads); why != "" {
		return benchResult{}, fmt.Errorf("round %d: %s", round, why)
	}
	return benchResult{Engine: "pytorch", Round: round, MsPerStep: r.Ms, TokensPS: r.Tokens, GFLOPS: r.GFLOPS,
		LossFirst: r.First, LossLast: r.Last}, nil
}

// ompBLASDir returns the directory of the OpenMP build of OpenBLAS that torch-best.sh
// unpacks, if present.
func ompBLASDir() string {
	base := os.Getenv("SFSWEEP_OMPBLAS")
	if base == "" {
		base = "/tmp/sfsweep-ompblas"
	}
	dir := filepath.Join(base, "usr/lib/x86_64-linux-gnu/openblas-openmp")
	if fileExists(dir) {
		return dir
	}
	return ""
}

// openBLASCoreType is the OpenBLAS kernel set for this CPU: SkylakeX (AVX-512) or Haswell
// (AVX2 + FMA); forcing SkylakeX on a CPU without AVX-512 would stop at the first
// instruction.
func openBLASCoreType() string {
	if cpu.X86.HasAVX512F {
		return "SkylakeX"
	}
	return "Haswell"
}
