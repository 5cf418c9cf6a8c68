package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/workflows"
)

// sweepStatus is what status prints: the sweep's progress and the state of each trial in
// flight.
type sweepStatus struct {
	workflows.SweepProgress
	Trials []sweepclient.TrialState `json:"trials,omitempty"`
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	var r remote
	r.flags(fs)
	asJSON := fs.Bool("json", false, "print the progress as JSON")
	follow := fs.Bool("follow", false, "print the progress every few seconds until the sweep ends")
	dir := fs.String("dir", "", "the state directory of sfsweep run (.sfsweep): the sweep's trials as its store has them, by the sweep's name or ID, with no Temporal; while run runs, as of its last tables")
	if slices.ContainsFunc(args, func(a string) bool {
		return a == "-dir" || strings.HasPrefix(a, "-dir=") || a == "--dir" || strings.HasPrefix(a, "--dir=")
	}) {
		sweep, err := parseWithArg(fs, args, "a sweep's name or ID: sfsweep status -dir DIR SWEEP")
		if err != nil {
			return err
		}
		return localStatus(ctx, &r, *dir, sweep, *asJSON, stdout)
	}
	id, c, err := r.sweepClient(ctx, fs, args, "status")
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		var st sweepStatus
		var err error
		if st.SweepProgress, err = sweepclient.Progress(ctx, c, id); err != nil {
			return fmt.Errorf("status %s: %w", id, err)
		}
		if st.Trials, err = sweepclient.TrialStates(ctx, c, id, st.Running); err != nil {
			return fmt.Errorf("status %s: %w", id, err)
		}
		if *asJSON {
			b, _ := json.Marshal(st)
			fmt.Fprintln(stdout, string(b))
		} else {
			printStatus(stdout, id, st)
		}
		if !*follow || st.Done() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}

func printStatus(w io.Writer, id string, st sweepStatus) {
	p := st.SweepProgress
	if p.Configs != nil {
		fmt.Fprintf(w, "%s: a search of %d configurations so far (%s); %d trials completed, %d diverged, %d failed, %d running\n",
			id, sum(p.Configs), countsText(p.Configs), p.Completed, p.Diverged, p.Failed, len(p.Running))
	} else {
		fmt.Fprintf(w, "%s: %d/%d trials done (%d completed, %d diverged, %d failed, %d had results), %d running\n",
			id, p.Completed+p.Diverged+p.Failed+p.Skipped, p.Total, p.Completed, p.Diverged, p.Failed, p.Skipped, len(p.Running))
	}
	if len(p.Engines) > 1 {
		var parts []string
		for _, a := range slices.Sorted(maps.Keys(p.Engines)) {
			parts = append(parts, fmt.Sprintf("%s (%d)", a, p.Engines[a]))
		}
		fmt.Fprintf(w, "  results from engines of different arithmetic: %s; cells may differ in their last digits\n", strings.Join(parts, ", "))
	}
	for _, t := range st.Trials {
		line := fmt.Sprintf("  trial %s: %s", t.ID, t.State)
		switch t.State {
		case sweepclient.TrialWaiting:
			if t.Trainer == "" {
				line += fmt.Sprintf(" for a worker of device %s: none polls task queue %s (start sfsweep worker -queue gpu from a build that has a %s backend)", t.Device, t.Queue, t.Device)
				break
			}
			line += fmt.Sprintf(" for a worker with trainer %s at the trial's identity, on device %s: none polls task queue %s (register it in a worker's -trainers; the worker prints each trainer's identity when it starts)", t.Trainer, t.Device, t.Queue)
		case sweepclient.TrialAdmitting:
			line = fmt.Sprintf("  trial %s: %s", t.ID, t.Waiting)
		case sweepclient.TrialQueued:
			line += fmt.Sprintf(" on task queue %s: its workers are busy", t.Queue)
		}
		if t.Attempt > 1 {
			line += fmt.Sprintf(" (attempt %d)", t.Attempt)
		}
		if t.LastFailure != "" {
			line += "; last failure: " + t.LastFailure
		}
		if t.Refused > 0 {
			line += fmt.Sprintf("; %d metrics lines refused, the first %s", t.Refused, t.RefusedFirst)
		}
		fmt.Fprintln(w, line)
	}
	for _, f := range p.Failures {
		fmt.Fprintf(w, "  trial %s: failed: %s\n", f.TrialID, f.Reason)
	}
	if n := p.Failed - len(p.Failures); n > 0 && len(p.Failures) > 0 {
		fmt.Fprintf(w, "  (and %d more failed trials: their reasons are in the sweep's tables and page)\n", n)
	}
	printGPUs(w, st.Trials)
}

// localStatus prints the trials of sweep (its name, or its ID: sweep-<name>-<hash>) as the
// store of sfsweep run's state directory dir has them: its index of trials (report.Index),
// which each build of its tables rewrites.
func localStatus(ctx context.Context, r *remote, dir, sweep string, asJSON bool, stdout io.Writer) error {
	store, closeStore, err := openResults(ctx, r, dir)
	if err != nil {
		return err
	}
	defer closeStore()
	output := keys.Output(sweep, "")
	if strings.HasPrefix(sweep, "sweep-") { // an ID: its manifest names its output
		src, err := store.Get(ctx, keys.Manifest(sweep))
		if err != nil {
			return fmt.Errorf("status %s: %w", sweep, err)
		}
		m, err := sweeps.Parse(src)
		if err != nil {
			return fmt.Errorf("status %s: %s: %w", sweep, keys.Manifest(sweep), err)
		}
		output = report.Output(m)
	}
	ix, err := report.ReadIndex(ctx, store, output)
	if err != nil {
		return fmt.Errorf("status %s: %w", sweep, err)
	}
	if ix == nil {
		return fmt.Errorf("status %s: -dir %s has no sweep of that name or ID with tables built (%s)", sweep, dir, keys.TrialIndex(output))
	}
	if asJSON {
		b, _ := json.Marshal(ix)
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	counts := map[status.Status]int{}
	for _, t := range ix.Trials {
		counts[t.Status]++
	}
	id := ix.Sweep
	if id == "" {
		id = ix.Name
	}
	fmt.Fprintf(stdout, "%s: %d/%d trials done (%d completed, %d diverged, %d failed, %d stopped), %d not yet\n", id,
		len(ix.Trials)-counts[status.Missing], len(ix.Trials), counts[status.Completed], counts[status.Diverged], counts[status.Failed], counts[status.Stopped], counts[status.Missing])
	for _, t := range ix.Trials {
		if t.Status == status.Failed || t.Status == status.Diverged {
			line := fmt.Sprintf("  trial %s: %s", t.ID, t.Status)
			if t.Step > 0 {
				line += fmt.Sprintf(" at step %d", t.Step)
			}
			if t.Reason != "" {
				line += ": " + t.Reason
			}
			fmt.Fprintln(stdout, line)
		}
	}
	return nil
}
