package cuda

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// fakeClock is a device whose operations each take a known time: marks read the time at
// which the work issued so far ends.
type fakeClock struct {
	now    float64   // ms of work issued so far
	marks  []float64 // the time of each mark
	waited []int     // the marks elapsed waited for, in order
	failAt int       // the mark that fails (0: none), counted from 1
}

func (c *fakeClock) mark() (int, error) {
	if c.failAt > 0 && len(c.marks)+1 == c.failAt {
		return 0, errors.New("out of events")
	}
	c.marks = append(c.marks, c.now)
	return len(c.marks) - 1, nil
}

func (c *fakeClock) elapsed(from, to int) (float64, error) {
	c.waited = append(c.waited, to)
	return c.marks[to] - c.marks[from], nil
}

func (c *fakeClock) reset() { c.marks = c.marks[:0] }

// issue charges one operation of ms to c, as the engine does: the charge before the work.
func issue(p *profiler, clk *fakeClock, c Category, ms float64) {
	p.op(c)
	clk.now += ms
}

func TestProfilerMarksOnlyWhenTheCategoryChanges(t *testing.T) {
	clk := &fakeClock{}
	p := &profiler{clk: clk}
	p.begin(PhaseForward)
	issue(p, clk, GEMM, 1)
	issue(p, clk, GEMM, 2)
	issue(p, clk, Norms, 0.5)
	issue(p, clk, GEMM, 4)
	issue(p, clk, GEMM, 1)
	issue(p, clk, GEMM, 1)
	if len(clk.marks) != 3 {
		t.Fatalf("%d marks before the end of the call, want 3 (one per change of category)", len(clk.marks))
	}
	p.end(true)
	q := p.profile()
	if got := q.MS[PhaseForward][GEMM]; got != 9 {
		t.Errorf("GEMM = %v ms, want 9", got)
	}
	if got := q.MS[PhaseForward][Norms]; got != 0.5 {
		t.Errorf("norms = %v ms, want 0.5", got)
	}
	if got := q.Ops[PhaseForward][GEMM]; got != 5 {
		t.Errorf("GEMM ops = %d, want 5", got)
	}
	if got := q.Total(PhaseForward); got != clk.now {
		t.Errorf("total = %v ms, want the call's %v", got, clk.now)
	}
	if clk.waited[0] != 3 {
		t.Errorf("waited first for mark %d, want the last (3)", clk.waited[0])
	}
	if len(clk.marks) != 0 || len(p.pending) != 0 {
		t.Errorf("after the call: %d marks, %d spans pending; want none", len(clk.marks), len(p.pending))
	}
}

