//go:build cuda

package cuda

import (
	"fmt"
	"os"

	"gorgonia.org/cu"
)

// The engine's timing mode on the device: CUDA events recorded on the engine's stream, where
// all its work goes, made as needed and reused from call to call. Beside other engines the
// times include the intervals the GPU spent on their work.

// events is the clock of a profiler: a pool of CUDA events, of which the first used are
// recorded in the current call, on stream.
type events struct {
	stream cu.Stream
	evs    []cu.Event
	used   int
}

func (c *events) mark() (int, error) {
	if c.used == len(c.evs) {
		ev, err := cu.MakeEvent(cu.DefaultEvent)
		if err != nil {
			return 0, fmt.Errorf("cuEventCreate: %w", err)
		}
		c.evs = append(c.evs, ev)
	}
	if err := c.evs[c.used].Record(c.stream); err != nil {
		return 0, fmt.Errorf("cuEventRecord: %w", err)
	}
	c.used++
	return c.used - 1, nil
}

func (c *events) elapsed(from, to int) (float64, error) {
	if err := c.evs[to].Synchronize(); err != nil {
		return 0, fmt.Errorf("cuEventSynchronize: %w", err)
	}
	ms, err := c.evs[from].Elapsed(c.evs[to])
	if err != nil {
		return 0, fmt.Errorf("cuEventElapsedTime: %w", err)
	}
	return ms, nil
}

func (c *events) reset() { c.used = 0 }

func (c *events) destroy() {
	for i := range c.evs {
		_ = cu.DestroyEvent(&c.evs[i])
	}
	c.evs = nil
}

// startProfile switches the timing mode on when ProfileEnv asks for it.
func (e *Engine) startProfile() {
	if v := os.Getenv(ProfileEnv); v != "" && v != "0" {
		e.prof = &profiler{clk: &events{stream: e.st.s}}
	}
}

// Profile returns the device time of the engine's work by phase and category, and false
// when the timing mode is off (ProfileEnv).
func (e *Engine) Profile() (Profile, bool) {
	if e.prof == nil {
		return Profile{}, false
	}
	return e.prof.profile(), true
}

// call starts an engine call of phase ph whose operations are all charged to c, or, with
// c = numCategories, charged one by one by the run that issues them; the returned function
// ends it, counted in the profile's calls or not. With the timing mode off it does
// nothing. It is called with the device locked, and its result deferred before the unlock.
func (e *Engine) call(ph Phase, c Category, counted bool) func() {
	p := e.prof
	if p == nil {
		return func() {}
	}
	p.begin(ph)
	if c < numCategories {
		p.op(c)
	}
	return func() { p.end(counted) }
}

// charge charges the run's next device operation to c, or to the region the run is in.
func (r *run) charge(c Category) {
	if r.e == nil || r.e.prof == nil || r.err != nil {
		return
	}
	if r.inRegion {
		c = r.region
	}
	r.e.prof.op(c)
}

// within charges the run's operations to c until the returned function is called.
func (r *run) within(c Category) func() {
	r.region, r.inRegion = c, true
	return func() { r.inRegion = false }
}

// doAs is do for an operation charged to c.
func (r *run) doAs(c Category, f func() error) {
	r.charge(c)
	r.do(f)
}

// endProfile writes the profile where ProfileEnv says and frees the events.
func (e *Engine) endProfile() {
	p := e.prof
	if p == nil {
		return
	}
	e.prof = nil
	defer p.clk.(*events).destroy()
	title := fmt.Sprintf("%s: %s, %d layers of width %d, vocabulary %d, micro-batch %d×%d",
		e.name, e.cfg.Arch, e.cfg.Layers, e.cfg.Dim, e.cfg.Vocab, e.b, e.t)
	v := os.Getenv(ProfileEnv)
	if v == "1" {
		_ = p.report(os.Stderr, title)
		return
	}
	f, err := os.OpenFile(v, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cuda: %s: %v\n", ProfileEnv, err)
		return
	}
	defer f.Close()
	if err := p.report(f, title); err != nil {
		fmt.Fprintf(os.Stderr, "cuda: %s: %v\n", ProfileEnv, err)
	}
}
