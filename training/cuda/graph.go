//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

// gorgonia.org/cu v0.9.4 builds graphs node by node but has no stream capture, and does
// not instantiate or launch a graph, so the engine calls the driver here. The capture is
// thread-local: a call of this thread that is not safe inside a capture (an allocation, a
// synchronisation, a synchronous copy) fails, and with it the capture, while other engines'
// threads go on as they are.
static int sfsweepBeginCapture(void *s) {
	return (int)cuStreamBeginCapture((CUstream)s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}

static int sfsweepEndCapture(void *s, CUgraph *g) { return (int)cuStreamEndCapture((CUstream)s, g); }

static int sfsweepInstantiate(CUgraphExec *x, CUgraph g) { return (int)cuGraphInstantiateWithFlags(x, g, 0); }

static int sfsweepGraphLaunch(CUgraphExec x, void *s) { return (int)cuGraphLaunch(x, (CUstream)s); }

static int sfsweepGraphDestroy(CUgraph g) { return (int)cuGraphDestroy(g); }

static int sfsweepGraphExecDestroy(CUgraphExec x) { return (int)cuGraphExecDestroy(x); }
*/
import "C"

import (
	"fmt"
	"log/slog"
)

// The micro-batch graph (FastEnv "graph"): Accumulate's forward and backward passes
// captured once on the engine's stream and replayed for each later micro-batch, so a
// micro-batch costs one launch on the host instead of ~800. Every buffer of the passes is
// allocated once when the engine is made, so the graph's operations read and write the
// same addresses at every replay: the micro-batch's tokens and targets are staged into
// e.tokens and e.targets before the launch, the bfloat16 copy of the parameters is remade
// before it where they changed, and the loss kernel writes e.losses, which a copy after
// the launch moves into the loss queue's slot. Nothing inside the captured passes
// allocates, waits or copies to or from the host (the capture mode refuses it), so
// replaying them runs the same kernels on the same data in the same order as running them
// eagerly: the same bits.

// microGraph is an engine's instantiated graph and what decides when to make it.
type microGraph struct {
	plan     graphPlan
	exec     C.CUgraphExec // nil until captured
	err      error         // why the capture failed, once it did
	launches int           // replays, counted for the tests
}

// passes runs the forward and backward passes of the micro-batch staged, as graphPlan
// says: eagerly, by capturing them and launching the graph, or by replaying it.
func (e *Engine) passes() error {
	step, drop := e.graph.plan.next(e.fast, e.prof != nil)
	if drop {
		e.freeGraph()
	}
	switch step {
	case captureGraph:
		err := e.capture()
		e.graph.plan.captured(err == nil)
		if err != nil {
			e.graph.err = err
			slog.Warn("cuda: the micro-batch's passes could not be captured as a CUDA graph; the engine runs them eagerly",
				"backend", e.name, "micro_batch", fmt.Sprintf("%d×%d", e.b, e.t), "err", err)
			return e.eagerPasses()
		}
		return e.replay()
	case replayGraph:
		return e.replay()
	}
	return e.eagerPasses()
}

// eagerPasses issues the passes' operations one by one.
func (e *Engine) eagerPasses() error {
	if err := e.forwardPass(); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	if err := e.backwardPass(); err != nil {
		return fmt.Errorf("backward: %w", err)
	}
	return nil
}

// captureHook, when set (by tests), runs while the stream captures, after the passes.
var captureHook func()

// capture records the passes into a graph and instantiates it; it runs none of them. A
// failure leaves the stream out of capture mode and nothing of the graph behind.
func (e *Engine) capture() error {
	if r := e.newRun(); r.err != nil { // the bfloat16 copy of the parameters, outside
		return r.err
	}
	s := streamHandle(e.st.s)
	var g C.CUgraph
	err := func() error {
		deviceWide.RLock()
		defer deviceWide.RUnlock()
		if err := cuErr(C.sfsweepBeginCapture(s)); err != nil {
			return fmt.Errorf("cuStreamBeginCapture: %w", err)
		}
		e.capturing = true
		err := e.eagerPasses()
		if captureHook != nil {
			captureHook()
		}
		e.capturing = false
		if endErr := cuErr(C.sfsweepEndCapture(s, &g)); err == nil && endErr != nil {
			err = fmt.Errorf("cuStreamEndCapture: %w", endErr)
		}
		return err
	}()
	if err == nil && g == nil {
		err = fmt.Errorf("cuStreamEndCapture gave no graph")
	}
	if err == nil {
		var exec C.CUgraphExec
		if ierr := cuErr(C.sfsweepInstantiate(&exec, g)); ierr != nil {
			err = fmt.Errorf("cuGraphInstantiate: %w", ierr)
		} else {
			e.graph.exec = exec
		}
	}
	if g != nil {
		// the instantiated graph is independent of the captured one
		_ = C.sfsweepGraphDestroy(g)
	}
	return err
}

// replay launches the graph on the stream, after the micro-batch's tokens and the
// parameters' bfloat16 copy, and moves the loss rows it wrote into the queue's slot.
func (e *Engine) replay() error {
	if r := e.newRun(); r.err != nil {
		return r.err
	}
	if err := cuErr(C.sfsweepGraphLaunch(e.graph.exec, streamHandle(e.st.s))); err != nil {
		return fmt.Errorf("cuGraphLaunch: %w", err)
	}
	e.graph.launches++
	return e.st.dtod(e.lossRows(), e.losses, 2*e.n) // n float64 are 2n float32
}

// freeGraph destroys the instantiated graph, if any; the stream must not be running it.
func (e *Engine) freeGraph() {
	if e.graph.exec != nil {
		_ = C.sfsweepGraphExecDestroy(e.graph.exec)
		e.graph.exec = nil
	}
}
