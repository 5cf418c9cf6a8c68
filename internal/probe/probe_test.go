package probe

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// A manifest's probes: block reads into a Set with the manifest's keys.
func TestYAML(t *testing.T) {
	src := `
decay: {at: [10, 20], steps: 4, iterate: ewa}
lr_decay: {frac: 0.2}
interpolate: {from: 10, to: 30, decayed: true}
`
	var s Set
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		t.Fatal(err)
	}
	want := Set{
		Decay:       &Decay{At: []int{10, 20}, Steps: 4, Iterate: "ewa"},
		LRDecay:     &LRDecay{Frac: 0.2},
		Interpolate: &Interpolation{From: 10, To: 30, Decayed: true},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("decoded %+v, want %+v", s, want)
	}
}

// For fills the defaults in, turns "every checkpoint" into the trial's checkpoint steps and
// keeps the AdamW-only probe (the decayed interpolation) for AdamW trials, the LR-decay
// branch for every trial, leaving the manifest's Set as it was.
func TestFor(t *testing.T) {
	s := Set{
		Decay:       &Decay{Steps: 4},
		LRDecay:     &LRDecay{Frac: 0.5},
		Interpolate: &Interpolation{From: 5, To: 15, Decayed: true},
	}
	before := s.WithDefaults()
	before.Decay.PeakLR, before.Interpolate.Points = 0, 0
	checkpoints := []int{5, 10, 15}
	for _, adamw := range []bool{false, true} {
		r := s.For(adamw, checkpoints)
		if d := r.Decay; d == nil || !slices.Equal(d.At, checkpoints) || d.PeakLR != DefaultDecayPeakLR || d.Steps != 4 {
			t.Errorf("adamw %v: decay %+v", adamw, r.Decay)
		}
		if r.LRDecay == nil || !slices.Equal(r.LRDecay.At, checkpoints) {
			t.Errorf("adamw %v: lr_decay %+v", adamw, r.LRDecay)
		}
		if ip := r.Interpolate; ip == nil || ip.Points != DefaultInterpolationPoints || ip.Decayed != adamw {
			t.Errorf("adamw %v: interpolate %+v", adamw, r.Interpolate)
		}
		r.Decay.At[0] = -1 // the result owns its slices
	}
	if !reflect.DeepEqual(s, before) {
		t.Errorf("For changed the manifest's probes: %+v", s)
	}
	// a step list given is kept; a peak LR given is kept; linear spelled out is the
	// paper's shape, the zero value; sqrt is kept
	s.Decay.At, s.Decay.PeakLR, s.Decay.Shape = []int{10}, 3e-4, ShapeLinear
	if d := s.For(false, checkpoints).Decay; !slices.Equal(d.At, []int{10}) || d.PeakLR != 3e-4 || d.Shape != "" {
		t.Errorf("decay with at, peak_lr and shape linear: %+v", d)
	}
	s.Decay.Shape = ShapeSqrt
	if d := s.For(false, checkpoints).Decay; d.Shape != ShapeSqrt {
		t.Errorf("decay with shape sqrt: %+v", d)
	}
	if !(Set{}).For(true, checkpoints).Empty() {
		t.Errorf("no probes resolved to some")
	}
}

// Steps counts every training step the probes add: Steps per decay probe, Frac × the step
// (at least 1) per branch, To − From for the decayed interpolation.
func TestSteps(t *testing.T) {
	r := Set{
		Decay:       &Decay{Steps: 4},
		LRDecay:     &LRDecay{Frac: 0.25},
		Interpolate: &Interpolation{From: 5, To: 15, Decayed: true},
	}.For(true, []int{2, 10, 20})
	// decay 3 × 4; branches max(1, 0.5) + 2.5 + 5 → 1 + 2 + 5; interpolation 10
	if got, want := r.Steps(), int64(12+8+10); got != want {
		t.Errorf("Steps = %d, want %d", got, want)
	}
	if got := (Set{Interpolate: &Interpolation{From: 5, To: 15}}).Steps(); got != 0 {
		t.Errorf("a plain interpolation costs %d steps, want 0", got)
	}
}
