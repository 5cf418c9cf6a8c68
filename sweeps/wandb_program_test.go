package sweeps

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
)

// programOut is a program sweep's manifest as docs/trainer.md writes it.
type programOut struct {
	Name    string `yaml:"name"`
	Trainer struct {
		Name        string   `yaml:"name"`
		Program     string   `yaml:"program"`
		Interpreter string   `yaml:"interpreter"`
		Command     []string `yaml:"command"`
		Files       []string `yaml:"files"`
	} `yaml:"trainer"`
	Parameters map[string]any `yaml:"parameters"`
	Steps      int            `yaml:"steps"`
	Seeds      []int          `yaml:"seeds"`
	Optimizers any            `yaml:"optimizers"`
	Model      string         `yaml:"model"`
	Search     struct {
		Method        string `yaml:"method"`
		Trials        int    `yaml:"trials"`
		Metric        string `yaml:"metric"`
		Goal          string `yaml:"goal"`
		Seed          int    `yaml:"seed"`
		EarlyStopping *struct {
			Rule     string `yaml:"rule"`
			Rungs    []int  `yaml:"rungs"`
			MinSteps int    `yaml:"min_steps"`
			Eta      int    `yaml:"eta"`
			Brackets int    `yaml:"brackets"`
		} `yaml:"early_stopping"`
	} `yaml:"search"`
}

// importProgram imports src as a program sweep and reads the manifest it writes, which
// must also pass checkProgramManifest.
func importProgram(t *testing.T, src string, o WandbOptions) (programOut, string, []string) {
	t.Helper()
	out, notes, err := ImportWandb([]byte(src), o)
	if err != nil {
		t.Fatalf("ImportWandb: %v", err)
	}
	var m programOut
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatalf("the manifest is no YAML: %v\n%s", err, out)
	}
	if m.Trainer.Name == "" || m.Optimizers != nil {
		t.Fatalf("no program sweep (trainer %+v, optimizers %v):\n%s", m.Trainer, m.Optimizers, out)
	}
	checkProgramManifest(t, out)
	return m, string(out), notes
}

const programSweep = `program: scripts/train-lm.py
name: lm sweep
method: bayes
metric:
  name: val/perplexity
  goal: minimize
run_cap: 9
parameters:
  lr:
    distribution: log_uniform_values
    min: 1.0e-5
    max: 1.0e-3
  dropout:
    values: [0.0, 0.1]
  n_layers:
    min: 2
    max: 8
  wd:
    min: 0.0
    max: 0.1
  model_name:
    value: gpt2
  use_amp:
    values: [true, false]
  layers:
    value: [4, 8]
  model:
    parameters:
      n_heads: {values: [4, 8]}
      act: {value: gelu}
  schedule:
    distribution: categorical
    values: [cosine, linear]
  decay:
    distribution: log_uniform
    min: -4
    max: 0
early_terminate:
  type: hyperband
  min_iter: 1
  eta: 3
`

func TestWandbProgram(t *testing.T) {
	m, out, notes := importProgram(t, programSweep, WandbOptions{})
	if m.Name != "lm-sweep" || m.Trainer.Name != "train-lm" || m.Trainer.Program != "scripts/train-lm.py" || m.Trainer.Interpreter != "python3" || m.Trainer.Command != nil {
		t.Errorf("name %q, trainer %+v: want train-lm, scripts/train-lm.py, python3, the default command", m.Name, m.Trainer)
	}
	// every parameter, as written; nested ones dotted; distributions made explicit
	for _, want := range []string{
		"  lr: {distribution: log_uniform, min: 1e-05, max: 0.001}\n",
		"  dropout: [0.0, 0.1]\n",
		"  n_layers: {distribution: int_uniform, min: 2, max: 8}\n",
		"  wd: {distribution: uniform, min: 0, max: 0.1}\n",
		"  model_name: gpt2\n",
		"  use_amp: [true, false]\n",
		"  layers: {value: [4, 8]}\n",
		"  model.n_heads: [4, 8]\n",
		"  model.act: gelu\n",
		"  schedule: [cosine, linear]\n",
		"  decay: {distribution: log_uniform, min: 0.01831563888873418, max: 1}\n", // W&B's bounds are natural logs
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if len(m.Parameters) != 11 {
		t.Errorf("%d parameters, want 11: %v", len(m.Parameters), m.Parameters)
	}
	// the program's metric as it names it; the base's steps and one seed
	s := m.Search
	if s.Method != MethodTPE || s.Trials != 9 || s.Metric != "val/perplexity" || s.Goal != "minimize" || m.Steps != 300 || !slices.Equal(m.Seeds, []int{1}) {
		t.Errorf("search %+v, steps %d, seeds %v", s, m.Steps, m.Seeds)
	}
	// min_iter 1: rungs 30, 90, 270; 9 configurations let one finish past two of them
	if es := s.EarlyStopping; es == nil || es.Rule != RuleHyperband || es.Brackets != 1 || !slices.Equal(es.Rungs, []int{30, 90}) || es.Eta != 3 {
		t.Errorf("early stopping %+v, want hyperband, one bracket, at rungs [30 90]", es)
	}
	for _, want := range []string{"line 2: name = \"lm sweep\": written lm-sweep", "line 3: method = bayes: searched by tpe", "line 38: early_terminate = hyperband: rungs [30 90] of [30 90 270] kept"} {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("no note %q in\n%s", want, strings.Join(notes, "\n"))
		}
	}
}

