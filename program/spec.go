package program

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
)

// Spec is a trainer: how to start its program and what its identity is. The YAML keys
// are those of docs/trainer.md.
type Spec struct {
	Name        string            `yaml:"-"` // the key in a registry
	Program     string            `yaml:"program"`
	Interpreter string            `yaml:"interpreter,omitempty"`
	Command     []string          `yaml:"command,omitempty"`
	Version     string            `yaml:"version,omitempty"`
	Files       []string          `yaml:"files,omitempty"`
	Probes      []string          `yaml:"probes,omitempty"`
	Env         map[string]string `yaml:"env,omitempty"`
	// Launcher starts the program once per GPU of a trial of several (gpus: N): "" (one
	// process, a trial of one GPU) or torchrun (Launch).
	Launcher string `yaml:"launcher,omitempty"`
	// EnvPass are the variables of the worker's own environment the program is given, by
	// name or by a prefix and "*" (NCCL_*, HF_HOME), as a worker's registry states them
	// (env_pass): never sfsweep's (SFSWEEP_*) or the object store's credentials (AWS_*).
	// Their values are the worker's, not part of the trainer's identity. Only the worker's
	// operator states them: a manifest cannot (yaml "-").
	EnvPass []string `yaml:"-"`
	// GPUMemory is the most the program holds on its GPU, in bytes, as a worker's registry
	// states it (gpu_memory); 0, not stated: the program is given its GPU whole. Only the
	// worker's operator states it: a manifest cannot (yaml "-").
	GPUMemory int64 `yaml:"-"`
	// Home is the program's HOME as a worker's registry states it (home; relative to the
	// registry's directory), made if missing; "": the attempt's run directory. Never the
	// worker's own: file credentials under it (~/.aws/credentials, ~/.netrc) stay the
	// worker's. Only the worker's operator states it.
	Home string `yaml:"-"`
	Line int    `yaml:"-"` // where it is defined, for errors
}

// The command template's macros, as W&B names them.
const (
	macroInterpreter   = "${interpreter}"
	macroProgram       = "${program}"
	macroArgs          = "${args}"
	macroArgsNoHyphens = "${args_no_hyphens}"
	macroArgsJSON      = "${args_json}"
	macroEnv           = "${env}"
	// macroArgsNoBooleanFlags is ${args} with a boolean as a bare flag: --key if true,
	// nothing if false (W&B's ${args_no_boolean_flags}).
	macroArgsNoBooleanFlags = "${args_no_boolean_flags}"
)

var macros = []string{macroInterpreter, macroProgram, macroArgs, macroArgsNoHyphens, macroArgsJSON, macroArgsNoBooleanFlags, macroEnv}

// defaultCommand is the argv template of a trainer without a command.
var defaultCommand = []string{macroInterpreter, macroProgram, macroArgs}

// Probes lists the probes a program may implement.
var Probes = []string{"lr_decay"}

var (
	validName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	validEnv  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ReservedEnvPrefix starts the variables sfsweep sets for the program; a trainer's env may
// not set them, so that a registry can never point a program at another trial's files.
const ReservedEnvPrefix = "SFSWEEP_"

// deniedEnvPrefixes are the variables no env_pass reaches: sfsweep's own, and the object
// store's credentials, which the AWS SDK reads.
var deniedEnvPrefixes = []string{ReservedEnvPrefix, "AWS_"}

// validEnvPass is a variable name, or a prefix of one followed by "*".
var validEnvPass = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)

// checkEnvPass is why the env_pass pattern pat is refused, or "".
func checkEnvPass(pat string) string {
	if !validEnvPass.MatchString(pat) {
		return "want a variable name, or a prefix of one followed by *: NCCL_*, HF_HOME"
	}
	prefix, glob := strings.CutSuffix(pat, "*")
	for _, d := range deniedEnvPrefixes {
		if strings.HasPrefix(prefix, d) || glob && strings.HasPrefix(d, prefix) {
			return "would pass " + d + "* variables, which are sfsweep's and the object store's credentials"
		}
	}
	return ""
}

