package program

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

func TestCheck(t *testing.T) {
	ok := Spec{Name: "torch-llama", Program: "train.py", Interpreter: "python3", Version: "1", Probes: []string{"lr_decay"}, Env: map[string]string{"OMP_NUM_THREADS": "8"}}
	if err := ok.Check(); err != nil {
		t.Fatalf("Check(%+v) = %v", ok, err)
	}
	for _, tc := range []struct {
		edit          func(*Spec)
		field, reason string
	}{
		{func(s *Spec) { s.Name = "" }, "trainer.name", "letters, digits"},
		{func(s *Spec) { s.Name = "a/b" }, "trainer.name", "letters, digits"},
		{func(s *Spec) { s.Program = "" }, "trainer.program", "required"},
		{func(s *Spec) { s.Program, s.Command = "", []string{"${program}", "${args}"} }, "trainer.program", "required"},
		{func(s *Spec) { s.Program, s.Version, s.Command = "", "", []string{"python3", "-m", "train", "${args}"} }, "trainer.program", "required"},
		{func(s *Spec) { s.Interpreter = "python3 -u" }, "trainer.interpreter", "one command"},
		{func(s *Spec) { s.Command = []string{} }, "trainer.command", "empty"},
		{func(s *Spec) { s.Command = []string{"python3", "-m", "train", "${args}"} }, "trainer.command", "must contain ${program}"},
		{func(s *Spec) { s.Command = []string{"${program}", "${args_json_file}"} }, "trainer.command[1]", "unknown macro"},
		{func(s *Spec) { s.Command = []string{"--file=${program}"} }, "trainer.command[0]", "unknown macro"},
		{func(s *Spec) { s.Files = []string{"*.py"} }, "trainer.files", "not both"},
		{func(s *Spec) { s.Version, s.Files = "", []string{"[a"} }, "trainer.files[0]", "glob"},
		{func(s *Spec) { s.Probes = []string{"lr_decay", "branch"} }, "trainer.probes[1]", "unknown probe"},
		{func(s *Spec) { s.Env = map[string]string{"1X": "a"} }, "trainer.env.1X", "not a variable name"},
		{func(s *Spec) { s.Env = map[string]string{"A-B": "a"} }, "trainer.env.A-B", "not a variable name"},
		{func(s *Spec) { s.Env = map[string]string{"SFSWEEP_METRICS": "/tmp/m"} }, "trainer.env.SFSWEEP_METRICS", "sfsweep's"},
	} {
		s := ok
		s.Line = 7
		tc.edit(&s)
		var fe *fielderr.Error
		if err := s.Check(); !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Reason, tc.reason) || fe.Line != 7 {
			t.Errorf("Check(%+v) = %v, want %s: ...%s...", s, err, tc.field, tc.reason)
		}
	}
}