func TestWandbProgramForms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		o     WandbOptions
		check func(m programOut, out string) bool
	}{
		{"a command with ${interpreter}", "program: train.py\ncommand: [\"${env}\", \"${interpreter}\", \"${program}\", --fp16, \"${args_no_hyphens}\"]\nmethod: grid\nparameters: {lr: {values: [0.1, 0.2]}}\n", WandbOptions{},
			func(m programOut, _ string) bool {
				return m.Trainer.Interpreter == "python3" && slices.Equal(m.Trainer.Command, []string{"${env}", "${interpreter}", "${program}", "--fp16", "${args_no_hyphens}"})
			}},
		{"a command with its own interpreter", "program: train.py\ncommand: [python, \"${program}\", \"${args}\"]\nmethod: grid\nparameters: {lr: {values: [0.1]}}\n", WandbOptions{},
			func(m programOut, _ string) bool {
				return m.Trainer.Interpreter == "" && m.Trainer.Program == "train.py" && len(m.Trainer.Command) == 3
			}},
		{"a command that runs a script", "command: [deepspeed, run_clm.py, \"${args}\"]\nmethod: grid\nparameters: {lr: {values: [0.1]}}\n", WandbOptions{},
			func(m programOut, _ string) bool {
				return m.Trainer.Name == "run_clm" && m.Trainer.Program == "run_clm.py" && m.Trainer.Interpreter == "" && slices.Equal(m.Trainer.Command, []string{"deepspeed", "${program}", "${args}"})
			}},
		{"a command that runs the program by its path", "program: src/t.py\ncommand: [python, src/t.py, --x]\nmethod: grid\nparameters: {lr: {values: [0.1]}}\n", WandbOptions{},
			func(m programOut, _ string) bool {
				return m.Trainer.Program == "src/t.py" && slices.Equal(m.Trainer.Command, []string{"python", "${program}", "--x"})
			}},
		{"-program for a sweep without one", "method: grid\nparameters: {lr: {values: [0.1]}}\n", WandbOptions{Program: "bin/fit.sh"},
			func(m programOut, _ string) bool { return m.Trainer.Name == "fit" && m.Trainer.Program == "bin/fit.sh" }},
		{"-program over the sweep's", "program: a.py\nmethod: grid\nparameters: {lr: {values: [0.1]}}\n", WandbOptions{Program: "b.py"},
			func(m programOut, _ string) bool { return m.Trainer.Program == "b.py" }},
		{"a grid lists int_uniform and q_uniform as W&B's does", "program: t.py\nmethod: grid\nparameters:\n  n: {min: 1, max: 3}\n  w: {distribution: q_uniform, min: 0, max: 1, q: 0.25}\n", WandbOptions{},
			func(_ programOut, out string) bool {
				return strings.Contains(out, "  n: [1, 2, 3]\n") && strings.Contains(out, "  w: [0, 0.25, 0.5, 0.75]\n")
			}},
		{"maximize", "program: t.py\nmethod: random\nrun_cap: 4\nmetric: {name: eval/accuracy, goal: maximize}\nparameters: {lr: {min: 0.1, max: 0.2}}\n", WandbOptions{},
			func(m programOut, _ string) bool {
				return m.Search.Metric == "eval/accuracy" && m.Search.Goal == "maximize" && m.Search.Trials == 4
			}},
		{"-count without run_cap", "program: t.py\nmethod: random\nparameters: {lr: {min: 0.1, max: 0.2}}\n", WandbOptions{Count: 12},
			func(m programOut, _ string) bool { return m.Search.Trials == 12 && m.Search.Metric == MetricValLoss }},
		{"the base's trials without run_cap", "program: t.py\nmethod: random\nparameters: {lr: {min: 0.1, max: 0.2}}\n", WandbOptions{Base: []byte("name: b\nsteps: 100\nseeds: [1, 2]\nsearch: {trials: 6, seed: 3}\n")},
			func(m programOut, _ string) bool {
				return m.Search.Trials == 6 && m.Search.Seed == 3 && m.Steps == 100 && slices.Equal(m.Seeds, []int{1, 2})
			}},
		{"a base's grids and model", "program: t.py\nmethod: grid\nparameters: {lr: {values: [0.1]}}\n", WandbOptions{Base: []byte(wandbBase)},
			func(m programOut, _ string) bool {
				return m.Optimizers == nil && m.Model == "twin-llama" && m.Name == "my-base"
			}},
		{"a capped grid with early stopping", "program: t.py\nmethod: grid\nrun_cap: 3\nparameters: {a: {values: [1, 2]}, b: {values: [1, 2, 3]}}\nearly_terminate: {type: hyperband, min_iter: 1}\n", WandbOptions{},
			func(m programOut, _ string) bool { return m.Search.Trials == 3 && m.Search.EarlyStopping != nil }},
		{"a grid under its cap", "program: t.py\nmethod: grid\nrun_cap: 30\nparameters: {a: {values: [1, 2]}, b: {values: [1, 2, 3]}}\n", WandbOptions{},
			func(m programOut, _ string) bool { return m.Search.Trials == 0 }},
		{"brackets past the end", "program: t.py\nmethod: random\nrun_cap: 50\nparameters: {lr: {min: 0.1, max: 0.2}}\nearly_terminate: {type: hyperband, min_iter: 20}\n", WandbOptions{},
			func(m programOut, _ string) bool { return m.Search.EarlyStopping == nil }},
		{"brackets of a base at the program's scale", "program: t.py\nmethod: random\nrun_cap: 50\nparameters: {lr: {min: 0.1, max: 0.2}}\nearly_terminate: {type: hyperband, min_iter: 20}\n", WandbOptions{Base: []byte("name: b\nsteps: 20000\neval_every: 200\ncheckpoint_every: 200\nseeds: [1]\n")},
			func(m programOut, _ string) bool {
				es := m.Search.EarlyStopping // 4000, 12000; 50 configurations let one pass both
				return es != nil && es.MinSteps == 4000 && es.Eta == 3
			}},
		{"too few configurations to halve", "program: t.py\nmethod: grid\nparameters: {a: {values: [1, 2]}}\nearly_terminate: {type: hyperband, min_iter: 1}\n", WandbOptions{},
			func(m programOut, _ string) bool { return m.Search.EarlyStopping == nil }},
		{"a value that is a list of lists", "program: t.py\nmethod: grid\nparameters: {betas: {values: [[0.9, 0.95], [0.9, 0.99]]}}\n", WandbOptions{},
			func(_ programOut, out string) bool {
				return strings.Contains(out, "  betas: {values: [[0.9, 0.95], [0.9, 0.99]]}\n")
			}},
	} {
		m, out, _ := importProgram(t, tc.src, tc.o)
		if !tc.check(m, out) {
			t.Errorf("%s: %+v\n%s", tc.name, m, out)
		}
	}
}

