package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/workflows"
)

// progressBars draws the sweep's progress and the running trials' steps on a terminal,
// or prints a line per finished trial and per evaluation otherwise.
type progressBars struct {
	mu     sync.Mutex
	w      io.Writer
	live   bool
	last   workflows.SweepProgress
	steps  map[string]training.Progress
	probes map[string]map[string]time.Time // by trial: the probes running, since when
	lines  int
}

func newProgressBars(w io.Writer, live bool) *progressBars {
	return &progressBars{w: w, live: live, steps: map[string]training.Progress{}, probes: map[string]map[string]time.Time{}}
}

// probe shows a trial's probe while it runs, and its end (a failure at once).
func (b *progressBars) probe(trial, what string, done bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !done {
		if b.probes[trial] == nil {
			b.probes[trial] = map[string]time.Time{}
		}
		b.probes[trial][what] = time.Now()
		b.draw()
		return
	}
	took := time.Since(b.probes[trial][what]).Round(time.Second)
	delete(b.probes[trial], what)
	if len(b.probes[trial]) == 0 {
		delete(b.probes, trial)
	}
	switch {
	case err != nil:
		b.printAbove(fmt.Sprintf("trial %s: %s failed: %v", trial, what, err))
	case !b.live:
		fmt.Fprintf(b.w, "trial %s: %s done in %s\n", trial, what, took)
	default:
		b.draw()
	}
}

// stepOf is the last progress of a trial training in this process.
func (b *progressBars) stepOf(trial string) (training.Progress, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.steps[trial]
	return p, ok
}

func (b *progressBars) step(trial string, p training.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.Step >= p.Steps {
		delete(b.steps, trial)
	} else {
		b.steps[trial] = p
	}
	if !b.live && p.Eval != nil {
		fmt.Fprintf(b.w, "trial %s step %d/%d  val %s\n", trial, p.Step, p.Steps, formatLosses(p.Eval.Val))
	}
	b.draw()
}

// attemptFailed reports a failed training attempt at once, and whether Temporal retries it.
func (b *progressBars) attemptFailed(trial string, attempt int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.steps, trial)
	msg, then := err.Error(), "retried with backoff from its newest checkpoint, up to -attempts"
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		msg = ae.Message() // without the type and the flag Error adds
		if ae.NonRetryable() {
			then = "not retried: another attempt would fail the same way"
		}
	}
	b.printAbove(fmt.Sprintf("trial %s: attempt %d failed: %s (%s)", trial, attempt, msg, then))
}

// waiting reports a trial waiting for GPU memory.
func (b *progressBars) waiting(trial, status string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.printAbove(fmt.Sprintf("trial %s: %s", trial, status))
}

// printAbove prints a line above the live bars (or as a plain line when not live).
func (b *progressBars) printAbove(line string) {
	if b.live {
		for range b.lines {
			fmt.Fprint(b.w, "\033[1A\033[K")
		}
		b.lines = 0
	}
	fmt.Fprintln(b.w, line)
	b.draw()
}

func (b *progressBars) sweep(p workflows.SweepProgress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	finished := p.Completed + p.Diverged + p.Failed
	switch {
	case b.live || finished == b.last.Completed+b.last.Diverged+b.last.Failed:
	case p.Configs != nil: // a search: its trials come as it runs, with no total
		fmt.Fprintf(b.w, "search: %d configurations so far (%s); %d trials done (%d completed, %d diverged, %d failed)\n",
			sum(p.Configs), countsText(p.Configs), finished, p.Completed, p.Diverged, p.Failed)
	default:
		fmt.Fprintf(b.w, "sweep: %d/%d trials done (%d completed, %d diverged, %d failed, %d had results)\n",
			finished+p.Skipped, p.Total, p.Completed, p.Diverged, p.Failed, p.Skipped)
	}
	failed := p.Failed > b.last.Failed
	b.last = p
	if failed {
		b.printAbove(fmt.Sprintf("sweep: a trial failed (%d so far); its cell reads \"failed\"", p.Failed))
		return
	}
	b.draw()
}

func (b *progressBars) draw() {
	if !b.live {
		return
	}
	for range b.lines {
		fmt.Fprint(b.w, "\033[1A\033[K")
	}
	p := b.last
	done := p.Completed + p.Diverged + p.Failed + p.Skipped
	const width = 30
	fill := 0
	if p.Total > 0 {
		fill = width * done / p.Total
	}
	total := strconv.Itoa(p.Total)
	if p.Configs != nil {
		total = "?" // a search's trials come as it runs
	}
	fmt.Fprintf(b.w, "sweep [%s%s] %d/%s trials  %d diverged  %d failed\n", strings.Repeat("█", fill), strings.Repeat("·", width-fill), done, total, p.Diverged, p.Failed)
	b.lines = 1
	for _, id := range slices.Sorted(maps.Keys(b.steps)) {
		s := b.steps[id]
		line := fmt.Sprintf("  trial %s  step %d/%d  loss %.4f", id, s.Step, s.Steps, s.TrainLoss)
		if s.TokensPerSec > 0 { // unknown until a second step (or line) has a time
			line += fmt.Sprintf("  %.0f tok/s", s.TokensPerSec)
		}
		if s.ETA > 0 {
			line += "  ETA " + s.ETA.Round(time.Second).String()
		}
		fmt.Fprintln(b.w, line)
		b.lines++
	}
	for _, id := range slices.Sorted(maps.Keys(b.probes)) {
		for _, what := range slices.Sorted(maps.Keys(b.probes[id])) {
			fmt.Fprintf(b.w, "  trial %s  %s  %s\n", id, what, time.Since(b.probes[id][what]).Round(time.Second))
			b.lines++
		}
	}
}

func (b *progressBars) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = 0
}

// isTerminal reports whether w is a terminal, where a live progress line can be redrawn.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
