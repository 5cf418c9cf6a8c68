package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion prints the binary's version: the module's (a tagged release under go install)
// or its commit, when it was made and whether the tree had changes, and the Go toolchain,
// from the build information Go records in every binary.
func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{msg: fmt.Sprintf("version takes no arguments, got %q", fs.Args())}
	}
	fmt.Fprintln(stdout, versionLine())
	return nil
}

// versionLine is "sfsweep VERSION (commit REV, TIME[, modified]) GO".
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "sfsweep (no build information)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	line := "sfsweep " + v
	if rev := settings["vcs.revision"]; rev != "" {
		line += " (commit " + rev[:min(12, len(rev))]
		if t := settings["vcs.time"]; t != "" {
			line += ", " + t
		}
		if settings["vcs.modified"] == "true" {
			line += ", modified"
		}
		line += ")"
	}
	return line + " " + info.GoVersion
}