func TestWandbProgramErrors(t *testing.T) {
	for _, tc := range []struct {
		src    string
		o      WandbOptions
		field  string
		line   int
		reason string
	}{
		{"method: grid\ncommand: [python, \"${program}\"]\nparameters: {lr: {values: [1]}}\n", WandbOptions{}, "program", 1, "name the program here, or give -program"},
		{"method: grid\ncommand: [python, -m, src.train, \"${args}\"]\nparameters: {lr: {values: [1]}}\n", WandbOptions{Program: "src/train.py"}, "command", 2, "runs no program file"},
		{"program: t.py\ncommand: [accelerate, launch, \"${program}\", \"${args_no_flags}\"]\nmethod: grid\nparameters: {lr: {values: [1]}}\n", WandbOptions{}, "command", 2, "a trainer's command takes"},
		{"program: t.py\nmethod: random\nrun_cap: 3\nparameters:\n  w: {distribution: q_uniform, min: 0, max: 100, q: 0}\n", WandbOptions{}, "parameters.w.q", 5, "q_uniform's q must be > 0"},
		{"program: t.py\nmethod: random\nrun_cap: 3\nparameters:\n  w: {distribution: normal, min: 0, sigma: 1}\n", WandbOptions{}, "parameters.w.min", 5, "normal takes mu, sigma, as W&B's schema says"},
		{"program: t.py\nmethod: random\nrun_cap: 3\nparameters:\n  w: {distribution: beta, a: -1}\n", WandbOptions{}, "parameters.w.a", 5, "beta's a must be > 0"},
		{"program: t.py\nmethod: random\nrun_cap: 3\nparameters:\n  w: {distribution: q_uniform, max: 3}\n", WandbOptions{}, "parameters.w", 5, "q_uniform needs min and max"},
		{"program: t.py\nmethod: grid\nparameters:\n  w: {distribution: normal}\n", WandbOptions{}, "parameters.w", 4, "a grid takes value, values, int_uniform or q_uniform"},
		{"program: t.py\nmethod: random\nparameters: {lr: {min: 0.1, max: 0.2}}\n", WandbOptions{}, "run_cap", 2, "give run_cap, or -count"},
		{"program: t.py\nmethod: grid\nrun_cap: 3\nparameters: {a: {values: [1, 2]}, b: {values: [1, 2, 3]}}\n", WandbOptions{}, "run_cap", 3, "W&B runs the first 3 of the grid's 6 points"},
		{"program: t.py\nmethod: grid\nparameters:\n  out: {value: /tmp/x}\n", WandbOptions{}, "parameters.out", 4, "an absolute path"},
		{"program: t.py\nmethod: grid\nparameters:\n  data: {values: [a, ../b]}\n", WandbOptions{}, "parameters.data", 4, "a '..' segment"},
		{"program: t.py\nmethod: grid\nparameters:\n  mode: {value: --eval}\n", WandbOptions{}, "parameters.mode", 4, "would read it as a flag"},
		{"program: t.py\nmethod: grid\nparameters:\n  lr: {min: 0.1, max: 0.2}\n", WandbOptions{}, "parameters.lr", 4, "a grid takes value, values, int_uniform or q_uniform"},
		{"program: t.py\nmethod: grid\nparameters:\n  bits:\n    values: [4, 8]\n    conditions: {quantize: true}\n", WandbOptions{}, "parameters.bits.conditions", 6, "not a key of a W&B parameter"},
		{"program: t.py\nmethod: grid\nparameters:\n  epochs:\n    values: 3\n", WandbOptions{}, "parameters.epochs", 4, "values: want a list"},
		{"program: t.py\nmethod: random\nrun_cap: 3\nmetric: {name: acc, goal: up}\nparameters: {lr: {min: 0.1, max: 0.2}}\n", WandbOptions{}, "metric.goal", 4, "minimize or maximize"},
		{"program: t.py\nmethod: random\nrun_cap: 3\nparameters:\n  lr: {distribution: gamma, min: 1, max: 2}\n", WandbOptions{}, "parameters.lr", 5, "not a W&B distribution"},
		{"program: t.py\nmethod: random\nrun_cap: 3\nparameters:\n  a:\n    parameters:\n      b: {value: 1}\n  a.b: {value: 2}\n", WandbOptions{}, "parameters.a.b", 8, "another parameter has this name"},
	} {
		_, _, err := ImportWandb([]byte(tc.src), tc.o)
		var e *fielderr.Error
		if !errors.As(err, &e) || e.Field != tc.field || e.Line != tc.line || !strings.Contains(e.Reason, tc.reason) {
			t.Errorf("%q: error %v; want line %d: %s: ...%s...", tc.src, err, tc.line, tc.field, tc.reason)
		}
	}
}