// passEnv reports whether the worker's variable name is one the patterns pass (EnvPass).
func passEnv(name string, patterns []string) bool {
	for _, d := range deniedEnvPrefixes {
		if strings.HasPrefix(name, d) {
			return false
		}
	}
	for _, p := range patterns {
		if prefix, glob := strings.CutSuffix(p, "*"); name == p || glob && strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// Check reports the first thing wrong with s, as a *fielderr.Error whose field is under
// "trainer" ("trainer.command[1]"). A command must run ${program}: a template that leaves
// it out would run something other than the file the identity names. The one exception
// is a trainer without a program whose command runs something else (python -m pkg.train):
// its identity is then its version or its files, which it must give.
func (s Spec) Check() error {
	bad := func(field string, value any, reason string) error {
		return &fielderr.Error{Field: "trainer." + field, Value: value, Reason: reason, Line: s.Line}
	}
	if !validName.MatchString(s.Name) {
		return bad("name", s.Name, "must be letters, digits, '-', '_' or '.'")
	}
	if s.Program == "" && (len(s.Command) == 0 || (s.Version == "" && len(s.Files) == 0)) {
		return bad("program", s.Program, "is required: the program's path (or a command that runs without one, with a version or files for its identity)")
	}
	if strings.ContainsAny(s.Interpreter, " \t\n\x00") || strings.Contains(s.Interpreter, "${") {
		return bad("interpreter", s.Interpreter, "must be one command, e.g. python3 (arguments go in command)")
	}
	if s.Command != nil {
		if len(s.Command) == 0 {
			return bad("command", "[]", "must not be empty")
		}
		runs := false
		for i, c := range s.Command {
			if !strings.Contains(c, "${") {
				continue
			}
			if !slices.Contains(macros, c) {
				return bad(fmt.Sprintf("command[%d]", i), c, "unknown macro: an argument is a literal or exactly one of "+strings.Join(macros, ", "))
			}
			runs = runs || c == macroProgram
		}
		if !runs && s.Program != "" {
			return bad("command", strings.Join(s.Command, " "), "must contain "+macroProgram)
		}
		if runs && s.Program == "" {
			return bad("program", "", "is required: the command runs "+macroProgram)
		}
	}
	if s.Version != "" && len(s.Files) > 0 {
		return bad("files", strings.Join(s.Files, ", "), "give version or files, not both")
	}
	for i, f := range s.Files {
		if _, err := filepath.Match(f, ""); f == "" || err != nil {
			return bad(fmt.Sprintf("files[%d]", i), f, "not a valid glob")
		}
	}
	for i, p := range s.Probes {
		if !slices.Contains(Probes, p) {
			return bad(fmt.Sprintf("probes[%d]", i), p, "unknown probe: want one of "+strings.Join(Probes, ", "))
		}
	}
	if s.Launcher != "" && !slices.Contains(Launchers, s.Launcher) {
		return bad("launcher", s.Launcher, "unknown launcher: want "+strings.Join(Launchers, ", "))
	}
	for i, pat := range s.EnvPass {
		if err := checkEnvPass(pat); err != "" {
			return bad(fmt.Sprintf("env_pass[%d]", i), pat, err)
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if !validEnv.MatchString(k) {
			return bad("env."+k, s.Env[k], "not a variable name: letters, digits and '_', not starting with a digit")
		}
		if strings.HasPrefix(k, ReservedEnvPrefix) {
			return bad("env."+k, s.Env[k], "variables starting "+ReservedEnvPrefix+" are sfsweep's")
		}
		if strings.ContainsRune(s.Env[k], 0) {
			return bad("env."+k, s.Env[k], "contains a NUL byte")
		}
	}
	return nil
}

// Identity is s's identity, which a trial's ID hashes: "version:<version>"; else
// "sha256:<hex>" of its Files (globs relative to dir, each matched file's relative path
// and contents hashed in sorted order; a glob that matches no file is an error naming it);
// with neither, the sha256 of the program file itself (where ProgramPath finds it).
func (s Spec) Identity(dir string) (string, error) {
	if s.Version != "" {
		return "version:" + s.Version, nil
	}
	h := sha256.New()
	if len(s.Files) == 0 {
		path, _ := s.ProgramPath(dir)
		b, err := os.ReadFile(path)
		if err != nil {
			return "", &fielderr.Error{Field: "trainer.program", Value: s.Program, Reason: "cannot be read: " + pathErr(err), Line: s.Line}
		}
		h.Write(b)
		return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
	}
	seen := map[string]string{} // the name hashed -> the file
	for i, g := range s.Files {
		matches, err := filepath.Glob(resolve(dir, g))
		if err != nil {
			return "", &fielderr.Error{Field: fmt.Sprintf("trainer.files[%d]", i), Value: g, Reason: "not a valid glob", Line: s.Line}
		}
		n := 0
		for _, m := range matches {
			if fi, err := os.Stat(m); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			name := m
			if rel, err := filepath.Rel(dir, m); err == nil && !filepath.IsAbs(g) {
				name = rel
			}
			seen[filepath.ToSlash(name)] = m
			n++
		}
		if n == 0 {
			return "", &fielderr.Error{Field: fmt.Sprintf("trainer.files[%d]", i), Value: g, Reason: "matches no file under " + dir, Line: s.Line}
		}
	}
	for _, name := range sortedKeys(seen) {
		b, err := os.ReadFile(seen[name])
		if err != nil {
			return "", fmt.Errorf("program: identity of %s: %w", s.Name, err)
		}
		// the name and the length frame each file, so no two file sets hash alike
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// CheckRunnable reports, as a *fielderr.Error, why s cannot start on this machine: its
// program (relative to dir) is not a file, or not executable where s gives no
// interpreter, or its interpreter (or the command's first word) is not on PATH. A worker
// checks its registry so before it takes a trial, and that a launcher's Python imports
// it: a trainer it cannot start is its operator's error, not a trial's.
func (s Spec) CheckRunnable(dir string) error {
	if s.Program != "" {
		p, _ := s.ProgramPath(dir)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			return &fielderr.Error{Field: "program", Value: s.Program, Reason: "cannot be read: " + pathErr(err), Line: s.Line}
		case !fi.Mode().IsRegular():
			return &fielderr.Error{Field: "program", Value: s.Program, Reason: "not a file", Line: s.Line}
		case s.Interpreter == "" && s.Command == nil && fi.Mode().Perm()&0o111 == 0:
			return &fielderr.Error{Field: "program", Value: s.Program, Reason: "not executable: chmod +x it, or give an interpreter", Line: s.Line}
		}
	}
	run := s.Interpreter
	if run == "" && len(s.Command) > 0 && !strings.Contains(s.Command[0], "${") {
		run = s.Command[0]
	}
	if run != "" {
		if _, err := exec.LookPath(run); err != nil {
			field := "interpreter"
			if s.Interpreter == "" {
				field = "command[0]"
			}
			return &fielderr.Error{Field: field, Value: run, Reason: "not found on this worker's PATH", Line: s.Line}
		}
	}
	return s.checkLauncher(context.Background())
}

// WithEnv is identity with env folded in, as the trials of a trainer a manifest defines
// carry it: a manifest that changes only its trainer's env (a library's switch, a model
// flag) names other trials. The values are hashed, never written. Without env it is
// identity itself. A registered trainer's env is its operator's, as the rest of the
// worker's environment is, and stays out of its identity.
func WithEnv(identity string, env map[string]string) string {
	if len(env) == 0 {
		return identity
	}
	h := sha256.New()
	for _, k := range sortedKeys(env) {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", k, len(env[k]), env[k])
	}
	return identity + "+env:" + hex.EncodeToString(h.Sum(nil))[:16]
}

// ProgramPath is where s's program is: its path (under dir if relative), or, for a bare
// name that is no file under dir, the executable of that name on PATH, as a shell finds
// it (a console script such as wandb_allennlp). The second result says it came from PATH.
func (s Spec) ProgramPath(dir string) (string, bool) {
	p := resolve(dir, s.Program)
	if s.Program == "" || strings.ContainsRune(s.Program, filepath.Separator) || strings.ContainsRune(s.Program, '/') {
		return p, false
	}
	if _, err := os.Stat(p); err == nil {
		return p, false
	}
	if found, err := exec.LookPath(s.Program); err == nil {
		if abs, err := filepath.Abs(found); err == nil {
			return abs, true
		}
	}
	return p, false
}

// resolve returns p, or p under dir if it is relative.
func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// pathErr is err without the path an *fs.PathError repeats.
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
