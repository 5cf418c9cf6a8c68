package cuda

import (
	"fmt"
	"io"
	"strings"
)

// The bookkeeping of the engine's timing mode (ProfileEnv), kept free of cgo so that it is
// tested without a GPU: which category each device operation is charged to, the spans of
// consecutive operations of one category, and the table. The device side (profile_cuda.go)
// only records CUDA events and reads their elapsed times.

// ProfileEnv names an environment variable that switches the engine's timing mode on: "1"
// prints each engine's profile to standard error when it closes, any other value but "0"
// is a file the profile is appended to. Unset (or "0"), the engine records no event and
// adds no synchronisation.
const ProfileEnv = "SFSWEEP_CUDA_PROFILE"

// Category is what a device operation's time is charged to in a profile.
type Category uint8

// The categories, in the order of the table. Attention is everything between the heads'
// inputs and outputs (permutes, softmax, its batched GEMMs and their bfloat16 operands); GEMM
// is the linear layers and the LM head; Round is the rounding of their operands to
// bfloat16; Head is the cross-entropy; Optimizer is all the work between Backward and
// the next Forward (gradient scaling and clearing, norm, step, averages) and the remaking
// of the parameters' bfloat16 copy after a step; Transfer is the copies between host and
// device.
const (
	Attention Category = iota
	Head
	Norms
	Elementwise
	GEMM
	Round
	Embedding
	Optimizer
	Transfer
	numCategories
)

var categoryNames = [numCategories]string{"attention", "head/CE", "norms", "elementwise", "GEMMs", "to_bf16", "embedding", "optimizer", "transfer"}

func (c Category) String() string {
	if c < numCategories {
		return categoryNames[c]
	}
	return fmt.Sprintf("Category(%d)", int(c))
}

// kernelCategory charges each kernel of kernels.cu; a kernel missing here counts as
// Elementwise (a test keeps the map complete).
var kernelCategory = map[string]Category{
	"permute": Attention, "permute_backward": Attention, "unpermute": Attention,
	"softmax_causal": Attention, "softmax_causal_backward": Attention,
	"crossentropy_forward": Head, "crossentropy_backward": Head,
	"rmsnorm_forward": Norms, "rmsnorm_backward_dx": Norms, "rmsnorm_backward_dw_part": Norms,
	"layernorm_forward": Norms, "layernorm_backward_dx": Norms, "layernorm_backward_dwdb_part": Norms,
	"sum_rows_add": Norms, // also GPT-2's bias gradients, after colsum_part
	"rope":         Elementwise, "swiglu_forward": Elementwise, "swiglu_backward": Elementwise,
	"gelu_forward": Elementwise, "gelu_backward": Elementwise, "bias_forward": Elementwise,
	"colsum_part": Elementwise, "scale_add": Elementwise,
	"to_bf16":         Round,
	"encoder_forward": Embedding, "encoder_backward": Embedding, "encoder_backward_rows": Embedding,
	"position_forward": Embedding, "position_backward": Embedding,
	"sumsq_chunks": Optimizer, "sfadamw_step": Optimizer, "adamw_step": Optimizer, "scale": Optimizer,
	"ewa_update": Optimizer, "sf_x": Optimizer, "ewa_update_x": Optimizer,
	// the fast paths (fast.go): each kernel in its old counterpart's category, the
	// rounding it absorbs with it
	"crossentropy_loss": Head, "crossentropy_grad": Head, "crossentropy_grad_bf16": Head,
	"rmsnorm_forward_bf16": Norms, "rmsnorm_backward_dx_bf16": Norms,
	"permute_bf16": Attention, "permute_backward_rope_bf16": Attention, "unpermute_bf16": Attention,
	"softmax_causal_bf16": Attention, "softmax_causal_backward_bf16": Attention,
	"swiglu_forward_bf16": Elementwise, "swiglu_backward_bf16": Elementwise,
	"rmsnorm_forward_to_bf16": Norms, "rmsnorm_backward_fused": Norms, "rmsnorm_backward_fused_bf16": Norms, "rmsnorm_backward_fused_from_bf16": Norms,
	"swiglu_forward_to_bf16": Elementwise, "swiglu_backward_to_bf16": Elementwise, "crossentropy_loss_online": Head,
	"crossentropy_loss_online_bf16": Head, "crossentropy_grad_from_bf16": Head,
	"swiglu_forward_from_bf16": Elementwise, "swiglu_backward_from_bf16": Elementwise,
	"flash_permute": Attention, "flash_permute_rope": Attention, "flash_forward": Attention, "flash_backward_pre": Attention, "flash_backward_pre_bf16": Attention, "flash_backward_dkdv": Attention, "flash_backward_dq": Attention,
	"flash_backward_dkdv_rope16": Attention, "flash_backward_dq_rope16": Attention, "flash_permute_rope_bf16": Attention,
	"flash_forward_rows": Attention, "flash_backward_dkdv_rows": Attention, "flash_backward_dq_rows": Attention,
}