// A trainer may run a module rather than a program file, identified by its version.
func TestCheckModule(t *testing.T) {
	s := Spec{Name: "m", Interpreter: "python3", Version: "1", Command: []string{"${env}", "${interpreter}", "-m", "src.train", "${args_no_boolean_flags}"}}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

const registry = `# the trainers of this worker
trainers:
  torch-llama:
    program: /srv/trainers/train.py
    interpreter: python3
    version: "2026-11-25"
    probes: [lr_decay]
    env: {OMP_NUM_THREADS: "8"}
  jax:
    program: train
    command: ["${program}", "${args_no_hyphens}"]
    files: ["*.py", "lib/*.py"]
`

func TestParseRegistry(t *testing.T) {
	reg, err := ParseRegistry([]byte(registry))
	if err != nil {
		t.Fatal(err)
	}
	tl, jax := reg["torch-llama"], reg["jax"]
	if len(reg) != 2 || tl.Name != "torch-llama" || tl.Line != 3 || tl.Version != "2026-11-25" || tl.Env["OMP_NUM_THREADS"] != "8" || tl.Probes[0] != "lr_decay" ||
		jax.Line != 9 || len(jax.Command) != 2 || len(jax.Files) != 2 {
		t.Errorf("ParseRegistry = %+v", reg)
	}
	for _, tc := range []struct {
		src, field, value string
		line              int
	}{
		{"", "trainers", "not given", 1},
		{"[1, 2]", "trainers", "not given", 1},
		{"trainers: {}", "trainers", "{}", 1},
		{"trainers:\n  a: {program: x}\nworkers: 2", "workers", "2", 3},
		{"trainers:\n  a:\n    program: x\n    programme: y", "trainers.a.programme", "y", 4},
		{"trainers:\n  a:\n    program: x\n    command: python3 train.py", "trainers.a.command", "python3 train.py", 4},
		{"trainers:\n  a:\n    program: [x]", "trainers.a.program", "[x]", 3},
		{"trainers:\n  a:\n    program: x\n    env: {A: [1]}", "trainers.a.env", "{A: [1]}", 4},
		{"trainers:\n  a: x", "trainers.a", "x", 2},
		{"trainers:\n  a b:\n    program: x", "trainers.a b", "a b", 2},
		{"trainers:\n  a:\n    program: x\n    command:\n      - ${program}\n      - ${argz}", "trainers.a.command[1]", "${argz}", 6},
		{"trainers:\n  a:\n    program: x\n    version: v\n    files: [a]", "trainers.a.files", "a", 5},
		{"trainers:\n  a:\n    program: x\n    probes: [lr_decay, warp]", "trainers.a.probes[1]", "warp", 4},
		{"trainers:\n  a:\n    program: x\n    env:\n      OK: a\n      NOT-OK: b", "trainers.a.env.NOT-OK", "b", 6},
		{"trainers:\n  a:\n    program: x\n  a:\n    program: y", "trainers.a", "a", 4},
		{"x: &a [1]\ntrainers: *a", "trainers", "*a", 2},
		{"trainers:\n  a:\n    program: x\n\tversion: y", "trainers", "not YAML", 3},
	} {
		_, err := ParseRegistry([]byte(tc.src))
		var fe *fielderr.Error
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Line != tc.line || fe.Value != tc.value {
			t.Errorf("ParseRegistry(%q) = %#v, want %s = %s on line %d", tc.src, err, tc.field, tc.value, tc.line)
		}
	}
}

func TestIdentity(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("train.py", "print(1)")
	write("model.py", "class M: pass")
	write("lib/data.py", "x = 1")
	identity := func(s Spec) string {
		t.Helper()
		id, err := s.Identity(dir)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	if id := identity(Spec{Program: "train.py", Version: "2026-11-25"}); id != "version:2026-11-25" {
		t.Errorf("Identity with a version = %q", id)
	}
	files := Spec{Program: "train.py", Files: []string{"*.py", "lib/*.py", "train.py"}}
	prog := Spec{Program: filepath.Join(dir, "train.py")}
	a, p := identity(files), identity(prog)
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 || !strings.HasPrefix(p, "sha256:") || a == p {
		t.Fatalf("Identity = %q and %q", a, p)
	}
	if b := identity(Spec{Program: "train.py", Files: []string{"lib/*.py", "*.py"}}); b != a {
		t.Errorf("the order of the globs changed the identity: %q, %q", a, b)
	}
	write("lib/data.py", "x = 2")
	if b := identity(files); b == a || identity(prog) != p {
		t.Errorf("a changed file: identity %q, was %q; the program's was changed too", b, a)
	}
	a = identity(files)
	if err := os.Rename(filepath.Join(dir, "lib/data.py"), filepath.Join(dir, "lib/data2.py")); err != nil {
		t.Fatal(err)
	}
	if b := identity(files); b == a {
		t.Error("a renamed file kept the identity")
	}
	write("train.py", "print(2)")
	if identity(prog) == p {
		t.Error("a changed program kept the identity")
	}
	var fe *fielderr.Error
	if _, err := (Spec{Program: "train.py", Files: []string{"*.py", "src/*.py"}}).Identity(dir); !errors.As(err, &fe) || fe.Field != "trainer.files[1]" || fe.Value != "src/*.py" {
		t.Errorf("a glob that matches nothing: %v", err)
	}
	if _, err := (Spec{Program: "missing.py"}).Identity(dir); !errors.As(err, &fe) || fe.Field != "trainer.program" {
		t.Errorf("a missing program: %v", err)
	}
}

// A program named by a bare name that is no file beside the manifest is the executable of
// that name on PATH (a console script, as W&B sweeps name them): its file is hashed for
// the identity, checked, and run by its absolute path.
func TestProgramOnPath(t *testing.T) {
	bin, dir := t.TempDir(), t.TempDir()
	script := []byte("#!/bin/sh\necho console\n")
	if err := os.WriteFile(filepath.Join(bin, "my_console_script"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	s := Spec{Name: "c", Program: "my_console_script"}
	id, err := s.Identity(dir)
	sum := sha256.Sum256(script)
	if err != nil || id != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("identity %q, %v: want the hash of the script on PATH", id, err)
	}
	if err := s.CheckRunnable(dir); err != nil {
		t.Errorf("CheckRunnable: %v", err)
	}
	argv, err := s.Argv(dir, nil)
	if err != nil || len(argv) != 1 || argv[0] != filepath.Join(bin, "my_console_script") {
		t.Errorf("argv %q, %v", argv, err)
	}
	if _, err := (Spec{Name: "c", Program: "no_such_script_anywhere"}).Identity(dir); err == nil {
		t.Error("a program found nowhere has an identity")
	}
}