// -native imports a sweep that names a program onto sfsweep's engine, and a sweep that
// names none imports there whatever.
func TestWandbNative(t *testing.T) {
	src := readTestdata(t, "bayes-hyperband.yaml")
	native, notes, err := ImportWandb([]byte(src), WandbOptions{Native: true})
	if err != nil {
		t.Fatal(err)
	}
	// it says which optimizers the engine trains, and why
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, "optimizers = sfadamw") && strings.Contains(n, "sfsweep's engine trains these,")
	}) {
		t.Errorf("no note of the optimizers trained in\n%s", strings.Join(notes, "\n"))
	}
	want, _, _ := FromWandb([]byte(src), nil)
	if !reflect.DeepEqual(native, want) {
		t.Errorf("-native differs from FromWandb")
	}
	m, _, _ := importProgram(t, src, WandbOptions{})
	if m.Trainer.Program != "train.py" || len(m.Trainer.Command) != 4 || m.Parameters["c"] == nil {
		t.Errorf("the sweep of its program: %+v", m)
	}
	plain, _, err := ImportWandb([]byte(wandbSweep), WandbOptions{})
	if _, perr := Parse(plain); err != nil || perr != nil {
		t.Errorf("a sweep without a program: %v, %v", err, perr)
	}
}

// manifestHasTrainer reports whether Manifest reads a trainer: block, so that Parse can
// check a program sweep's manifest.
func manifestHasTrainer() bool {
	t := reflect.TypeFor[Manifest]()
	for i := range t.NumField() {
		if strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0] == "trainer" {
			return true
		}
	}
	return false
}

