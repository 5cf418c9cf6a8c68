package sweeps

import (
	"math"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/search"
)

// distBase is searchBase with a distribution of each of W&B's shapes: a quantized
// log-uniform lr and batch, a normal weight decay, a log-normal C and a beta β2.
var distBase = strings.NewReplacer(
	"lr: {distribution: log_uniform, min: 1e-4, max: 1e-2}", "lr: {distribution: log_uniform, min: 1e-4, max: 1e-2, q: 1e-4}\n    weight_decay: {distribution: normal, mu: 0.1, sigma: 0.01}",
	"c: [vanilla, 50, 200]", "c: {distribution: log_normal, mu: 4, sigma: 0.5}",
	"beta2: 0.99", "beta2: {distribution: beta, a: 20, b: 2}",
	"batch_tokens: 32", "batch_tokens: {distribution: log_uniform, min: 32, max: 256, q: 32}",
).Replace(searchBase)

// TestManifestDistributions: a manifest's normal, log_normal, beta and quantized
// distributions parse, plan as they are written, and every configuration a search
// samples from them is a valid run, with a whole batch on its lattice.
func TestManifestDistributions(t *testing.T) {
	m, err := Parse([]byte(distBase))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := m.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lr: log_uniform[0.0001, 0.01] quantized by 0.0001", "weight_decay: normal(mu 0.1, sigma 0.01)", "c: log_normal(mu 4, sigma 0.5)", "beta2: beta(a 20, b 2)", "batch_tokens: log_uniform[32, 256] quantized by 32"} {
		if !strings.Contains(strings.Join(plan.Space[0], "; "), want) {
			t.Errorf("plan's space %v has no %q", plan.Space[0], want)
		}
	}
	var space search.Space
	for _, d := range m.Dims(0) {
		space = append(space, d.Param.SearchParam(d.Name))
	}
	s, err := search.NewSampler(search.MethodRandom, space, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		p, err := s.Suggest(i, nil)
		if err != nil {
			t.Fatal(err)
		}
		trials, err := m.PointTrials(0, p)
		if err != nil {
			t.Fatalf("configuration %v: %v", p, err)
		}
		pt := trials[0].Points[0]
		if pt.BatchTokens%32 != 0 || pt.BatchTokens < 32 || pt.BatchTokens > 256 {
			t.Fatalf("batch_tokens %d is not a multiple of 32 in [32, 256]", pt.BatchTokens)
		}
		if k := math.Round(pt.LR / 1e-4); math.Abs(pt.LR-k*1e-4) > 1e-18 {
			t.Fatalf("lr %v is not a multiple of 1e-4", pt.LR)
		}
	}
}

// TestManifestDistributionErrors: a distribution's error names the field, the value, the
// reason and the line.
func TestManifestDistributionErrors(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"mu: 0.1, sigma: 0.01", "mu: 0.1, sigma: 0", "line 13: optimizers[0].weight_decay = normal(mu 0.1, sigma 0): sigma 0 is not a finite number above 0"},
		{"mu: 0.1, sigma: 0.01", "mu: 0.01, sigma: 0.01", "optimizers[0].weight_decay[0] = -0.07"},
		{"mu: 0.1, sigma: 0.01", "min: 0, max: 1, sigma: 0.01", "line 13: optimizers[0].weight_decay = normal(mu 0, sigma 0.01): min and max are not used by kind normal"},
		{"a: 20, b: 2", "a: 20, b: -2", "line 15: optimizers[0].beta2 = beta(a 20, b -2): a 20 and b -2 are not both finite and above 0"},
		{"max: 256, q: 32", "max: 256, q: 0.5", "batch_tokens = log_uniform[32, 256] quantized by 0.5: this parameter takes whole numbers: use int_uniform, a whole q, or a list"},
		{"max: 256, q: 32", "max: 256, q: -1", "batch_tokens = log_uniform[32, 256] quantized by -1: q -1 is not a finite number ≥ 0"},
		{"{distribution: log_uniform, min: 32, max: 256, q: 32}", "{distribution: int_uniform, min: 32, max: 256, q: 32}", "q 32 quantizes a continuous kind, not int_uniform"},
		{"mu: 4, sigma: 0.5", "mu: 4, sigma: 0.5, alpha: 1", "line 16: optimizers[0].c.alpha = alpha: a distribution has the fields distribution, min, max, mu, sigma, a, b, q and values"},
		{"{distribution: log_uniform, min: 32, max: 256, q: 32}", "{distribution: log_normal, mu: 0, sigma: 6, q: 32}", "line 5: batch_tokens = log_normal(mu 0, sigma 6) quantized by 32: its values reach [0, 2.4"},
		{"method: tpe", "method: grid", "optimizers[0].lr = log_uniform: a distribution is sampled by a search"},
	} {
		src := strings.Replace(distBase, tc.old, tc.new, 1)
		if src == distBase {
			t.Fatalf("%q is not in the manifest", tc.old)
		}
		_, err := Parse([]byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: error %v, want one containing %q", tc.old, tc.new, err, tc.want)
		}
	}
}
