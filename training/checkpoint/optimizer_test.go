package checkpoint

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/sfadamw"
)

// TestExactFloat checks the JSON form of the optimizer scalars on every special value and
// on random bit patterns: the bits must come back, and finite values must be plain JSON
// numbers that any reader parses to the same float64.
func TestExactFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := slices.Clone(special64)
	for range 2000 {
		vals = append(vals, r.Uint64())
	}
	for _, bits := range vals {
		f := exactFloat(math.Float64frombits(bits))
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var back exactFloat
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%#016x: %s: %v", bits, b, err)
		}
		if got := math.Float64bits(float64(back)); got != bits {
			t.Fatalf("%#016x → %s → %#016x", bits, b, got)
		}
		v := float64(f)
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			var plain float64
			if err := json.Unmarshal(b, &plain); err != nil || math.Float64bits(plain) != bits {
				t.Fatalf("%#016x: %s is not a JSON number of the same value (%v, %v)", bits, b, plain, err)
			}
		}
	}
	for _, bad := range []string{`"0x1"`, `"0xzzzzzzzzzzzzzzzz"`, `"nan"`, `true`, `"0x7ff00000000000000"`} {
		var f exactFloat
		if err := json.Unmarshal([]byte(bad), &f); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}

func TestPutOptimizerRejects(t *testing.T) {
	c := sample(t, "micro-llama", 3)
	st := sfadamw.State[float32]{Algorithm: "sfadamw", Vectors: []sfadamw.Vector[float32]{{Name: "z", Data: []float32{1}}}}
	if err := c.PutOptimizer("opt", st); err == nil {
		t.Error("a second optimizer \"opt\" was accepted")
	}
	if err := c.PutOptimizer("a/b", st); err == nil {
		t.Error("optimizer name a/b was accepted")
	}
	c.Vectors = append(c.Vectors, Vector{Name: "o2.z"})
	if err := c.PutOptimizer("o2", st); err == nil || !strings.Contains(err.Error(), `"o2.z": already`) {
		t.Errorf("PutOptimizer over an existing vector: %v", err)
	}
	if _, err := c.Optimizer("missing"); err == nil || !strings.Contains(err.Error(), "[ewa-x opt]") {
		t.Errorf("Optimizer(missing) = %v, want an error listing the optimizers", err)
	}
}