func categoryOf(kernel string) Category {
	if c, ok := kernelCategory[kernel]; ok {
		return c
	}
	return Elementwise
}

// Phase is the engine call that issued an operation.
type Phase uint8

// The phases: Forward, Backward, and Update for the calls of the optimizers and the
// gradient buffer (ZeroGrad, ScaleGrads, Step, UpdateAverages).
const (
	PhaseForward Phase = iota
	PhaseBackward
	PhaseUpdate
	numPhases
)

// Profile is the device time of an engine's work by phase and category, from CUDA events
// recorded on the stream between spans of operations of one category. A span runs from
// the event before its first operation to the event after its last, so the categories of
// one call add up to the device time from its first operation to its last, idle gaps
// included: time the device spent waiting for the host is charged to the span it fell in,
// and the last span of a call holds the host's few microseconds from the call's last
// synchronisation to its end.
//
// How to read it: the total of a micro-batch (a Forward and a Backward) is device time
// inside the engine's calls. Wall time per micro-batch (from tokens/s) is larger by the
// host's work between calls (batches, losses, logging): total ÷ wall is how busy the
// device is, and a category's share says what to make faster only while that ratio is
// near 1. The timing mode waits for the device at the end of every call, so measure
// tokens/s with it off.
type Profile struct {
	// Calls counts the Forward and Backward calls and the optimizer steps timed.
	Calls [numPhases]int
	// MS is the device time in milliseconds, Ops the number of operations charged
	// (kernels, GEMMs, copies; one per call for the optimizers' calls).
	MS  [numPhases][numCategories]float64
	Ops [numPhases][numCategories]int
	// Warmup is set when the table includes the first optimizer step and the work before
	// it (lazy loading of the kernels, cuBLAS's first calls): it is left out as soon as a
	// later call is timed.
	Warmup bool
}

// Total is the device time of a phase over all its calls.
func (p *Profile) Total(ph Phase) float64 {
	var s float64
	for _, ms := range p.MS[ph] {
		s += ms
	}
	return s
}

func (p *Profile) add(q *Profile) {
	for ph := range p.MS {
		p.Calls[ph] += q.Calls[ph]
		for c := range p.MS[ph] {
			p.MS[ph][c] += q.MS[ph][c]
			p.Ops[ph][c] += q.Ops[ph][c]
		}
	}
}

func perCall(ms float64, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return ms / float64(calls)
}

