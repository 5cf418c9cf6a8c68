package cuda

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// FastEnv names an environment variable that sets, by name, the engine's fast paths
// beyond those on by default (signedOff), e.g. SFSWEEP_CUDA_FAST=graph,embed; a name with a
// leading "-" turns a path off, e.g. -ce,-round,-norm,-swiglu for the path before them.
// Each but flash, ce1, lt, logits16 and act16 gives bitwise the results of the default
// path; flash computes attention in another order and rounds it elsewhere, ce1 sums the
// softmax's denominator in another order, lt may run other GEMM kernels, and logits16 and
// act16 round product outputs to bfloat16, so their bits differ within a tolerance. Those
// are an arithmetic, which a trial names by its backend (flash and ce1: cuda-bf16-flash):
// for a trial's engine FastEnv may name only the paths that change no bit (trialPaths).
// This package's own tests (New) take every name. Unset or empty, the engine runs the
// backend's paths.
const FastEnv = "SFSWEEP_CUDA_FAST"

// ceThreads is the block of the cross-entropy kernels, one block per row: its size fixes
// the order of the row's sums, so it is part of the arithmetic (the mirror in
// crossentropy_test.go runs the same partition).
const ceThreads = 512

// normRows is the rows of a partial sum of a norm-weight gradient (NORM_ROWS of rmsnorm.cu,
// which a test reads there): the chunks fix the order of the sum, so they are part of the
// arithmetic.
const normRows = 32

// normThreads is the block of rmsnorm_backward_fused for rows of c: a thread per column
// up to 1024, whole warps. Many warps per block keep enough loads in flight with a block
// per chunk of rows (256 blocks for 16 × 512); the block's size changes no bit.
func normThreads(c int) int { return min(1024, (c+31)/32*32) }

// fastPaths is a set of fast paths, one bit each.
type fastPaths uint32

