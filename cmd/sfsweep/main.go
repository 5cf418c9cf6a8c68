// Command sfsweep runs Schedule-Free optimizer research end to end. It runs a sweep
// manifest's trials and tables either on an embedded stack in one process (Temporal, S3
// and workers: "sfsweep run") or against a Temporal cluster and S3 ("submit", "worker",
// "status", "cancel", "tables"); it checks the paper's findings on finished sweeps and
// writes them with their tables and plots as Markdown ("report"), checks manifests
// ("validate"), turns Weights & Biases sweeps into manifests ("import"), trains a single
// run from a config file ("train"), prepares token datasets ("data"), measures the
// training engine's speed ("bench"), and draws the analysis figures of "Through the
// River" ("figures", "toy", "weights", "eos", "centralflow").
//
// Usage:
//
//	sfsweep <command> [flags]
//
// Run "sfsweep help" for the list of commands and "sfsweep <command> -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// command is one subcommand of the CLI. Each file implements its commands and owns their
// flags; the commands table lists them all.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is every subcommand, in the order a reader meets them: running a sweep, the
// distributed mode, single runs and their data, then the analysis figures. The help output
// lists them sorted by name (printUsage).
var commands = []command{
	{name: "run", summary: "run a sweep end to end on the embedded stack (Temporal, S3, workers in this process); running it again resumes", run: runSweep},
	{name: "validate", summary: "check a sweep manifest and print its trials and their total cost, running nothing", run: runValidate},
	{name: "import", summary: "import wandb SWEEP.yaml: a Weights & Biases sweep configuration as a manifest (docs/wandb.md)", run: runImport},
	{name: "submit", summary: "submit a sweep manifest to a Temporal cluster and S3 (distributed mode)", run: runSubmit},
	{name: "server", summary: "run Temporal and the S3 gateway for a small lab, behind TLS, with a join file for workers on other machines (docs/server.md)", run: runServer},
	{name: "worker", summary: "run a worker of the gpu or cpu task queue against a Temporal cluster and S3", run: runWorker},
	{name: "serve", summary: "serve the sweep page: sweeps, trials, failures, tables and curves as they land (read-only; loopback unless given a token)", run: runServe},
	{name: "status", summary: "show a submitted sweep's progress", run: runStatus},
	{name: "cancel", summary: "cancel a submitted sweep: no new trials start, running ones stop", run: runCancel},
	{name: "tables", summary: "tables regenerate SWEEP-ID: rebuild a sweep's tables from the results in S3", run: runTables},
	{name: "report", summary: "report MANIFEST...: the paper's findings checked on finished sweeps, with their tables and plots, as Markdown (default out/report/report.md)", run: runReport},
	{name: "train", summary: "run one training run from a config file (YAML), resuming if it was interrupted", run: runTrain},
	{name: "data", summary: "token datasets: 'data prepare' tokenises a folder of text, 'data default' the Go source tree", run: runDataCmd},
	{name: "bench", summary: "training-step speed of the native engine (tokens/s, GFLOP/s, fraction of this machine's measured peak), against PyTorch where it runs at its best", run: runBenchCmd},
	{name: "figures", summary: "every analysis figure and its data, with the paper's settings (default out/figures)", run: runFiguresCmd},
	{name: "toy", summary: "SF-AdamW on the river-valley toy model (fig:river-valley, fig:toy_model)", run: runToyCmd},
	{name: "weights", summary: "averaging weights α_t of vanilla and refined SF (fig:weights_histogram, fig:modified_weights_histogram*)", run: runWeightsCmd},
	{name: "eos", summary: "preconditioned sharpness vs. the stability threshold on the toy model (fig:eos, left)", run: runEoSCmd},
	{name: "version", summary: "print sfsweep's version: its module version, commit and Go toolchain", run: runVersion},
	{name: "centralflow", summary: "central-flow variance σ² vs. the measured oscillation of SF-ScalarAdam on the toy model", run: runCentralFlowCmd},
}

// lookupCommand returns the command called name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usageError marks an error caused by the command line itself; main prints usage for it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// signalGrace is how long a command may take to stop after SIGINT or SIGTERM (sfsweep
// run stops its workers and servers; a GPU node's supervisor gives its worker processes
// stopGrace) before the process ends without it.
const signalGrace = stopGrace + 10*time.Second

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go stopOnSignal(sigs, cancel, os.Stderr, signalGrace, os.Exit)
	restart = execSelf
	os.Exit(runMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// restart replaces the process with a fresh one of the same command line, once a command
// has returned a restartError and so released what it held (ports, files, the embedded
// servers' state). main sets it; in-process callers of runMain leave it nil, and the
// command then ends with its error.
var restart func() error

// restartError ends a command that a fresh process of the same command line would
// continue: sfsweep run after a device fault lost its process's GPU context.
type restartError interface {
	error
	restartable()
}

// interrupted is the cause of a command's context when a signal ends it.
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string { return "interrupted by " + signalName(e.sig) }

// Is makes an interruption a cancellation: a command that ends on context.Canceled as a
// normal stop (a worker asked to stop) still does.
func (e interrupted) Is(target error) bool { return target == context.Canceled }

// code is the exit status of a process ended by the signal: 128 + its number, as a shell
// reports it.
func (e interrupted) code() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case os.Interrupt:
		return "SIGINT"
	}
	return s.String()
}

