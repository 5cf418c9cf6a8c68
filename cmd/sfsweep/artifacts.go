package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sfsweep/sfsweep/internal/figure"
)

// What an analysis command writes: its data files (JSON or CSV), its figures (PNG and
// SVG) and, with -json, a summary in place of the list of files.

// analysisOutputFormat lists the formats of the data files.
var analysisOutputFormat = []string{"json", "csv"}

// outputFlags are the flags every analysis command shares.
type outputFlags struct {
	out    string
	format string
	json   bool
}

func (o *outputFlags) register(fs *flag.FlagSet, defOut string) {
	fs.StringVar(&o.out, "out", defOut, "output `dir`ectory")
	fs.StringVar(&o.format, "format", "json", "data file format: json or csv")
	fs.BoolVar(&o.json, "json", false, "print a machine-readable JSON summary to stdout instead of the file list")
}

func (o *outputFlags) validate() error {
	for _, f := range analysisOutputFormat {
		if o.format == f {
			return nil
		}
	}
	return &usageError{msg: fmt.Sprintf("invalid value %q for flag -format: must be json or csv", o.format)}
}

// artifacts records the files a command writes and prints each as it is written, unless
// the command prints a JSON summary instead.
type artifacts struct {
	dir    string
	quiet  bool
	stdout io.Writer
	stderr io.Writer // live notes, such as a diverged run
	files  []string
}

func newArtifacts(dir string, quiet bool, stdout, stderr io.Writer) (*artifacts, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	return &artifacts{dir: dir, quiet: quiet, stdout: stdout, stderr: stderr}, nil
}

func (a *artifacts) add(paths ...string) {
	for _, p := range paths {
		a.files = append(a.files, p)
		if !a.quiet {
			fmt.Fprintln(a.stdout, p)
		}
	}
}

// data writes one data file through write.
func (a *artifacts) data(name string, write func(io.Writer) error) error {
	path := filepath.Join(a.dir, name)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	w := bufio.NewWriter(f)
	err = write(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	a.add(path)
	return nil
}

// figure writes a figure as PNG, SVG and PDF.
func (a *artifacts) figure(base string, f *figure.Figure, err error) error {
	if err != nil {
		return err
	}
	paths, err := f.SaveAll(a.dir, base)
	a.add(paths...)
	return err
}

// summary prints the JSON summary of a command when -json is set.
func (a *artifacts) summary(command string, details any) error {
	if !a.quiet {
		return nil
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Command string   `json:"command"`
		Out     string   `json:"out"`
		Files   []string `json:"files"`
		Details any      `json:"summary"`
	}{command, a.dir, a.files, details})
}

// writeRun writes one run's data in the chosen format.
func writeRun(a *artifacts, base, format string, j, c func(io.Writer) error) error {
	if format == "csv" {
		return a.data(base+".csv", c)
	}
	return a.data(base+".json", j)
}
