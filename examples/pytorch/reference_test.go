// Package pytorch_test checks the PyTorch optimizers of sfadamw_torch.py against sfadamw.
package pytorch_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
)

// python is Debian's interpreter, where python3-torch installs torch (.ci/run installs it).
const python = "/usr/bin/python3"

// tol bounds |a−b| / max(1, |a|, |b|): absolute for values up to 1, relative above.
const tol = 1e-12

const steps = 100

// shapes are the parameter tensors on the PyTorch side; sfadamw sees them as one flat
// buffer, so clipping is by the global norm over both.
var shapes = [][]int{{5, 4}, {17}}

// refCase is one optimizer setting: SF-AdamW or AdamW. replay.py reads the configurations
// as encoding/json writes them, with sfadamw's field names.
type refCase struct {
	Name  string
	SF    *sfadamw.Config      `json:",omitempty"`
	AdamW *sfadamw.AdamWConfig `json:",omitempty"`
}

// record is one step's learning rate, c_{t+1} and iterates: Y, Z, X for SF-AdamW, W for AdamW.
type record struct {
	LR float64   `json:"lr"`
	C  float64   `json:"c"`
	Y  []float64 `json:"y"`
	Z  []float64 `json:"z"`
	X  []float64 `json:"x"`
	W  []float64 `json:"w"`
}

func sfCase(name string, c float64, mod func(*sfadamw.Config)) refCase {
	cfg := sfadamw.Config{LR: 0.05, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, WarmupSteps: 10, C: c}
	if mod != nil {
		mod(&cfg)
	}
	return refCase{Name: name, SF: &cfg}
}

func adamWCase(name string, s sfadamw.Schedule) refCase {
	s.Peak, s.WarmupSteps, s.TotalSteps = 0.01, 10, steps
	return refCase{Name: name, AdamW: &sfadamw.AdamWConfig{Schedule: s, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradClip: 1}}
}

// cases cover vanilla and refined SF-AdamW (C small, canonical, large enough that
// c_{t+1} = 1), with and without clipping, β1 = 0 and a stored x, and AdamW with every
// schedule.
var cases = []refCase{
	sfCase("sf vanilla", 0, nil),
	sfCase("sf C=2", 2, nil),
	sfCase("sf C=10 (1/(1-beta1))", 1/(1-0.9), nil),
	sfCase("sf C=50", 50, nil),
	sfCase("sf C=200 beta1=0.95 no warmup clip=1", 200, func(c *sfadamw.Config) { c.Beta1, c.WarmupSteps, c.GradClip = 0.95, 0, 1 }),
	sfCase("sf vanilla clip=2 keep_x", 0, func(c *sfadamw.Config) { c.GradClip, c.KeepX = 2, true }),
	sfCase("sf C=5 keep_x", 5, func(c *sfadamw.Config) { c.KeepX = true }),
	sfCase("sf beta1=0 C=50", 50, func(c *sfadamw.Config) { c.Beta1 = 0 }),
	adamWCase("adamw constant", sfadamw.Schedule{Kind: sfadamw.Constant}),
	adamWCase("adamw cosine", sfadamw.Schedule{Kind: sfadamw.Cosine, FinalFrac: 0.1}),
	adamWCase("adamw linear", sfadamw.Schedule{Kind: sfadamw.Linear}),
	adamWCase("adamw wsd linear", sfadamw.Schedule{Kind: sfadamw.WSD, DecayStart: 60, DecaySteps: 30}),
	adamWCase("adamw wsd sqrt", sfadamw.Schedule{Kind: sfadamw.WSD, DecayStart: 50, DecaySteps: 50, DecayShape: "sqrt"}),
}

// gradients is a fixed sequence whose global norm swings between about 0.2 and 4.6, so that
// clipping is active on some steps and not on others.
func gradients(n int) [][]float64 {
	gs := make([][]float64, steps)
	for t := range gs {
		a := 0.02 + 0.5*(1+math.Sin(0.3*float64(t)))
		g := make([]float64, n)
		for i := range g {
			fi, ft := float64(i), float64(t)
			g[i] = a*math.Sin(0.37*ft*(fi+1)+fi) + 0.05*math.Cos(1.7*fi-0.2*ft)
		}
		gs[t] = g
	}
	return gs
}

