package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/training/backend"
)

// printGPUs prints, for each GPU that trials in flight train on or wait for, its trials and
// its memory: one line a GPU, named with its worker process.
func printGPUs(w io.Writer, trials []sweepclient.TrialState) {
	for _, g := range sweepclient.GPUs(trials) {
		m := g.Memory
		line := fmt.Sprintf("  %s (worker %s): %d trial(s) admitted, %d waiting; %s reserved, %s free of %s",
			m.Name, strings.TrimSuffix(g.Worker, "@"), m.Trials, m.Waiting, backend.GiB(m.Reserved), backend.GiB(m.Free), backend.GiB(m.Total))
		if len(g.Training) > 0 {
			line += "; training " + strings.Join(g.Training, ", ")
		}
		if len(g.Waiting) > 0 {
			line += "; waiting " + strings.Join(g.Waiting, ", ")
		}
		fmt.Fprintln(w, line)
	}
}