const (
	// fastCE splits the cross-entropy into a loss kernel that leaves the logits as they
	// are and keeps each row's max and 1/Σexp, and a gradient kernel that writes the
	// logits' gradient, in bf16 mode straight as the bfloat16 operand of both head
	// products, so no probabilities are stored and no rounding pass runs.
	fastCE fastPaths = 1 << iota
	// fastRound has LLaMA's kernels that produce a product's operand (RMSNorm, SwiGLU,
	// attention's permutations and causal softmax, forward and backward) write its
	// bfloat16 copy as they write the float32 value, in bf16 mode, so no rounding pass
	// runs for them (round.go). The copies are allocated when the engine is made with the
	// path on.
	fastRound
	// fastFlash runs attention as deterministic flash attention on bfloat16 tensor cores
	// (flash.cu, flash.go) in bf16 mode for heads of flashD: no T×T scores or
	// probabilities are stored (a bfloat16 copy of q, k, v and a log-sum-exp per layer
	// instead), the backward pass recomputes them in two passes with no atomics. Other precisions and head sizes keep the materialised path. It changes the
	// bits (not in exactFast).
	fastFlash
	// fastNorm runs RMSNorm's backward pass as one kernel that updates the input gradient
	// and writes the weight gradient's partial sums (rmsnorm.cu), in every precision, and, in
	// bf16 mode with fastRound, its forward pass writes only the bfloat16 copy of its
	// output, which is all the next product reads (round.go).
	fastNorm
	// fastSwiGLU has SwiGLU, in bf16 mode with fastRound, write only the bfloat16 copies
	// of its output and of its input gradient, which are all the products read (round.go).
	fastSwiGLU
	// fastCE1 is fastCE with the loss kernel reading the logits once instead of twice, in
	// bf16 mode: an online softmax (crossentropy.cu) whose running max and rescaled sum
	// give the exact max and a sum within float32's error of the two-pass one. It changes
	// the bits (not in exactFast); float32 and TF32 keep the two-pass kernels.
	fastCE1
	// fastGraph has Accumulate replay a micro-batch's forward and backward passes from a
	// CUDA graph captured once on the engine's stream (graph.go), instead of issuing its
	// ~800 operations one by one: the same operations on the same buffers in the same
	// order, so the same bits. Forward and Backward, and an engine in the timing mode, run
	// eagerly; a capture that fails turns it off, with a log line that says why.
	fastGraph
	// fastLt runs the products of bf16 mode on cuBLASLt (lt.go) instead of cublasGemmEx,
	// each with the algorithm its heuristic picks for the product's shape and pointer
	// alignments, kept per engine, and adds the residuals of LLaMA and GPT-2 in the
	// product that reads them (D = A·B + C with C apart from D) instead of copying them into
	// the output first. cuBLASLt may pick other kernels than GemmEx for a shape, so it is
	// not counted as changing no bit until a GPU run shows it (not in exactFast).
	fastLt
	// fastLogits16 has the LM head's product write the logits in bfloat16, in bf16 mode, as
	// torch.autocast leaves them, and the loss (crossentropy_loss_online's online softmax)
	// and gradient kernels read them so (crossentropy.cu): half the bytes of the largest
	// activation, written once and read twice. The loss is that of the logits rounded to
	// bfloat16, so it changes the bits (not in exactFast).
	fastLogits16
	// fastAct16 has LLaMA keep product outputs in bfloat16, as torch.autocast does, in bf16
	// mode with fastRound and fastSwiGLU: the product of W13 writes gu, and that of W2's
	// transpose in the backward pass writes dh, in bfloat16 (into the first half of their
	// float32 buffers), and SwiGLU's kernels read them so (kernels.cu); gu is read again in
	// the backward pass. With fastFlash too, the backward product through Wo writes dy in
	// bfloat16, and the flash forward pass writes O in bfloat16 only (the copy the product
	// through Wo reads), which flash_backward_pre_bf16 reads with dy, and with fastRope as well the
	// product of Wqkv writes qkv in bfloat16, which flash_permute_rope_bf16 rotates into
	// the heads' layout (or the flash kernels read as it is, with fastRows); with
	// fastNorm, the products that give the gradient at a norm's output write it in
	// bfloat16, which rmsnorm_backward_fused_from_bf16 reads. The values are rounded before
	// SwiGLU, RoPE and RMSNorm's backward pass, and D of flash's backward pass is taken on
	// O rounded, so it changes the bits (not in exactFast).
	fastAct16
	// fastRope applies LLaMA's RoPE inside the flash path's permutation of q, k, v
	// (flash_permute_rope, flash.cu) instead of in a pass of its own over qkv: the same
	// float32 expressions, so the same bits as rope then flash_permute. It acts only with
	// fastFlash; with fastAct16 too, qkv is written in bfloat16 and read so. With
	// fastRound as well, the backward kernels undo the rotation themselves and write the
	// gradients of q, k, v straight into dqkv's bfloat16 copy (flash_backward_*_rope16):
	// the gather's expressions on the same values, so the same bits, and no float32 dq, dk,
	// dv or dqkv in memory.
	fastRope
	// fastEmbed adds the embedding's gradient from the rows of each token, which the host
	// lists as it stages the tokens (embed.go), one block per token (encoder_backward_rows,
	// embedding.cu), instead of every thread of encoder_backward scanning every token of
	// the micro-batch: the same additions in the same order, so the same bits, in every
	// precision.
	fastEmbed
	// fastRows has the flash kernels read q, k and v on the act16 path with rope straight
	// from qkv's bfloat16 rows, as the product of Wqkv writes them, rotating q and k as
	// they load each tile (flash_forward_rows and flash_backward_*_rows), instead of
	// flash_permute_rope_bf16 rotating them once into the heads' layout that flash_forward
	// and flash_backward_*_rope16 read. The tiles hold the same bits either way, so it
	// changes no bit; it saves a pass over qkv and costs a rotation per tile loaded (the
	// backward kernels load each tile of q or k once per tile of the other side).
	fastRows
)

