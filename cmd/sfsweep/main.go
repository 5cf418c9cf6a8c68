// Command sfsweep runs Schedule-Free optimizer research end to end: the optimizers, the
// analysis figures of "Through the River", and (as they land) training runs and sweeps.
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
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand of the CLI. Subcommands register themselves in init functions
// of the files that implement them, so each file owns its own flags.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	if _, dup := commands[name]; dup {
		panic("sfsweep: command registered twice: " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

// usageError marks an error caused by the command line itself; main prints usage for it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(runMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
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
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sfsweep: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	if err := cmd.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sfsweep %s: %v\n", args[0], err)
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
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'sfsweep <command> -h' for the flags of a command.")
}

// newFlagSet returns a flag set that reports errors instead of exiting, so runMain decides
// the exit code, and whose usage output goes to stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sfsweep "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
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