// WriteTo writes the table: per category, the mean device time of a Forward, of a
// Backward, of a micro-batch (the two together) with its share, and of the optimizer's
// calls per step, then the operations per micro-batch; and the device time of a whole step.
func (p *Profile) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	f, bw, st := p.Calls[PhaseForward], p.Calls[PhaseBackward], p.Calls[PhaseUpdate]
	what := "steady state, first step left out"
	if p.Warmup {
		what = "first step included"
	}
	fmt.Fprintf(&b, "cuda profile: device ms per call (%d forwards, %d backwards, %d steps; %s)\n", f, bw, st, what)
	fmt.Fprintf(&b, "%-12s %9s %9s %9s %6s %9s %7s\n", "category", "forward", "backward", "fwd+bwd", "share", "step", "ops/mb")
	mb := perCall(p.Total(PhaseForward), f) + perCall(p.Total(PhaseBackward), bw)
	for c := range Category(numCategories) {
		fwd, bwd := perCall(p.MS[PhaseForward][c], f), perCall(p.MS[PhaseBackward][c], bw)
		share := 0.0
		if mb > 0 {
			share = 100 * (fwd + bwd) / mb
		}
		ops := perCall(float64(p.Ops[PhaseForward][c]), f) + perCall(float64(p.Ops[PhaseBackward][c]), bw)
		fmt.Fprintf(&b, "%-12s %9.3f %9.3f %9.3f %5.1f%% %9.3f %7.1f\n", c, fwd, bwd, fwd+bwd, share,
			perCall(p.MS[PhaseUpdate][c], st), ops)
	}
	fmt.Fprintf(&b, "%-12s %9.3f %9.3f %9.3f %5.1f%% %9.3f\n", "total",
		perCall(p.Total(PhaseForward), f), perCall(p.Total(PhaseBackward), bw), mb, 100.0, perCall(p.Total(PhaseUpdate), st))
	if st > 0 {
		per := float64(bw) / float64(st)
		fmt.Fprintf(&b, "a step: %.4g micro-batches × %.3f ms + %.3f ms = %.3f ms of device time\n",
			per, mb, perCall(p.Total(PhaseUpdate), st), per*mb+perCall(p.Total(PhaseUpdate), st))
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// clock records device events and reads the time between them: mark records an event
// after the work issued so far and returns its number; elapsed waits for event to and
// returns the milliseconds from event from; reset lets the numbers be used again.
type clock interface {
	mark() (int, error)
	elapsed(from, to int) (float64, error)
	reset()
}

// span is a run of consecutive operations of one category, between two marks.
type span struct {
	cat      Category
	from, to int
	ops      int
}

// profiler accumulates a Profile from the operations an engine issues: op charges one
// operation, and marks the clock only when the category changes, so a run of operations
// of one category costs two events, not two per operation; end closes the call's last
// span, waits for it and adds the call's spans to the profile.
type profiler struct {
	clk     clock
	phase   Phase
	open    bool // a span is open: cur, from and ops are its own
	cur     Category
	from    int
	ops     int
	pending []span
	prof    Profile // since the end of the first step
	warm    Profile // up to the end of the first step
	warmed  bool
	err     error // the first failure of the clock, after which nothing is recorded
}

// begin starts a call of the engine in phase ph.
func (p *profiler) begin(ph Phase) {
	p.phase = ph
}

// op charges the next operation issued to c.
func (p *profiler) op(c Category) {
	if p.err != nil {
		return
	}
	if p.open && c == p.cur {
		p.ops++
		return
	}
	m, err := p.clk.mark()
	if err != nil {
		p.fail(err)
		return
	}
	if p.open {
		p.pending = append(p.pending, span{p.cur, p.from, m, p.ops})
	}
	p.open, p.cur, p.from, p.ops = true, c, m, 1
}

// end ends the call: counted says whether it counts in Calls (an optimizer step does,
// clearing or scaling the gradients does not).
func (p *profiler) end(counted bool) {
	if p.err != nil {
		return
	}
	if p.open {
		m, err := p.clk.mark()
		if err != nil {
			p.fail(err)
			return
		}
		p.pending = append(p.pending, span{p.cur, p.from, m, p.ops})
		p.open = false
	}
	// The last span ends last, so waiting for it first makes the others' times ready.
	for i := len(p.pending) - 1; i >= 0; i-- {
		s := p.pending[i]
		ms, err := p.clk.elapsed(s.from, s.to)
		if err != nil {
			p.fail(err)
			return
		}
		p.prof.MS[p.phase][s.cat] += ms
		p.prof.Ops[p.phase][s.cat] += s.ops
	}
	p.pending = p.pending[:0]
	p.clk.reset()
	if counted {
		p.prof.Calls[p.phase]++
	}
	if counted && p.phase == PhaseUpdate && !p.warmed {
		p.warm, p.prof, p.warmed = p.prof, Profile{}, true
	}
}

func (p *profiler) fail(err error) {
	p.err = err
	p.open = false
	p.pending = p.pending[:0]
}

// profile returns the steady-state profile, or the warm-up's while nothing was timed
// after the first step.
func (p *profiler) profile() Profile {
	if p.warmed && p.prof.Calls != [numPhases]int{} {
		return p.prof
	}
	q := p.warm
	q.add(&p.prof)
	q.Warmup = true
	return q
}

// report writes the profile, and the clock's failure if there was one.
func (p *profiler) report(w io.Writer, title string) error {
	if _, err := fmt.Fprintln(w, title); err != nil {
		return err
	}
	q := p.profile()
	if _, err := q.WriteTo(w); err != nil {
		return err
	}
	if p.err != nil {
		_, err := fmt.Fprintf(w, "cuda profile: stopped early: %v\n", p.err)
		return err
	}
	return nil
}
