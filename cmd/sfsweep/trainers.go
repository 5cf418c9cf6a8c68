package main

// The program trainers a worker runs: a distributed worker's, registered by its operator
// (-trainers FILE), and sfsweep run's, the manifest's own (docs/trainer.md).

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/sweeps"
)

// loadTrainers reads a worker's registry of program trainers; "" is none. A registry
// that does not parse, or names a program or a file that is not there, is an error before
// the worker starts: it never runs a trainer its operator did not mean. Each trainer's
// identity is printed to w, for the manifests that name it.
func loadTrainers(file string, w io.Writer) (*activities.Trainers, error) {
	if file == "" {
		return nil, nil
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("-trainers: %w", err)
	}
	reg, err := program.ParseRegistry(src)
	if err != nil {
		return nil, fmt.Errorf("-trainers %s: %w", file, err)
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	for name, s := range reg {
		if err := s.CheckRunnable(dir); err != nil {
			return nil, fmt.Errorf("-trainers %s: trainer %s: %w", file, name, err)
		}
		id, err := s.Identity(dir)
		if err != nil {
			return nil, fmt.Errorf("-trainers %s: trainer %s: %w", file, name, err)
		}
		fmt.Fprintf(w, "worker: trainer %s, identity %s (a manifest names it trainer: {name: %s, identity: %q})\n", name, id, name, id)
	}
	return &activities.Trainers{Registry: reg, Dir: dir}, nil
}

// manifestTrainers are the trainers sfsweep run's workers run: the manifest's trainer, if
// it defines its program, with paths relative to the manifest's directory. It must be
// called before anything changes the working directory (the embedded S3 gateway does):
// the directory is made absolute here.
func manifestTrainers(m *sweeps.Manifest, file string) (*activities.Trainers, error) {
	t := m.Trainer
	if t == nil || !t.Local() {
		return nil, nil
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s := t.Spec
	s.Name = t.Name
	if err := s.CheckRunnable(dir); err != nil {
		return nil, fmt.Errorf("%s: %w", file, fielderr.Under("trainer", err))
	}
	return &activities.Trainers{Registry: program.Registry{t.Name: s}, Dir: dir, Manifest: true}, nil
}
