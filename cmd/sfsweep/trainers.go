package main

// The program trainers a worker runs: a distributed worker's, registered by its operator
// (-trainers FILE), and sfsweep run's, the manifest's own (docs/trainer.md).

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/sweeps"
)

// loadTrainers reads a worker's registry of program trainers; "" is none. A registry
// that does not parse, or names a program, a file or an interpreter that is not there, is
// an error before the worker starts: it never runs a trainer its operator did not mean.
func loadTrainers(file string) (*activities.Trainers, error) {
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
		if _, err := s.Identity(dir); err != nil {
			return nil, fmt.Errorf("-trainers %s: trainer %s: %w", file, name, err)
		}
	}
	return &activities.Trainers{Registry: reg, Dir: dir}, nil
}

// manifestTrainers are the trainers sfsweep run's workers run: the manifest's trainer, if
// it defines its program, with paths relative to the manifest's directory.
func manifestTrainers(m *sweeps.Manifest, file string) *activities.Trainers {
	t := m.Trainer
	if t == nil || !t.Local() {
		return nil
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		dir = filepath.Dir(file)
	}
	s := t.Spec
	s.Name = t.Name
	return &activities.Trainers{Registry: program.Registry{t.Name: s}, Dir: dir}
}
