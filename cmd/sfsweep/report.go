package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
)

// sfsweep report: the paper's findings checked on finished sweeps, with their trials,
// tables and plots, written as one Markdown file with its plots in the folder beside it,
// so that the folder can be committed or shared as it is.

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", stderr)
	dir := fs.String("dir", ".sfsweep", "state directory of sfsweep run: the results are read from its embedded S3 gateway (unless -s3-bucket is set)")
	out := fs.String("o", filepath.Join("out", "report", "report.md"), "the report's Markdown file; the plots it shows go beside it, under <its folder>/<sweep name>/")
	var r remote
	r.flags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sfsweep report [flags] MANIFEST.yaml...\n\n"+
			"Rebuilds each sweep's tables and plots from its results, checks the paper's findings on them\n"+
			"and writes one Markdown report. The results are those of sfsweep run (-dir) or in S3 (-s3-*).")
		shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		shown.SetOutput(stderr)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.HasPrefix(f.Name, "temporal-") { // the report reads the store only
				shown.Var(f.Value, f.Name, f.Usage)
			}
		})
		shown.PrintDefaults()
	}
	files, err := parseManifestArgs(fs, args)
	if err != nil {
		return err
	}
	// every manifest is read before the store is opened: a bad one costs nothing
	ms := make([]*sweeps.Manifest, len(files))
	ids := make([]string, len(files)) // each manifest's sweep, whose search state a search's report reads
	seen := map[string]string{}
	for i, f := range files {
		var src []byte
		if src, ms[i], _, err = loadManifest(ctx, f); err != nil {
			return err
		}
		ids[i] = keys.SweepID(ms[i].Name, src)
		if prev, dup := seen[ms[i].Name]; dup {
			return fmt.Errorf("%s: name %q: also the name of %s (each sweep's plots go in a folder of its name)", f, ms[i].Name, prev)
		}
		seen[ms[i].Name] = f
	}
	// absolute before the embedded gateway changes the working directory
	path, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	store, closeStore, err := openResults(ctx, &r, *dir)
	if err != nil {
		return err
	}
	defer closeStore()

	sections := make([]report.Section, len(ms))
	for i, m := range ms {
		if sections[i], err = reportSection(ctx, store, files[i], ids[i], m, filepath.Dir(path)); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := report.WriteReport(&buf, sections); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return err
	}
	for _, s := range sections {
		count := map[report.Verdict]int{}
		for _, f := range s.Findings {
			count[f.Verdict]++
		}
		fmt.Fprintf(stdout, "%s: %d hold, %d do not hold, %d not distinguishable from noise, %d without data\n",
			s.Manifest.Name, count[report.Holds], count[report.DoesNotHold], count[report.Noise], count[report.NoData])
	}
	fmt.Fprintf(stdout, "report: %s\n", path)
	return nil
}

// parseManifestArgs parses flags and one or more manifest files, in any order.
func parseManifestArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{msg: err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		files, args = append(files, fs.Arg(0)), fs.Args()[1:]
	}
	if len(files) == 0 {
		return nil, &usageError{msg: "want one or more sweep manifests: sfsweep report [flags] MANIFEST.yaml..."}
	}
	return files, nil
}

// openResults opens the store of the results: the S3 bucket of -s3-bucket if set, else the
// embedded S3 gateway over the objects sfsweep run keeps under dir.
func openResults(ctx context.Context, r *remote, dir string) (blob.Store, func(), error) {
	if r.s3.Bucket != "" {
		store, err := s3store.New(ctx, r.s3)
		return store, func() {}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	root := filepath.Join(abs, "s3")
	if _, err := os.Stat(root); err != nil {
		return nil, nil, fmt.Errorf("-dir %s: no results store (%w): run sfsweep run MANIFEST.yaml first, or set -dir to its state directory or -s3-bucket to the results' bucket", dir, err)
	}
	gw, err := s3gw.Start(ctx, s3gw.Options{Root: root, CredentialsFile: filepath.Join(abs, "s3-credentials.json")})
	if err != nil {
		return nil, nil, fmt.Errorf("s3 gateway: %w", err)
	}
	store, err := s3store.New(ctx, gw.StoreConfig(""))
	if err != nil {
		gw.Stop()
		return nil, nil, err
	}
	return store, func() { gw.Stop() }, nil
}

// reportSection reads the results of manifest m (from file), rebuilds its tables and plots
// in the store, checks the findings, and copies the plots as PNG under dir/<sweep name>/.
func reportSection(ctx context.Context, store blob.Store, file, sweepID string, m *sweeps.Manifest, dir string) (report.Section, error) {
	s := report.Section{Manifest: m, Source: file}
	res, err := report.Load(ctx, store, m, report.Options{SweepID: sweepID})
	if err != nil {
		return s, fmt.Errorf("%s: %w", file, err)
	}
	finished := 0
	for _, o := range res.Outcomes {
		if o.Result != nil || o.Failed != "" {
			finished++
		}
	}
	if finished == 0 {
		return s, fmt.Errorf("%s: sweep %s has no results in the store (none of its %d trials has finished): run sfsweep run %s first", file, m.Name, len(res.Trials), file)
	}
	// the build reads the results just loaded: the tables, plots and findings are of one snapshot
	loaded := func(_ context.Context, id string) (*training.Result, error) { return res.Outcomes[id].Result, nil }
	written, err := report.Build(ctx, store, m, report.Options{Result: loaded, SweepID: sweepID})
	if err != nil {
		return s, fmt.Errorf("%s: %w", file, err)
	}
	if s.Tables, err = report.BuildTables(m, res.Trials, res.Outcomes); err != nil {
		return s, fmt.Errorf("%s: %w", file, err)
	}
	if s.Findings, err = report.Findings(ctx, store, m, res); err != nil {
		return s, fmt.Errorf("%s: %w", file, err)
	}
	s.Results = res
	plots := keys.PlotsDir(report.Output(m))
	for _, k := range written {
		name, ok := strings.CutPrefix(k, plots)
		if !ok || !strings.HasSuffix(name, ".png") {
			continue
		}
		b, err := store.Get(ctx, k)
		if err != nil {
			return s, err
		}
		p := filepath.Join(dir, m.Name, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return s, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return s, err
		}
		s.Plots = append(s.Plots, report.PlotLink{Name: strings.TrimSuffix(name, ".png"), Path: m.Name + "/" + name})
	}
	return s, nil
}
