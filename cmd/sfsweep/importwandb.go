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
	const usage = "sfsweep import wandb [-base BASE.yaml] [-o OUT.yaml] SWEEP.yaml"
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
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: "+usage)
		fmt.Fprintln(stderr, "Turns a W&B sweep configuration into a manifest; docs/wandb.md has the mapping. Notes go to standard error.")
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
	var base []byte
	baseName := "the default base manifest"
	if *baseFile != "" {
		if base, err = os.ReadFile(*baseFile); err != nil {
			return err
		}
		baseName = *baseFile
	}
	manifest, notes, err := sweeps.FromWandb(src, base)
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
