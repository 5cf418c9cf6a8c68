package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/sweeps"
)

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", stderr)
	asJSON := fs.Bool("json", false, "print the trials and the cost as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sfsweep validate [flags] MANIFEST.yaml")
		fs.PrintDefaults()
	}
	file, err := parseWithArg(fs, args, "a sweep manifest: sfsweep validate MANIFEST.yaml")
	if err != nil {
		return err
	}
	src, m, trials, err := loadManifest(ctx, file)
	if err != nil {
		return err
	}
	warnRungs(stderr, file, m)
	if err := m.CheckBackend(src); err != nil {
		fmt.Fprintf(stderr, "%s: %v (sfsweep run cannot train it with this build; sfsweep submit queues its trials for workers that have it)\n", file, err)
	}
	if m.Searched() {
		return printSearchPlan(stdout, m, *asJSON)
	}
	cost, probes := sweeps.TotalCost(trials), m.ProbeCost(trials)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Name      string         `json:"name"`
			Points    int            `json:"grid_points"`
			Trials    []sweeps.Trial `json:"trials"`
			Cost      sweeps.Cost    `json:"cost"`
			ProbeCost sweeps.Cost    `json:"probe_cost"`
		}{m.Name, m.Count(), trials, cost, probes})
	}
	if m.Trainer != nil && (len(m.Optimizers) == 0 || m.Optimizers[0].Name == "") {
		printProgramTrials(stdout, trials)
	} else {
		printEngineTrials(stdout, trials)
	}
	fmt.Fprintf(stdout, "\n%d grid points, %d trials (\"=\": the same trial as the line above), %d steps, %.4g training tokens, %.4g FLOPs\n",
		m.Count(), cost.Trials, cost.Steps, float64(cost.Tokens), cost.FLOPs)
	if probes.Steps > 0 {
		fmt.Fprintf(stdout, "probes: %d more steps, %.4g tokens, %.4g FLOPs\n", probes.Steps, float64(probes.Tokens), probes.FLOPs)
	}
	return nil
}

