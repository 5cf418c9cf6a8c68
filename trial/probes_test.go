package trial

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/training"
)

func TestAccepts(t *testing.T) {
	want := training.DefaultDecayProbe(60, 20, "")
	stored := func(edit func(*training.DecayProbeResult)) *training.DecayProbeResult {
		r := &training.DecayProbeResult{DecayProbeConfig: training.DefaultDecayProbe(60, 20, training.IterX)}
		edit(r)
		return r
	}
	for _, c := range []struct {
		name string
		r    *training.DecayProbeResult
		want training.DecayProbeConfig
		ok   bool
	}{
		{"same settings, evaluated iterate asked", stored(func(*training.DecayProbeResult) {}), want, true},
		{"other length", stored(func(r *training.DecayProbeResult) { r.Steps = 10 }), want, false},
		{"other peak LR", stored(func(r *training.DecayProbeResult) { r.PeakLR = 1e-3 }), want, false},
		{"other shape", stored(func(r *training.DecayProbeResult) { r.Shape = probe.ShapeSqrt }), want, false},
		{"the sqrt shape asked and stored", stored(func(r *training.DecayProbeResult) { r.Shape = probe.ShapeSqrt }),
			training.DecayProbeFrom(60, probe.Decay{Steps: 20, Shape: probe.ShapeSqrt}), true},
		{"linear spelled out, stored before shapes", stored(func(*training.DecayProbeResult) {}),
			training.DecayProbeFrom(60, probe.Decay{Steps: 20, Shape: probe.ShapeLinear}), true},
		{"the EWA asked, resolved", stored(func(r *training.DecayProbeResult) { r.Iterate = training.IterEWAX }),
			training.DefaultDecayProbe(60, 20, training.IterEWA), true},
		{"y asked, x stored", stored(func(*training.DecayProbeResult) {}), training.DefaultDecayProbe(60, 20, training.IterY), false},
		{"another step asked: the key's", stored(func(*training.DecayProbeResult) {}), training.DefaultDecayProbe(80, 20, ""), true},
	} {
		if got := Accepts(c.r, c.want); got != c.ok {
			t.Errorf("%s: Accepts = %v, want %v", c.name, got, c.ok)
		}
	}
}

func TestDecayProbe(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	want := training.DefaultDecayProbe(60, 20, "")
	if r, err := ReadDecayProbe(ctx, s, "t1", want); r != nil || err != nil {
		t.Fatalf("no probe: %v, %v", r, err)
	}
	res := &training.DecayProbeResult{DecayProbeConfig: training.DefaultDecayProbe(60, 20, training.IterX), Before: 4, After: training.Loss(math.NaN()), DivergedAt: 3}
	if err := WriteDecayProbe(ctx, s, "t1", want, res); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if got := get(t, s, keys.DecayProbe("t1", 60, "")); got != string(b) {
		t.Errorf("decay probe = %s, want %s", got, b)
	}
	got, err := ReadDecayProbe(ctx, s, "t1", want)
	if err != nil || got == nil || got.Before != 4 || !math.IsNaN(float64(got.After)) || got.DivergedAt != 3 {
		t.Errorf("ReadDecayProbe = %+v, %v", got, err)
	}
	other := want
	other.Steps = 30
	if r, err := ReadDecayProbe(ctx, s, "t1", other); r != nil || err != nil {
		t.Errorf("a probe of other settings answered: %+v, %v", r, err)
	}
	put(t, s, keys.DecayProbe("t1", 80, ""), "{")
	if r, err := ReadDecayProbe(ctx, s, "t1", training.DefaultDecayProbe(80, 20, "")); r != nil || err != nil {
		t.Errorf("damaged probe: %+v, %v; want nil, nil", r, err)
	}
}