// The flash kernels' tiles, FLASH_D, FLASH_BR and FLASH_BC of flashmath/flash_tiles.h
// (a test reads them there): the head size they cover, the query rows of a block and the
// keys of a tile; flashThreads is FLASH_WARPS·32.
const (
	flashD       = 64
	flashBR      = 64
	flashBC      = 64
	flashThreads = 128
)

// fastPath is a fast path's name in FastEnv and the kernels it needs.
type fastPath struct {
	name    string
	path    fastPaths
	kernels []string
}

// allFast is the set of every fast path.
func allFast() fastPaths {
	var f fastPaths
	for _, n := range fastNames {
		f |= n.path
	}
	return f
}

// flashScale returns the scale of the scores, 1/√D, and that scale times log2(e), which
// the kernels' exp2 takes.
func flashScale() (scale, scaleLog2 float32) {
	return float32(1 / math.Sqrt(flashD)), float32(math.Log2E / math.Sqrt(flashD))
}

// signedOff is the set of fast paths on by default: those a GPU run has shown to give
// bitwise the losses and gradients of the path before them (TestFastPathsBitwise on an
// H200, for LLaMA and GPT-2, bf16, TF32 and float32, llama-124m included), so the
// arithmetic keeps its name. The path before them stays, for comparison, behind FastEnv's
// "-" names.
const signedOff = fastCE | fastRound | fastNorm | fastSwiGLU

// exactFast is the set of the fast paths that change no bit.
func exactFast() fastPaths {
	return allFast() &^ (fastFlash | fastCE1 | fastLt | fastLogits16 | fastAct16)
}

// fastNames are the names FastEnv takes and the kernels each path needs, which a PTX made
// before the path lacks.
var fastNames = []fastPath{
	{"ce", fastCE, []string{"crossentropy_loss", "crossentropy_grad", "crossentropy_grad_bf16"}},
	{"round", fastRound, []string{
		"rmsnorm_forward_bf16", "swiglu_forward_bf16", "rmsnorm_backward_dx_bf16", "swiglu_backward_bf16",
		"permute_bf16", "unpermute_bf16", "permute_backward_rope_bf16",
		"softmax_causal_bf16", "softmax_causal_backward_bf16",
	}},
	{"flash", fastFlash, []string{"flash_permute", "flash_forward", "flash_backward_pre", "flash_backward_dkdv", "flash_backward_dq"}},
	{"norm", fastNorm, []string{"rmsnorm_forward_to_bf16", "rmsnorm_backward_fused", "rmsnorm_backward_fused_bf16"}},
	{"swiglu", fastSwiGLU, []string{"swiglu_forward_to_bf16", "swiglu_backward_to_bf16"}},
	{"ce1", fastCE1, []string{"crossentropy_loss_online", "crossentropy_grad", "crossentropy_grad_bf16"}},
	{"graph", fastGraph, nil},
	{"lt", fastLt, nil},
	{"logits16", fastLogits16, []string{"crossentropy_loss_online_bf16", "crossentropy_grad_from_bf16"}},
	{"act16", fastAct16, []string{"swiglu_forward_from_bf16", "swiglu_backward_from_bf16", "flash_backward_pre_bf16", "rmsnorm_backward_fused_from_bf16"}},
	{"rope", fastRope, []string{"flash_permute_rope", "flash_backward_dkdv_rope16", "flash_backward_dq_rope16"}},
	{"embed", fastEmbed, []string{"encoder_backward_rows"}},
	{"rows", fastRows, []string{"flash_forward_rows", "flash_backward_dkdv_rows", "flash_backward_dq_rows"}},
}

// fastJoint are the kernels that paths need only together, beyond each one's own, and the
// path of them that uses the kernels (which a test leaves out where the PTX lacks them).
var fastJoint = []struct {
	paths, user fastPaths
	kernels     []string
}{
	// act16's bfloat16 qkv permuted and rotated once for flash (qkv16)
	{fastAct16 | fastFlash | fastRope, fastAct16, []string{"flash_permute_rope_bf16"}},
}