// printProgramTrials prints a program trainer's trials by their parameters and seed.
func printProgramTrials(w io.Writer, trials []sweeps.Trial) {
	var names []string
	for _, t := range trials {
		for _, k := range t.Config.Trainer.ParamNames() {
			if !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
	}
	slices.Sort(names)
	row := func(cells []string) {
		fmt.Fprintf(w, "%-16s ", cells[0])
		for _, c := range cells[1:] {
			fmt.Fprintf(w, " %-10s", c)
		}
		fmt.Fprintln(w)
	}
	row(append(append([]string{"trial", "trainer"}, names...), "seed", "steps"))
	for _, t := range trials {
		tr := t.Config.Trainer
		cells := []string{t.ID, tr.Name}
		for _, k := range names {
			v, ok := tr.Params[k]
			if !ok {
				cells = append(cells, "")
				continue
			}
			cells = append(cells, program.Format(v))
		}
		row(append(cells, strconv.FormatUint(t.Config.Seed, 10), strconv.Itoa(t.Config.Steps)))
	}
}

// printEngineTrials prints the trials of optimizer grids by their optimizer, its
// hyperparameters, batch, seed and model.
func printEngineTrials(stdout io.Writer, trials []sweeps.Trial) {
	fmt.Fprintf(stdout, "%-16s  %-9s %-9s %-6s %-6s %-8s %-9s %-5s %s\n", "trial", "optimizer", "lr", "beta1", "beta2", "C", "batch", "seed", "model")
	for _, t := range trials {
		mc, _ := t.Config.ResolveModel()
		for i, p := range t.Points {
			id := t.ID
			if i > 0 {
				id = strings.Repeat(" ", len(id)-1) + "="
			}
			fmt.Fprintf(stdout, "%-16s  %-9s %-9g %-6g %-6g %-8s %-9d %-5d %s d%d L%d\n", id, p.Optimizer, p.LR, p.Beta1, p.Beta2, p.CLabel(), p.BatchTokens, p.Seed, mc.Arch, mc.Dim, mc.Layers)
		}
	}
}

// warnRungs prints the manifest's warnings of rungs that judge too early
// (sweeps.Manifest.RungWarnings): the search runs as written.
func warnRungs(w io.Writer, file string, m *sweeps.Manifest) {
	for _, s := range m.RungWarnings() {
		fmt.Fprintf(w, "%s: warning: %s\n", file, s)
	}
}

// loadManifest reads, validates and expands a manifest file; errors name the file. It
// returns when ctx ends, whatever it was doing: a file that never ends (a FIFO, a stalled
// pipe) or a slow parse does not keep a command from its signal.
func loadManifest(ctx context.Context, file string) ([]byte, *sweeps.Manifest, []sweeps.Trial, error) {
	type loaded struct {
		src    []byte
		m      *sweeps.Manifest
		trials []sweeps.Trial
		err    error
	}
	done := make(chan loaded, 1)
	go func() {
		var l loaded
		l.src, l.m, l.trials, l.err = readManifest(file)
		done <- l
	}()
	select {
	case l := <-done:
		return l.src, l.m, l.trials, l.err
	case <-ctx.Done():
		return nil, nil, nil, fmt.Errorf("%s: %w", file, context.Cause(ctx))
	}
}

// readManifest is loadManifest's work: the file read no further than the size a
// manifest may have, its trainer's identity resolved, then parsed and expanded.
func readManifest(file string) ([]byte, *sweeps.Manifest, []sweeps.Trial, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, sweeps.MaxManifestBytes+1))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(src) > sweeps.MaxManifestBytes {
		size := int64(len(src))
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		return nil, nil, nil, fmt.Errorf("%s: %w", file, sweeps.CheckSize(size))
	}
	// a trainer known by its files is known by their hash from here on
	if src, err = sweeps.ResolveTrainer(src, filepath.Dir(file)); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	m, err := sweeps.Parse(src)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if m.Sampled() {
		return src, m, nil, nil // its trials come as the search runs
	}
	trials, err := m.Expand()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return src, m, trials, nil
}

// printSearchPlan prints what a search will run: its space, metric, rungs and the
// configurations reaching each, and its cost at worst and as halving plans it.
func printSearchPlan(w io.Writer, m *sweeps.Manifest, asJSON bool) error {
	p, err := m.Plan()
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Name string            `json:"name"`
			Plan sweeps.SearchPlan `json:"search"`
		}{m.Name, p})
	}
	fmt.Fprintf(w, "search %s: %s, ranked by %s (lower is better), %d seeds a configuration\n", m.Name, p.Method, p.Metric, p.Seeds)
	for gi, g := range m.Optimizers {
		if g.Name == "" { // a program trainer's own parameters
			fmt.Fprintf(w, "  trainer %s: %d configurations", g.Label, p.Configs[gi])
		} else {
			fmt.Fprintf(w, "  optimizers[%d] %s: %d configurations", gi, g.Name, p.Configs[gi])
		}
		if len(p.Space[gi]) > 0 {
			fmt.Fprintf(w, " over %s", strings.Join(p.Space[gi], "; "))
		}
		fmt.Fprintln(w)
	}
	if p.Rule != "" {
		fmt.Fprintf(w, "early stopping: %s at steps %v (the last is the end)", p.Rule, p.Rungs)
		if len(p.Halving) > 0 {
			fmt.Fprintf(w, "; halving by %d keeps %v configurations at them", m.Eta(), p.Halving)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "worst case (every configuration to the end): %d trials, %d steps, %.4g training tokens, %.4g FLOPs\n",
		p.Worst.Trials, p.Worst.Steps, float64(p.Worst.Tokens), p.Worst.FLOPs)
	if e := p.Expected; e != nil {
		fmt.Fprintf(w, "as halving plans it: %d steps (%.0f%% of the worst case), %.4g FLOPs\n", e.Steps, 100*float64(e.Steps)/float64(p.Worst.Steps), e.FLOPs)
	}
	return nil
}
