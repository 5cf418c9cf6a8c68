package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sfsweep/sfsweep/sweeps"
)

// runImport is "sfsweep import wandb": a W&B sweep configuration as a manifest.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "sfsweep import wandb [-base BASE.yaml] [-program PATH | -native] [-count N] [-o OUT.yaml] SWEEP.yaml"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintln(stderr, "Usage: "+usage)
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "wandb" {
		return &usageError{msg: "want: " + usage}
	}
	fs := newFlagSet("import wandb", stderr)
	baseFile := fs.String("base", "", "the manifest that supplies what W&B has no notion of: model, data, steps, evaluation, seeds, tables (default: the settings of sweeps/examples/c-sensitivity-quick.yaml)")
	outFile := fs.String("o", "", "write the manifest to this file (default: standard output)")
	program := fs.String("program", "", "sweep this training program (its path), over the sweep's own program")
	native := fs.Bool("native", false, "train with sfsweep's engine, ignoring the sweep's program and command")
	count := fs.Int("count", 0, "the configurations to try when the sweep has no run_cap, as wandb agent --count")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: "+usage)
		fmt.Fprintln(stderr, "Turns a W&B sweep configuration into a manifest: a sweep of its program (docs/trainer.md) if it names one or -program gives one, else one of sfsweep's engine. docs/wandb.md has the mapping. Notes go to standard error.")
		fs.PrintDefaults()
	}
	file, err := parseWithArg(fs, args[1:], "a W&B sweep configuration: sfsweep import wandb SWEEP.yaml")
	if err != nil {
		return err
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if *native && *program != "" {
		return &usageError{msg: "give -program or -native, not both"}
	}
	if *count < 0 {
		return &usageError{msg: fmt.Sprintf("-count %d: want a number of configurations ≥ 1", *count)}
	}
	var base []byte
	baseName := "the default base manifest"
	if *baseFile != "" {
		if base, err = os.ReadFile(*baseFile); err != nil {
			return err
		}
		baseName = *baseFile
	}
	manifest, notes, err := sweeps.ImportWandb(src, sweeps.WandbOptions{Base: base, Program: *program, Native: *native, Count: *count})
	if be := (*sweeps.BaseError)(nil); errors.As(err, &be) {
		return fmt.Errorf("%s: %w", baseName, be.Err)
	} else if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "%s: %s\n", file, n)
	}
	if *outFile == "" {
		_, err := stdout.Write(manifest)
		return err
	}
	if err := os.WriteFile(*outFile, manifest, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s; check it with: sfsweep validate %s\n", *outFile, *outFile)
	return nil
}