// stopOnSignal cancels the command's context on the first signal, with interrupted as
// its cause, and gives the command grace to return. A second signal, or the end of the
// grace, ends the process at once (exit): every command ends promptly, whatever it does.
func stopOnSignal(sigs <-chan os.Signal, cancel context.CancelCauseFunc, stderr io.Writer, grace time.Duration, exit func(int)) {
	first := interrupted{<-sigs}
	cancel(first)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case s := <-sigs:
		fmt.Fprintf(stderr, "sfsweep: %s again: exiting now\n", signalName(s))
		exit(interrupted{s}.code())
	case <-t.C:
		fmt.Fprintf(stderr, "sfsweep: not stopped %v after %s: exiting now\n", grace, signalName(first.sig))
		exit(first.code())
	}
}

// runMain dispatches to a subcommand and returns the process exit code: 0 on success,
// 2 for a bad command line, 1 for any other failure.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := lookupCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "sfsweep: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	if err := cmd.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var sig interrupted
		if errors.As(context.Cause(ctx), &sig) {
			fmt.Fprintf(stderr, "sfsweep %s: %v\n", args[0], sig)
			return sig.code()
		}
		fmt.Fprintf(stderr, "sfsweep %s: %v\n", args[0], err)
		var re restartError
		if errors.As(err, &re) {
			if restart == nil {
				fmt.Fprintf(stderr, "sfsweep %s: run the same command again: it continues from where this one ended\n", args[0])
				return 1
			}
			fmt.Fprintf(stderr, "sfsweep %s: restarting in a fresh process, which continues from where this one ended\n", args[0])
			err := restart()
			fmt.Fprintf(stderr, "sfsweep %s: could not restart (%v): run the same command again\n", args[0], err)
			return 1
		}
		var ue *usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "sfsweep — Schedule-Free optimizer research, from the optimizer to the paper's tables.")
	fmt.Fprintln(w, "\nUsage: sfsweep <command> [flags]\n\nCommands:")
	// Sorted by name, not in table order, so a command is quick to find.
	sorted := slices.SortedFunc(slices.Values(commands), func(a, b command) int {
		return strings.Compare(a.name, b.name)
	})
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'sfsweep <command> -h' for the flags of a command.")
}

// newFlagSet returns a flag set that reports errors instead of exiting, so runMain decides
// the exit code, and whose usage output goes to stderr: "Usage: sfsweep NAME [flags]
// ARGS", the command's summary and its flags, unless the command sets its own.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sfsweep "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sfsweep %s [flags]%s\n", name, usageArgs[name])
		if sum := summaries[name]; sum != "" {
			fmt.Fprintf(stderr, "\n%s\n", sum)
		}
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// summaries are the commands' summaries by name, for their usage (filled from commands at
// start: the commands refer to newFlagSet, which cannot refer to them back).
var summaries = map[string]string{}

func init() {
	for _, c := range commands {
		summaries[c.name] = c.summary
	}
}

// usageArgs are the arguments after the flags of the commands that take some, as their
// usage line names them.
var usageArgs = map[string]string{
	"submit": " MANIFEST.yaml", "status": " SWEEP-ID (with -dir, a sweep's name or ID)", "cancel": " SWEEP-ID", "tables regenerate": " SWEEP-ID",
}

// parseFlags parses args and turns a flag error into a usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return &usageError{msg: fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// parseWithOptionalArg parses flags around at most one positional argument ("" for none).
func parseWithOptionalArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return parseWithArg(fs, args, what)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", err
		}
		return "", &usageError{msg: err.Error()}
	}
	switch fs.NArg() {
	case 0:
		return "", nil
	case 1:
		return fs.Arg(0), nil
	}
	return "", &usageError{msg: fmt.Sprintf("want at most %s; got %q", what, fs.Args())}
}

// parseWithArg parses flags around exactly one positional argument.
func parseWithArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	var arg string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		arg, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", err
		}
		return "", &usageError{msg: err.Error()}
	}
	if arg == "" && fs.NArg() == 1 {
		arg = fs.Arg(0)
	} else if fs.NArg() > 0 || arg == "" {
		return "", &usageError{msg: "want " + what}
	}
	return arg, nil
}