// checkProgramManifest parses a program sweep's manifest where Manifest reads trainers,
// with its program's file in place (its contents are the trainer's identity).
func checkProgramManifest(t *testing.T, out []byte) {
	t.Helper()
	if !manifestHasTrainer() {
		return
	}
	var m programOut
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// the user's files: the program, and the files that identify a trainer without one
	for _, prog := range append([]string{m.Trainer.Program}, m.Trainer.Files...) {
		if prog == "" || filepath.IsAbs(prog) {
			continue
		}
		file := filepath.Join(dir, filepath.FromSlash(prog))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte("# the program\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resolved, err := ResolveTrainer(out, dir)
	if err != nil {
		t.Errorf("the program sweep's trainer: %v\n%s", err, out)
		return
	}
	if _, err := Parse(resolved); err != nil {
		t.Errorf("the program sweep's manifest does not parse: %v\n%s", err, resolved)
	}
}

// ImportWandb never panics, and what it writes is a YAML mapping.
func FuzzImportWandb(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "wandb", "corpus", "*.yaml"))
	for _, file := range files {
		src, _ := os.ReadFile(file)
		f.Add(src)
	}
	f.Add([]byte(programSweep))
	f.Fuzz(func(t *testing.T, src []byte) {
		out, _, err := ImportWandb(src, WandbOptions{Count: 5, Program: "t.py"})
		if err != nil {
			return
		}
		var m map[string]any
		if err := yaml.Unmarshal(out, &m); err != nil || m["trainer"] == nil {
			t.Fatalf("the import of\n%s\nis no program manifest (%v):\n%s", src, err, out)
		}
	})
}

// A sweep's program that is a bare name, as a console script on PATH is, is imported as
// it is, with a note of how sfsweep finds it and what identifies it.
func TestWandbProgramOnPath(t *testing.T) {
	src := "program: wandb_allennlp\nmethod: grid\nparameters:\n  dropout: {values: [0.1, 0.2]}\n"
	m, _, notes := importProgram(t, src, WandbOptions{})
	if m.Trainer.Program != "wandb_allennlp" {
		t.Errorf("trainer %+v", m.Trainer)
	}
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, "wandb_allennlp: a bare name") && strings.Contains(n, "on PATH")
	}) {
		t.Errorf("no note of the program on PATH in\n%s", strings.Join(notes, "\n"))
	}
}
