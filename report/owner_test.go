package report

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/sweeps"
)

func parse(t *testing.T, src string) *sweeps.Manifest {
	t.Helper()
	m, err := sweeps.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Two sweeps never overwrite each other's tables by accident: a manifest of the same name
// with other trials is refused (before and while building), the same manifest extended
// may write, and the smaller one may not write over the extension.
func TestOutputOwner(t *testing.T) {
	ctx := context.Background()
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const head = "name: c\nmodel: micro-llama\ndata: {default: byte}\nbatch_tokens: 32\nsteps: 10\nseeds: [1]\n" +
		"tables:\n  - {kind: c_sensitivity, name: c}\noptimizers:\n"
	small := parse(t, head+"  - {name: sfadamw, lr: 1e-3, betas: [[0.9, 0.99]], c: [vanilla, 50]}\n")
	extended := parse(t, head+"  - {name: sfadamw, lr: 1e-3, betas: [[0.9, 0.99]], c: [vanilla, 50, 200]}\n")
	other := parse(t, head+"  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]], c: [vanilla]}\n")
	build := func(m *sweeps.Manifest) error {
		_, err := Build(ctx, store, m, Options{})
		return err
	}
	for _, m := range []*sweeps.Manifest{small, small, extended, extended} {
		if err := build(m); err != nil {
			t.Fatal(err)
		}
	}
	for name, m := range map[string]*sweeps.Manifest{"the smaller manifest": small, "another manifest": other} {
		trials, _ := m.Expand()
		var taken *OutputTakenError
		if err := CheckOutput(ctx, store, m, trials); !errors.As(err, &taken) || taken.Manifest != "c" || taken.Lacks < 1 {
			t.Errorf("%s: CheckOutput = %v, want an *OutputTakenError", name, err)
		}
		err := build(m)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "output = sweeps/c: holds the tables of another sweep") || !strings.Contains(err.Error(), "output.prefix") {
			t.Errorf("%s: Build = %v", name, err)
		}
	}
	// elsewhere, the other manifest writes
	other.Output.Prefix = "results/other"
	if err := build(other); err != nil {
		t.Error(err)
	}
}