func (f fastPaths) has(p fastPaths) bool { return f&p != 0 }

// String is f in FastEnv's form.
func (f fastPaths) String() string {
	var names []string
	for _, n := range fastNames {
		if f.has(n.path) {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

// parseFast reads FastEnv's value: names separated by commas, spaces ignored, each adding
// its path to signedOff, or with a leading "-" taking it away.
func parseFast(s string) (fastPaths, error) {
	f := signedOff
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		off := strings.HasPrefix(name, "-")
		name = strings.TrimSpace(strings.TrimPrefix(name, "-"))
		if name == "" {
			if off {
				return 0, fmt.Errorf("cuda: %s=%q: a \"-\" names no fast path", FastEnv, s)
			}
			continue
		}
		i := fastIndex(name)
		if i < 0 {
			known := make([]string, len(fastNames))
			for j, n := range fastNames {
				known[j] = n.name
			}
			return 0, fmt.Errorf("cuda: %s=%q: unknown fast path %q (known: %s; a leading \"-\" turns one off)", FastEnv, s, name, strings.Join(known, ", "))
		}
		if off {
			f &^= fastNames[i].path
		} else {
			f |= fastNames[i].path
		}
	}
	return f, nil
}

// arithmeticPaths are the bit-changing fast paths of each backend of the family's catalog
// that has some (training/backend): the arithmetic a trial names by its backend, on top of
// signedOff. The others have none.
var arithmeticPaths = map[string]fastPaths{
	"cuda-bf16-flash": fastFlash | fastCE1,
}

// trialPaths is the fast paths of an engine of the catalog's backend name, made for a
// trial, with FastEnv's value s: the backend's own arithmetic (signedOff and
// arithmeticPaths), with the paths that change no bit (exactFast) turned on or off as s
// names them. A name in s that changes bits is refused, naming the backend that has it: no
// environment variable may change a trial's bits, which its config's backend fixes.
func trialPaths(name, s string) (fastPaths, error) {
	f, err := parseFast(s)
	if err != nil {
		return 0, err
	}
	own := arithmeticPaths[name]
	if extra := f &^ exactFast() &^ own; extra != 0 {
		return 0, fmt.Errorf("cuda: %s=%q: %s change the bits of backend %s, and no environment variable may change a trial's bits: %s",
			FastEnv, s, extra, name, bitsHome(extra))
	}
	if lost := turnedOff(s) & own; lost != 0 {
		return 0, fmt.Errorf("cuda: %s=%q: turns off %s, which backend %s computes with: name another backend", FastEnv, s, lost, name)
	}
	return f | own, nil
}

// turnedOff is the paths FastEnv's value s names with a leading "-" (s parsed).
func turnedOff(s string) fastPaths {
	var f fastPaths
	for _, name := range strings.Split(s, ",") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(name), "-"); ok {
			if i := fastIndex(strings.TrimSpace(n)); i >= 0 {
				f |= fastNames[i].path
			}
		}
	}
	return f
}

// bitsHome says where the bit-changing paths f can run: the backends whose arithmetic
// holds them, or the engine's own tests.
func bitsHome(f fastPaths) string {
	var homes []string
	for name, own := range arithmeticPaths {
		if f&^own == 0 {
			homes = append(homes, "backend "+name+" computes with them")
		}
	}
	if len(homes) == 0 {
		return "no backend computes with them; they run in this package's own tests only"
	}
	slices.Sort(homes)
	return strings.Join(homes, "; ")
}

func fastIndex(name string) int {
	for i, n := range fastNames {
		if n.name == name {
			return i
		}
	}
	return -1
}

// fastKernels returns the kernels the paths of f need, alone and together.
func fastKernels(f fastPaths) []string {
	var ks []string
	for _, n := range fastNames {
		if f.has(n.path) {
			ks = append(ks, n.kernels...)
		}
	}
	for _, j := range fastJoint {
		if f&j.paths == j.paths {
			ks = append(ks, j.kernels...)
		}
	}
	return ks
}
