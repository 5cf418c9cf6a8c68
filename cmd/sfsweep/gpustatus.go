package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/training/backend"
)

// printGPUs prints, for each GPU that trials in flight train on or wait for, its trials and
// its memory as one of their last heartbeats saw it (they are a second apart at most): one
// line a GPU, named with its worker process (a GPU's index is its machine's).
func printGPUs(w io.Writer, trials []sweepclient.TrialState) {
	type gpuLine struct {
		worker, name      string
		training, waiting []string
		t                 sweepclient.TrialState // whose figures are printed
	}
	var gpus []*gpuLine
	for _, t := range trials {
		if t.GPU == nil {
			continue
		}
		i := slices.IndexFunc(gpus, func(g *gpuLine) bool { return g.worker == t.Worker && g.name == t.GPU.Name })
		if i < 0 {
			gpus = append(gpus, &gpuLine{worker: t.Worker, name: t.GPU.Name, t: t})
			i = len(gpus) - 1
		}
		g := gpus[i]
		if t.State == sweepclient.TrialAdmitting {
			g.waiting = append(g.waiting, t.ID)
		} else {
			g.training = append(g.training, t.ID)
		}
	}
	slices.SortFunc(gpus, func(a, b *gpuLine) int { return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.worker, b.worker)) })
	for _, g := range gpus {
		m := g.t.GPU
		line := fmt.Sprintf("  %s (worker %s): %d trial(s) admitted, %d waiting; %s reserved, %s free of %s",
			g.name, strings.TrimSuffix(g.worker, "@"), m.Trials, m.Waiting, backend.GiB(m.Reserved), backend.GiB(m.Free), backend.GiB(m.Total))
		if len(g.training) > 0 {
			line += "; training " + strings.Join(g.training, ", ")
		}
		if len(g.waiting) > 0 {
			line += "; waiting " + strings.Join(g.waiting, ", ")
		}
		fmt.Fprintln(w, line)
	}
}