func TestProfilerAccumulatesCallsAndLeavesOutTheFirstStep(t *testing.T) {
	clk := &fakeClock{}
	p := &profiler{clk: clk}
	microBatch := func(scale float64) {
		p.begin(PhaseForward)
		issue(p, clk, Embedding, 1*scale)
		issue(p, clk, Attention, 3*scale)
		issue(p, clk, Head, 2*scale)
		p.end(true)
		p.begin(PhaseBackward)
		issue(p, clk, Head, 4*scale)
		issue(p, clk, Attention, 6*scale)
		p.end(true)
	}
	step := func() {
		p.begin(PhaseUpdate)
		issue(p, clk, Optimizer, 0.25)
		p.end(false) // ZeroGrad
		p.begin(PhaseUpdate)
		issue(p, clk, Optimizer, 0.5)
		p.end(true)
	}
	microBatch(10) // the warm-up: ten times slower
	q := p.profile()
	if !q.Warmup || q.Calls != [numPhases]int{1, 1, 0} || q.MS[PhaseBackward][Attention] != 60 {
		t.Fatalf("before any step: %+v, want the warm-up micro-batch", q)
	}
	step()
	for range 3 {
		microBatch(1)
		microBatch(1)
		step()
	}
	q = p.profile()
	if q.Warmup {
		t.Error("Warmup set after later steps")
	}
	if q.Calls != [numPhases]int{6, 6, 3} {
		t.Errorf("calls = %v, want 6 forwards, 6 backwards, 3 steps", q.Calls)
	}
	want := map[Category][2]float64{Embedding: {6, 0}, Attention: {18, 36}, Head: {12, 24}}
	for c, w := range want {
		if q.MS[PhaseForward][c] != w[0] || q.MS[PhaseBackward][c] != w[1] {
			t.Errorf("%v = %v forward, %v backward; want %v", c, q.MS[PhaseForward][c], q.MS[PhaseBackward][c], w)
		}
	}
	if got := q.MS[PhaseUpdate][Optimizer]; got != 3*0.75 {
		t.Errorf("optimizer = %v ms, want %v (three steps and their ZeroGrads)", got, 3*0.75)
	}
	var b strings.Builder
	if _, err := q.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`\(6 forwards, 6 backwards, 3 steps; steady state, first step left out\)`,
		`(?m)^attention +3\.000 +6\.000 +9\.000 +56\.2% +0\.000 +2\.0$`,
		`(?m)^optimizer +0\.000 +0\.000 +0\.000 +0\.0% +0\.750 +0\.0$`,
		`(?m)^total +6\.000 +10\.000 +16\.000 +100\.0% +0\.750$`,
		`(?m)^a step: 2 micro-batches × 16\.000 ms \+ 0\.750 ms = 32\.750 ms of device time$`,
	} {
		if !regexp.MustCompile(re).MatchString(b.String()) {
			t.Errorf("table does not match %s:\n%s", re, b.String())
		}
	}
}

func TestProfilerStopsAtTheClocksFirstFailure(t *testing.T) {
	clk := &fakeClock{failAt: 3}
	p := &profiler{clk: clk}
	p.begin(PhaseForward)
	issue(p, clk, GEMM, 1)
	issue(p, clk, Norms, 1)
	issue(p, clk, GEMM, 1) // the third mark fails
	issue(p, clk, Norms, 1)
	p.end(true)
	if p.err == nil {
		t.Fatal("no error after the clock failed")
	}
	if q := p.profile(); q.Total(PhaseForward) != 0 || q.Calls != [numPhases]int{} {
		t.Errorf("profile after the failure: %+v, want nothing recorded", q)
	}
	var b strings.Builder
	if err := p.report(&b, "t"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "stopped early: out of events") {
		t.Errorf("report does not give the failure:\n%s", b.String())
	}
}

// TestEveryKernelHasACategory keeps kernelCategory in step with kernels.cu.
func TestEveryKernelHasACategory(t *testing.T) {
	src := kernelSource(t)
	names := regexp.MustCompile(`__global__ void (?:__launch_bounds__\(\w+\) )?(\w+)\(`).FindAllStringSubmatch(src, -1)
	if len(names) < 30 {
		t.Fatalf("found %d kernels in kernels.cu, want the ~34 it has", len(names))
	}
	for _, m := range names {
		if _, ok := kernelCategory[m[1]]; !ok {
			t.Errorf("kernel %s has no category in kernelCategory", m[1])
		}
	}
	if categoryOf("to_bf16") != Round || categoryOf("a_kernel_to_come") != Elementwise {
		t.Errorf("categoryOf: to_bf16 is %v, an unknown kernel %v; want to_bf16, elementwise",
			categoryOf("to_bf16"), categoryOf("a_kernel_to_come"))
	}
	for name := range kernelCategory {
		if !regexp.MustCompile(`__global__ void (__launch_bounds__\(\w+\) )?` + name + `\(`).MatchString(src) {
			t.Errorf("kernelCategory names %s, which kernels.cu does not define", name)
		}
	}
}

func TestCategoryNames(t *testing.T) {
	seen := map[string]bool{}
	for c := range Category(numCategories) {
		s := c.String()
		if s == "" || seen[s] {
			t.Errorf("category %d is named %q", c, s)
		}
		seen[s] = true
	}
	if got := Category(200).String(); got != "Category(200)" {
		t.Errorf("Category(200) = %q", got)
	}
}
