package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("train", stderr)
	out := fs.String("out", "out", "directory the run writes under: runs/<config hash>/{config.json,curves.jsonl,checkpoints/,result.json}")
	cache := fs.String("cache", filepath.Join(".sfsweep", "data"), "directory of prepared default corpora")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sfsweep train [flags] CONFIG.yaml")
		fs.PrintDefaults()
	}
	// the config file may stand before or after the flags
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{msg: err.Error()}
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 || file == "" {
		return &usageError{msg: "want exactly one config file: sfsweep train CONFIG.yaml"}
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	cfg, err := training.ParseConfig(src)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	store, err := blob.NewDir(*out)
	if err != nil {
		return err
	}
	ds, err := training.OpenData(ctx, cfg.Data, store, *cache)
	if err != nil {
		return err
	}
	batches, err := training.NewBatches(cfg, ds)
	if err != nil {
		return err
	}
	prefix := "runs/" + cfg.Hash()[:16]
	live := isTerminal(stderr)
	opt := training.Options{Store: store, Prefix: prefix, Record: trial.Recorder{Store: store, Prefix: prefix}, Data: batches, Progress: progressPrinter(stderr, live)}
	if !live {
		opt.Log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	fmt.Fprintf(stderr, "train: %s → %s\n", file, filepath.Join(*out, prefix))
	res, err := training.Run(ctx, cfg, opt)
	if live {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printResult(stdout, res)
	return nil
}

// progressPrinter redraws one status line on a terminal, or prints a line per evaluation
// otherwise.
func progressPrinter(w io.Writer, live bool) func(training.Progress) {
	return func(p training.Progress) {
		if p.Eval != nil {
			if live {
				fmt.Fprint(w, "\r\033[K")
			}
			fmt.Fprintf(w, "step %d/%d  train %.4f  %.0f tok/s  val %s\n", p.Step, p.Steps, p.TrainLoss, p.TokensPerSec, formatLosses(p.Eval.Val))
		}
		if live {
			fmt.Fprintf(w, "\rstep %d/%d  loss %.4f  %.0f tok/s  ETA %s ", p.Step, p.Steps, p.TrainLoss, p.TokensPerSec, p.ETA.Round(time.Second))
		}
	}
}

func formatLosses(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.4f", k, m[k])
	}
	return strings.Join(parts, "  ")
}

func printResult(w io.Writer, r *training.Result) {
	switch r.Status {
	case status.Diverged:
		fmt.Fprintf(w, "diverged at step %d\n", r.DivergedAt)
	default:
		fmt.Fprintf(w, "completed %d steps (%d tokens) in %.1f s\n", r.Steps, r.Tokens, r.Seconds)
		fmt.Fprintf(w, "test perplexity (%d sequences): ", r.TestSeqs)
		keys := make([]string, 0, len(r.TestPPL))
		for k := range r.TestPPL {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%s %.2f  ", k, r.TestPPL[k])
		}
		fmt.Fprintln(w)
	}
	if r.Resumed > 0 {
		fmt.Fprintf(w, "resumed from step %d\n", r.Resumed)
	}
}
