package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A worker's registry whose trainer cannot start on this machine is refused before the
// worker starts, naming the trainer, the field and why, rather than failing every trial
// it would take.
func TestLoadTrainersRefusesWhatCannotStart(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"train.sh": 0o755, "train.py": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ spec, want string }{
		{"program: missing.py\n    interpreter: sh\n    version: v1", "trainer t: line 2: program = missing.py: cannot be read"},
		{"program: train.py\n    version: v1", "program = train.py: not executable"},
		{"program: train.py\n    interpreter: no-such-python-3.99\n    version: v1", "interpreter = no-such-python-3.99: not found on this worker's PATH"},
		{"program: train.sh\n    version: v1", ""},
		{"program: train.py\n    interpreter: sh\n    version: v1", ""},
	} {
		file := filepath.Join(dir, "trainers.yaml")
		if err := os.WriteFile(file, []byte("trainers:\n  t:\n    "+c.spec+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadTrainers(file, io.Discard)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v, want it loaded", c.spec, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want %q", c.spec, err, c.want)
		}
	}
}
