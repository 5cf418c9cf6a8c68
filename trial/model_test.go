package trial

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/checkpoint"
	"github.com/sfsweep/sfsweep/training/native"
)

// A finished run's model files, as a Recorder writes them, load as the trial page's loader
// loads them (torch_llama.from_files: the module and config model.json names, the weights
// by name, strictly) into the PyTorch LLaMA of bench/torch/torch_llama.py and give, in float64, the native
// engine's float64 loss on the same tokens to 1e-8 relative (PyTorch's RoPE tables are
// float32, hence not closer).
// Needs Debian's python3-torch and python3-numpy (.ci/run installs them).
func TestModelFilesPyTorch(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("%s cannot import torch and numpy (apt-get install python3-torch python3-numpy): %v", python, err)
	}
	ctx := context.Background()
	store, prefix := newStore(t), "runs/t"
	// a RoPE base and an ε of their own, which model.json's PyTorch config must carry
	cfg := tinyConfig(training.SFAdamW)
	cfg.ModelConfig.RopeTheta, cfg.ModelConfig.NormEps = 500000, 1e-6
	trainRecorded(t, cfg, store, prefix)
	dir := t.TempDir()
	files := map[string][]byte{}
	for _, name := range []string{"model.safetensors", "model.json"} {
		b, err := store.Get(ctx, prefix+"/"+name)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	ck, err := checkpoint.Decode(files["model.safetensors"])
	if err != nil {
		t.Fatal(err)
	}
	mc := ck.Model
	if mc.RopeTheta != 500000 || mc.NormEps != 1e-6 {
		t.Fatalf("model %+v: not the RoPE base and ε trained", mc)
	}
	// the native engine's loss in float64 on random tokens, which the script reads
	m, err := native.New[float64](mc, 2, mc.Context)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range ck.Params {
		m.Params()[i] = float64(v)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tok, tgt := make([]int32, 2*mc.Context), make([]int32, 2*mc.Context)
	var lines strings.Builder
	for i := range tok {
		tok[i], tgt[i] = int32(rng.IntN(mc.Vocab)), int32(rng.IntN(mc.Vocab))
		fmt.Fprintln(&lines, tok[i], tgt[i])
	}
	tokens := filepath.Join(dir, "tokens.txt")
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := m.Forward(tok, tgt)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "model_loss.py", filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "model.json"), tokens)
	cmd.Dir = filepath.Join("..", "bench", "torch")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("model_loss.py: %v\n%s", err, out)
	}
	got, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || math.Abs(got-want) > 1e-8*want {
		t.Errorf("PyTorch loss %v (%v), native float64 loss %v", got, err, want)
	}
	t.Logf("PyTorch %.17g, native %.17g: relative %.2g", got, want, math.Abs(got-want)/want)
}