func TestLRDecayAndInterpolation(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	lr := &training.LRDecayResult{FromStep: 40, Steps: 8, StartLR: 1e-3, Before: 3, After: 2.5}
	if err := WriteLRDecay(ctx, s, "t1", 40, 0.2, lr); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(lr, "", "  ")
	if got := get(t, s, keys.LRDecay("t1", 40, 0.2)); got != string(b) {
		t.Errorf("LR-decay branch = %s, want %s", got, b)
	}
	if got, err := ReadLRDecay(ctx, s, "t1", 40, 0.2); err != nil || !reflect.DeepEqual(got, lr) {
		t.Errorf("ReadLRDecay = %+v, %v", got, err)
	}
	if got, err := ReadLRDecay(ctx, s, "t1", 40, 0.5); got != nil || err != nil {
		t.Errorf("another fraction answered: %+v, %v", got, err)
	}
	ip := probe.Interpolation{From: 20, To: 40, Points: 3, Decayed: true}
	res := &training.InterpolationResult{From: 20, To: 40, Decayed: true, Iterate: training.IterW, Points: []training.InterpolationPoint{{Alpha: 0, Loss: 3}, {Alpha: 0.5, Loss: 2}, {Alpha: 1, Loss: 4}}}
	if err := WriteInterpolation(ctx, s, "t1", ip, res); err != nil {
		t.Fatal(err)
	}
	b, _ = json.MarshalIndent(res, "", "  ")
	if got := get(t, s, keys.Interpolation("t1", 20, 40, 3, true)); got != string(b) {
		t.Errorf("interpolation = %s, want %s", got, b)
	}
	if got, err := ReadInterpolation(ctx, s, "t1", ip); err != nil || !reflect.DeepEqual(got, res) {
		t.Errorf("ReadInterpolation = %+v, %v", got, err)
	}
	plain := ip
	plain.Decayed = false
	if got, err := ReadInterpolation(ctx, s, "t1", plain); got != nil || err != nil {
		t.Errorf("the plain interpolation answered for the decayed one: %+v, %v", got, err)
	}
	l, err := List(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := l.Interpolation(ctx, s, "t1", ip); err != nil || !reflect.DeepEqual(got, res) {
		t.Errorf("Listing.Interpolation = %+v, %v", got, err)
	}
	if got, err := l.LRDecay(ctx, s, "t1", 40, 0.2); err != nil || !reflect.DeepEqual(got, lr) {
		t.Errorf("Listing.LRDecay = %+v, %v", got, err)
	}
	// an object written after the listing is not read through it
	if err := WriteInterpolation(ctx, s, "t1", plain, res); err != nil {
		t.Fatal(err)
	}
	if err := WriteLRDecay(ctx, s, "t1", 20, 0.2, lr); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Interpolation(ctx, s, "t1", plain); got != nil || err != nil {
		t.Errorf("unlisted interpolation read: %+v, %v", got, err)
	}
	if got, err := l.LRDecay(ctx, s, "t1", 20, 0.2); got != nil || err != nil {
		t.Errorf("unlisted LR-decay branch read: %+v, %v", got, err)
	}
}

func TestEveryStep(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	want := training.DefaultDecayProbe(0, 20, "")
	for _, step := range []int{100, 20, 60} {
		r := &training.DecayProbeResult{DecayProbeConfig: training.DefaultDecayProbe(step, 20, training.IterX), Before: float64(step)}
		if err := WriteDecayProbe(ctx, s, "t1", training.DefaultDecayProbe(step, 20, ""), r); err != nil {
			t.Fatal(err)
		}
	}
	put(t, s, keys.DecayProbe("t1", 40, ""), "{")                                                             // damaged: left out
	put(t, s, keys.DecayProbe("t1", 80, ""), `{"steps": 10, "peak_lr": 0.0001, "from_step": 80}`)             // other settings: left out
	put(t, s, keys.DecayProbe("t1", 90, training.IterY), `{"steps": 20, "peak_lr": 0.0001, "from_step": 90}`) // another iterate's key
	put(t, s, keys.DecayProbe("t10", 30, ""), `{"steps": 20, "peak_lr": 0.0001, "from_step": 30}`)            // another trial
	for _, step := range []int{30, 10} {
		if err := WriteLRDecay(ctx, s, "t1", step, 0.5, &training.LRDecayResult{FromStep: step}); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteLRDecay(ctx, s, "t1", 20, 0.25, &training.LRDecayResult{FromStep: 20}); err != nil {
		t.Fatal(err)
	}
	l, err := List(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	probes, err := l.DecayProbes(ctx, s, "t1", want)
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	for _, p := range probes {
		steps = append(steps, p.FromStep)
	}
	if !slices.Equal(steps, []int{20, 60, 100}) {
		t.Errorf("DecayProbes from steps %v, want [20 60 100]", steps)
	}
	branches, err := l.LRDecays(ctx, s, "t1", 0.5)
	if err != nil || len(branches) != 2 || branches[0].FromStep != 10 || branches[1].FromStep != 30 {
		t.Errorf("LRDecays = %+v, %v", branches, err)
	}
}

func TestMissingProbes(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	for _, step := range []int{20, 40} {
		put(t, s, keys.Checkpoint(keys.Checkpoints(keys.Trial("t1")), int64(step)), "w")
		put(t, s, keys.CheckpointSidecar(keys.Checkpoints(keys.Trial("t1")), int64(step)), "{}")
	}
	put(t, s, keys.Checkpoint(keys.Checkpoints(keys.Trial("t10")), 30), "w")
	put(t, s, keys.DecayProbe("t1", 20, ""), "{}")
	put(t, s, keys.LRDecay("t1", 20, 0.5), "{}")
	put(t, s, keys.Interpolation("t1", 20, 40, 5, false), "{}")
	l, err := List(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Checkpoints("t1"); !slices.Equal(got, []int{20, 40}) {
		t.Errorf("Checkpoints(t1) = %v, want [20 40]", got)
	}
	decay := &probe.Decay{Steps: 10, PeakLR: 1e-4}
	for _, c := range []struct {
		name string
		tp   probe.Set
		want []string
	}{
		{"none asked", probe.Set{}, nil},
		{"decay at a step probed", probe.Set{Decay: &probe.Decay{At: []int{20}, Steps: 10}}, nil},
		{"decay at every checkpoint", probe.Set{Decay: decay}, []string{keys.DecayProbe("t1", 40, "")}},
		{"decay of no steps", probe.Set{Decay: &probe.Decay{At: []int{60}}}, nil},
		{"another iterate", probe.Set{Decay: &probe.Decay{At: []int{20}, Steps: 10, Iterate: "ewa"}}, []string{keys.DecayProbe("t1", 20, "ewa")}},
		{"LR decay", probe.Set{LRDecay: &probe.LRDecay{At: []int{20, 40}, Frac: 0.5}}, []string{keys.LRDecay("t1", 40, 0.5)}},
		{"interpolation", probe.Set{Interpolate: &probe.Interpolation{From: 20, To: 40, Points: 5}}, nil},
		{"decayed interpolation", probe.Set{Interpolate: &probe.Interpolation{From: 20, To: 40, Points: 5, Decayed: true}},
			[]string{keys.Interpolation("t1", 20, 40, 5, true)}},
	} {
		if got := l.MissingProbes("t1", c.tp); !slices.Equal(got, c.want) {
			t.Errorf("%s: MissingProbes = %v, want %v", c.name, got, c.want)
		}
	}
}
