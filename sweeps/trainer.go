package sweeps

// A manifest's trainer (trainer:): the program that trains its trials instead of
// sfsweep's engine, named for a distributed worker's registry, or defined in full for
// sfsweep run (docs/trainer.md).

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/program"
	"github.com/sfsweep/sfsweep/training"
)

// Trainer is a manifest's trainer: its name, and its version or identity; under sfsweep
// run, also the program (Spec).
type Trainer struct {
	Name string `yaml:"name"`
	// Identity is the trainer's identity as a worker computes it ("sha256:<hex>", or
	// "version:<v>"): written by ResolveTrainer for a trainer identified by its files, or
	// given by hand to name a registered trainer so identified.
	Identity     string `yaml:"identity,omitempty"`
	program.Spec `yaml:",inline"`
}

// Local reports whether the trainer defines its program (program, interpreter, command,
// files, env), which only sfsweep run may start: a distributed worker runs only the
// trainers its operator registered.
func (t *Trainer) Local() bool {
	s := t.Spec
	return s.Program != "" || s.Interpreter != "" || len(s.Command) > 0 || len(s.Files) > 0 || len(s.Env) > 0
}

// identity is the trainer's identity as trial configs carry it: Identity, or its
// version's; "" until ResolveTrainer has hashed its files.
func (t *Trainer) identity() string {
	if t.Identity != "" {
		return t.Identity
	}
	if t.Version != "" {
		return "version:" + t.Version
	}
	return ""
}

// Config is the trial config's trainer with the parameters params.
func (t *Trainer) Config(params map[string]any) *training.Trainer {
	if len(params) == 0 {
		params = nil
	}
	id := t.identity()
	if t.Local() {
		id = program.WithEnv(id, t.Env)
	}
	return &training.Trainer{Name: t.Name, Identity: id, Params: params}
}

// check validates the manifest's trainer and parameters.
func (m *Manifest) checkTrainer() error {
	t := m.Trainer
	if t == nil {
		if len(m.Parameters) > 0 {
			return &fielderr.Error{Field: "parameters", Value: m.Parameters[0].Name, Reason: "parameters are passed to a program trainer: give trainer (docs/trainer.md)"}
		}
		return nil
	}
	if !training.TrainerName.MatchString(t.Name) {
		return &fielderr.Error{Field: "trainer.name", Value: fmt.Sprintf("%q", t.Name), Reason: "must be letters, digits, '.', '_' and '-', starting with a letter or digit"}
	}
	spec := t.Spec
	spec.Name = t.Name
	if len(spec.Env) > 0 && spec.Program == "" && spec.Interpreter == "" && len(spec.Command) == 0 && len(spec.Files) == 0 {
		return &fielderr.Error{Field: "trainer.env", Value: strings.Join(slices.Sorted(maps.Keys(spec.Env)), ", "), Reason: "env goes with the program it is for: under sfsweep run, give the trainer's program (or command); a registered trainer's env is its worker's registry's, and a manifest for submit names the trainer by name and version alone"}
	}
	if t.Local() {
		if err := spec.Check(); err != nil {
			return err
		}
		if m.Setup.GPUs > 1 && spec.Launcher == "" {
			return &fielderr.Error{Field: "gpus", Value: m.Setup.GPUs, Reason: fmt.Sprintf("trainer %s has no launcher, and a program of several GPUs runs once per GPU: give it launcher: torchrun (docs/trainer.md, \"Trials of several GPUs\")", t.Name)}
		}
	}
	for _, p := range spec.Probes {
		if !slices.Contains(program.Probes, p) {
			return &fielderr.Error{Field: "trainer.probes", Value: p, Reason: fmt.Sprintf("the probes a program may implement: %q", program.Probes)}
		}
	}
	if ps := m.Probes; ps.Decay != nil || ps.Interpolate != nil {
		return &fielderr.Error{Field: "probes", Value: "a program trainer", Reason: "decay probes and interpolations run on sfsweep's engine only: a program runs lr_decay, if its trainer lists it"}
	}
	if m.Probes.LRDecay != nil && !slices.Contains(spec.Probes, "lr_decay") {
		return &fielderr.Error{Field: "probes.lr_decay", Value: t.Name, Reason: "the trainer does not implement it: list it in trainer.probes (docs/trainer.md, \"Probes\")"}
	}
	if t.identity() == "" && !t.Local() {
		return &fielderr.Error{Field: "trainer", Value: t.Name, Reason: "name the registered trainer's version (trainer.version) or identity (trainer.identity), so that a trial's ID covers its code"}
	}
	return m.Parameters.check(len(m.Optimizers) > 0, m.Sampled())
}

// ResolveTrainer returns the manifest src with its trainer's identity written in
// (trainer.identity), where the trainer is identified by its files (or its program file)
// rather than a version: the hash of their contents, found relative to dir, the manifest's
// directory. A stored manifest so carries what every worker needs to compute its trials'
// IDs. Other manifests come back as they are.
func ResolveTrainer(src []byte, dir string) ([]byte, error) {
	root, err := readNode(src) // bounded: only the trainer's small mapping is decoded
	if err != nil || len(root.Content) == 0 {
		return src, nil // Parse reports what is wrong
	}
	t := lookup(root.Content[0], "trainer")
	if t == nil || t.Kind != yaml.MappingNode {
		return src, nil
	}
	var trainer Trainer
	if err := t.Decode(&trainer); err != nil || trainer.identity() != "" || !trainer.Local() {
		return src, nil
	}
	id, err := trainer.Spec.Identity(dir)
	if err != nil {
		return nil, err // its field is the trainer's already
	}
	setKey(t, "identity", quoted(id))
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// native reports whether the manifest's trials are of optimizer grids, whose runs pass
// the trainer their optimizer and loop (and checkpoint and evaluate where the manifest
// says).
func (t *Trainer) native(m *Manifest) bool {
	return len(m.Optimizers) > 0 && !m.Optimizers[0].program()
}