func initial(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 2 * math.Sin(float64(3*i+1))
	}
	return w
}

// runGo replays the gradients through sfadamw in float64.
func runGo(t *testing.T, c refCase, init []float64, grads [][]float64) []record {
	t.Helper()
	w := slices.Clone(init)
	var step func(g []float64) record
	if c.SF != nil {
		opt, err := sfadamw.New(*c.SF, w)
		if err != nil {
			t.Fatal(err)
		}
		step = func(g []float64) record {
			opt.Step(g)
			x := make([]float64, len(w))
			opt.X(x)
			return record{LR: opt.LastLR(), C: opt.LastC(), Y: slices.Clone(w), Z: slices.Clone(opt.Z()), X: x}
		}
	} else {
		opt, err := sfadamw.NewAdamW(*c.AdamW, w)
		if err != nil {
			t.Fatal(err)
		}
		step = func(g []float64) record {
			opt.Step(g)
			return record{LR: opt.LastLR(), W: slices.Clone(w)}
		}
	}
	out := make([]record, len(grads))
	for i, g := range grads {
		out[i] = step(slices.Clone(g))
	}
	return out
}

// runPython replays the same gradients through replay.py in float64.
func runPython(t *testing.T, init []float64, grads [][]float64) map[string][]record {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	b, err := json.Marshal(map[string]any{"shapes": shapes, "init": init, "grads": grads, "cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-B", "replay.py", in, out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("replay.py: %v\n%s", err, msg)
	}
	b, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string][]record
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestMatchesSfadamw replays one gradient sequence through sfadamw and through the PyTorch
// optimizers, in float64, and compares the learning rate, c_{t+1} and every iterate at every
// step. Needs Debian's python3-torch; skips, saying so, without it.
func TestMatchesSfadamw(t *testing.T) {
	if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
		t.Skipf("%s cannot import torch (apt-get install python3-torch): %v", python, err)
	}
	n := 0
	for _, s := range shapes {
		size := 1
		for _, d := range s {
			size *= d
		}
		n += size
	}
	init, grads := initial(n), gradients(n)
	py := runPython(t, init, grads)
	for _, c := range cases {
		want, got := runGo(t, c, init, grads), py[c.Name]
		if len(got) != len(want) {
			t.Errorf("%s: PyTorch took %d steps, want %d", c.Name, len(got), len(want))
			continue
		}
		var worst float64
		for i := range want {
			d, err := compare(want[i], got[i])
			if err != nil {
				t.Errorf("%s, step %d: %v", c.Name, i+1, err)
				break
			}
			worst = max(worst, d)
		}
		t.Logf("%-40s max difference %.2g", c.Name, worst)
	}
}

// compare returns the largest difference between two records, or an error naming the first
// quantity beyond tol.
func compare(want, got record) (float64, error) {
	pairs := []struct {
		name string
		a, b []float64
	}{{"lr", []float64{want.LR}, []float64{got.LR}}, {"c", []float64{want.C}, []float64{got.C}},
		{"y", want.Y, got.Y}, {"z", want.Z, got.Z}, {"x", want.X, got.X}, {"w", want.W, got.W}}
	var worst float64
	for _, p := range pairs {
		if len(p.a) != len(p.b) {
			return 0, fmt.Errorf("%s has %d values, want %d", p.name, len(p.b), len(p.a))
		}
		for i := range p.a {
			d := math.Abs(p.a[i]-p.b[i]) / max(1, math.Abs(p.a[i]), math.Abs(p.b[i]))
			if !(d <= tol) {
				return 0, fmt.Errorf("%s[%d] = %.17g, sfadamw %.17g: difference %.2g > %g", p.name, i, p.b[i], p.a[i], d, tol)
			}
			worst = max(worst, d)
		}
	}
	return worst, nil
}
