package sweeps

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

// programManifest is a sweep of a program trainer's own parameters, without optimizers.
const programManifest = `name: own-program
trainer:
  name: my-trainer
  version: "3"
parameters:
  dropout: [0.0, 0.1]
  model_name: [small, large]
  epochs: 2
steps: 100
seeds: [1, 2]
`

func TestProgramManifestExpands(t *testing.T) {
	m, err := Parse([]byte(programManifest))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := m.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 2*2*2 {
		t.Fatalf("%d trials, want 8 (2 dropouts × 2 models × 2 seeds)", len(trials))
	}
	ids := map[string]bool{}
	for _, tr := range trials {
		c := tr.Config
		if c.Trainer == nil || c.Trainer.Name != "my-trainer" || c.Trainer.Identity != "version:3" {
			t.Fatalf("trial %s: trainer %+v", tr.ID, c.Trainer)
		}
		if c.Optimizer.Name != "" || c.Model != "" || c.ModelConfig != nil || c.Data.Default != "" {
			t.Fatalf("trial %s: a program's own grid sets no optimizer, model or data: %+v", tr.ID, c)
		}
		if got := c.Trainer.Params["epochs"]; got != 2 {
			t.Fatalf("epochs = %v (%T), want 2", got, got)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("trial %s: %v", tr.ID, err)
		}
		ids[tr.ID] = true
	}
	if len(ids) != len(trials) {
		t.Fatalf("%d distinct IDs for %d trials", len(ids), len(trials))
	}
	// the ID covers the trainer's identity: another version is another trial
	m2, err := Parse([]byte(strings.Replace(programManifest, `version: "3"`, `version: "4"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	trials2, _ := m2.Expand()
	for _, tr := range trials2 {
		if ids[tr.ID] {
			t.Fatalf("trial %s of version 4 has an ID of version 3", tr.ID)
		}
	}
	args := trials[0].Config.Args()
	var got []string
	for _, a := range args {
		got = append(got, a.Key)
	}
	if strings.Join(got, ",") != "dropout,epochs,model_name" {
		t.Fatalf("args %v: a program's own grid passes only its parameters, by name", got)
	}
}

// withoutTables is a manifest without its tables: section (which ends before output:).
func withoutTables(src string) string {
	i, j := strings.Index(src, "tables:\n"), strings.Index(src, "output:\n")
	return src[:i] + src[j:]
}

func TestProgramWithOptimizerGrid(t *testing.T) {
	// its tables go: their cells are optimizer settings, and compile takes two values
	src := strings.Replace(withoutTables(readExample(t, "c-sensitivity-quick.yaml")), "name: c-sensitivity-quick\n", "name: c-sensitivity-quick-program\ntrainer: {name: ref, version: v1}\nparameters: {compile: [false, true]}\n", 1)
	m, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := m.Expand()
	if err != nil {
		t.Fatal(err)
	}
	native, _ := expandExample(t, "c-sensitivity-quick.yaml")
	if n, _ := native.Expand(); len(trials) != 2*len(n) {
		t.Fatalf("%d trials, want %d (the native grid × 2 values of compile)", len(trials), 2*len(n))
	}
	keys := map[string]bool{}
	for _, a := range trials[0].Config.Args() {
		keys[a.Key] = true
	}
	for _, k := range []string{"optimizer", "lr", "beta1", "beta2", "c", "steps", "seed", "batch_tokens", "micro_batch", "seq_len", "eval_every", "checkpoint_every", "compile"} {
		if k == "c" && trials[0].Config.Optimizer.C == 0 {
			continue
		}
		if !keys[k] {
			t.Errorf("a trial of an optimizer grid is not passed %s: %v", k, trials[0].Config.Args())
		}
	}
	// the example sets eval_seqs and test_seqs: they are passed; a manifest that does not
	// passes neither (the program keeps its own defaults)
	for _, k := range []string{"eval_seqs", "test_seqs"} {
		if !keys[k] {
			t.Errorf("a manifest's %s is not passed: %v", k, trials[0].Config.Args())
		}
	}
	unset := strings.NewReplacer("eval_seqs: 64\n", "", "test_seqs: 128\n", "").Replace(src)
	m, err = Parse([]byte(unset))
	if err != nil {
		t.Fatal(err)
	}
	trials, err = m.Expand()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range trials[0].Config.Args() {
		if a.Key == "eval_seqs" || a.Key == "test_seqs" {
			t.Errorf("a program is passed %s = %v that its manifest does not give", a.Key, a.Value)
		}
	}
}

func readExample(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("examples", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProgramManifestErrors(t *testing.T) {
	for _, c := range []struct {
		name, edit, field, reason string
		line                      int
	}{
		{"flag value", "model_name: [small, --rm]", "parameters.model_name[1]", "flag", 7},
		{"path outside", "model_name: [/etc/passwd]", "parameters.model_name[0]", "absolute path", 7},
		{"parent path", "model_name: [../secrets]", "parameters.model_name[0]", "run directory", 7},
		{"argv too long", "model_name: [small, " + strings.Repeat("x", 200_000) + "]", "parameters.model_name[1]", "MAX_ARG_STRLEN", 7},
		{"no version", `version: "3"`, "trainer", "version", 0},
		{"bad name", "name: my-trainer", "trainer.name", "letters", 0},
		{"env alone", "env", "trainer.env", "registry", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := programManifest
			switch {
			case strings.HasPrefix(c.edit, "model_name"):
				src = strings.Replace(src, "model_name: [small, large]", c.edit, 1)
			case c.name == "no version":
				src = strings.Replace(src, `  version: "3"`+"\n", "", 1)
			case c.edit == "env":
				src = strings.Replace(src, `  version: "3"`+"\n", `  version: "3"`+"\n  env: {XLA_FLAGS: a}\n", 1)
			default:
				src = strings.Replace(src, "name: my-trainer", "name: -x", 1)
			}
			_, err := Parse([]byte(src))
			var fe *fielderr.Error
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a field error", err)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("err of %d bytes: the error must say what is wrong, not repeat the value", len(err.Error()))
			}
			if fe.Field != c.field || !strings.Contains(fe.Reason, c.reason) || (c.line > 0 && fe.Line != c.line) {
				t.Fatalf("err = %v (field %q line %d), want field %q line %d, a reason about %q", err, fe.Field, fe.Line, c.field, c.line, c.reason)
			}
		})
	}
	// a table of optimizer settings beside a trainer parameter of several values would
	// put two trials of one seed in a cell: refused by validate, not at the end of the run
	src0 := strings.Replace(readExample(t, "c-sensitivity-quick.yaml"), "name: c-sensitivity-quick\n", "name: x\ntrainer: {name: ref, version: v1}\nparameters: {dropout: [0.0, 0.1]}\n", 1)
	if _, err := Parse([]byte(src0)); err == nil || !strings.Contains(err.Error(), "trainer's parameter dropout takes more than one value") {
		t.Errorf("a table beside a trainer parameter grid: err = %v", err)
	}
	// a native grid passes lr itself: a parameter may not shadow it
	src := strings.Replace(readExample(t, "c-sensitivity-quick.yaml"), "name: c-sensitivity-quick\n", "name: x\ntrainer: {name: ref, version: v1}\nparameters: {lr: 0.1}\n", 1)
	if _, err := Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), "parameters.lr") {
		t.Fatalf("a parameter named lr beside optimizer grids: err = %v", err)
	}
}

func TestResolveTrainerHashesFiles(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "train.py")
	if err := os.WriteFile(prog, []byte("print('v1')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := []byte("name: p\ntrainer:\n  name: t\n  program: train.py\n  interpreter: python3\n  files: [\"*.py\"]\nsteps: 10\nseeds: [1]\n")
	ids := map[string]bool{}
	for _, body := range []string{"print('v1')\n", "print('v2')\n"} {
		if err := os.WriteFile(prog, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := ResolveTrainer(src, dir)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.HasPrefix(m.Trainer.Identity, "sha256:") {
			t.Fatalf("identity %q, want the files' sha256", m.Trainer.Identity)
		}
		trials, err := m.Expand()
		if err != nil {
			t.Fatal(err)
		}
		ids[trials[0].ID] = true
	}
	if len(ids) != 2 {
		t.Fatal("a change to the trainer's files left its trial's ID as it was")
	}
	if _, err := Parse(src); err == nil {
		t.Fatal("a trainer known by its files parsed without its identity")
	}
}

// A search over a program's own parameters, as README shows it: its plan samples the
// distributions, and a sampled configuration's trials pass the values it drew.
func TestProgramSearchPlan(t *testing.T) {
	src := strings.Replace(programManifest, "parameters:\n", "parameters:\n  lr: {distribution: log_uniform, min: 1e-4, max: 1e-2}\n", 1) +
		"search: {method: random, trials: 4, metric: val_ppl, goal: maximize}\n"
	m, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if p.Worst.Trials != 4*2 || p.Worst.Steps != 8*100 {
		t.Fatalf("plan %+v, want 8 trials of 100 steps", p.Worst)
	}
	dims := m.Dims(0)
	var names []string
	for _, d := range dims {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "dropout,lr,model_name" || !dims[2].Index {
		t.Fatalf("dims %+v: want dropout, lr and model_name (an index among its strings)", dims)
	}
	trials, err := m.PointTrials(0, map[string]float64{"dropout": 0.1, "lr": 3e-3, "model_name": 1})
	if err != nil {
		t.Fatal(err)
	}
	got := trials[0].Config.Trainer.Params
	if got["lr"] != 3e-3 || got["model_name"] != "large" || got["dropout"] != 0.1 || got["epochs"] != 2 {
		t.Fatalf("params %v", got)
	}
	if _, err := Parse([]byte(strings.Replace(src, "metric: val_ppl", "metric: val_loss", 1))); err == nil {
		t.Fatal("maximize a loss: no error")
	}
}

func TestProgramProbes(t *testing.T) {
	_, err := Parse([]byte(programManifest + "probes: {decay: {steps: 5}}\n"))
	var fe *fielderr.Error
	if !errors.As(err, &fe) || fe.Field != "probes" || fe.Line != 11 {
		t.Fatalf("err = %v, want the decay probe refused on line 11", err)
	}
	_, err = Parse([]byte(programManifest + "probes: {lr_decay: {frac: 0.2}}\n"))
	if !errors.As(err, &fe) || fe.Field != "probes.lr_decay" {
		t.Fatalf("err = %v, want lr_decay refused for a trainer that does not list it", err)
	}
	src := strings.Replace(programManifest, `version: "3"`, `version: "3"`+"\n  probes: [lr_decay]", 1) + "checkpoint_every: 50\nprobes: {lr_decay: {frac: 0.2, at: [50]}}\n"
	if _, err := Parse([]byte(src)); err != nil {
		t.Fatalf("lr_decay of a trainer that lists it: %v", err)
	}
}

// TestTrainerEnvInIdentity: a manifest's trainer that differs only in its env names other
// trials (its values hashed, never written into the config), one without env keeps the
// identity its version gives, and the env's order does not matter.
func TestTrainerEnvInIdentity(t *testing.T) {
	ids := func(trainer string) (string, string) {
		t.Helper()
		src := strings.Replace(programManifest, "  name: my-trainer\n  version: \"3\"\n", trainer, 1)
		m, err := Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		trials, err := m.Expand()
		if err != nil {
			t.Fatal(err)
		}
		return trials[0].ID, trials[0].Config.Trainer.Identity
	}
	plainID, plain := ids("  name: my-trainer\n  version: \"3\"\n  program: train.py\n")
	aID, a := ids("  name: my-trainer\n  version: \"3\"\n  program: train.py\n  env: {XLA_FLAGS: a, SECRETISH: s3cr3t}\n")
	a2ID, _ := ids("  name: my-trainer\n  version: \"3\"\n  program: train.py\n  env: {SECRETISH: s3cr3t, XLA_FLAGS: a}\n")
	bID, _ := ids("  name: my-trainer\n  version: \"3\"\n  program: train.py\n  env: {XLA_FLAGS: b, SECRETISH: s3cr3t}\n")
	if plain != "version:3" {
		t.Errorf("identity without env %q, want version:3", plain)
	}
	if aID == plainID || aID == bID || aID != a2ID {
		t.Errorf("trial IDs: no env %s, env a %s (reordered %s), env b %s: want env in the ID, not its order", plainID, aID, a2ID, bID)
	}
	if !strings.HasPrefix(a, "version:3+env:") || strings.Contains(a, "s3cr3t") {
		t.Errorf("identity with env %q: want version:3+env:<hash>, no value", a)
	}
}
