package cuda

// The life of an engine's micro-batch graph (FastEnv "graph", graph.go), kept free of cgo
// so that it is tested without a GPU: which of Accumulate's micro-batches runs its passes
// eagerly, which captures them, and which replays the graph.

// graphStep is what an Accumulate does with its micro-batch's passes.
type graphStep uint8

const (
	// runEager issues the passes' operations one by one.
	runEager graphStep = iota
	// captureGraph records the passes into a graph, without running them, then launches it.
	captureGraph
	// replayGraph launches the graph captured before.
	replayGraph
)

// graphPlan is the state of an engine's micro-batch graph. The first micro-batch with the
// path on runs eagerly: it is the first use of cuBLAS's kernels and of lazily loaded
// modules, which must not happen inside a capture. The second captures, and every later one
// replays. A graph holds the fast paths it was captured with; other paths need a new one.
// A failed capture turns the path off for the engine's life.
type graphPlan struct {
	fast   fastPaths // the paths of the warm-up and of the graph
	warm   bool      // a micro-batch ran eagerly with fast
	ready  bool      // a graph of fast is instantiated
	failed bool      // a capture failed: eager from now on
}

// next returns what the micro-batch does, given the engine's paths and whether its timing
// mode is on (whose events a graph cannot hold); drop says the graph instantiated before is
// for other paths and must be destroyed first.
func (p *graphPlan) next(fast fastPaths, profiling bool) (step graphStep, drop bool) {
	if !fast.has(fastGraph) || profiling || p.failed {
		return runEager, false
	}
	if fast != p.fast {
		drop = p.ready
		*p = graphPlan{fast: fast}
	}
	switch {
	case p.ready:
		return replayGraph, drop
	case p.warm:
		return captureGraph, drop
	}
	p.warm = true
	return runEager, drop
}

// captured records a capture's outcome: a graph ready to replay, or the path off.
func (p *graphPlan) captured(ok bool) {
	p.ready, p.failed = ok, !ok
}
