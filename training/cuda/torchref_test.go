package cuda

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The attention and cross-entropy kernels against PyTorch (bench/gpu/torch_ref.py): the
// tests write each case's inputs and outputs to a folder, and the script recomputes them
// in float64 with PyTorch's own operators, and with PyTorch's kernels where it has a GPU.
// So the kernels meet a second implementation that shares no code with the Go mirrors.

// torchRefScript is the checker, from the package's folder, where tests run.
var torchRefScript = filepath.Join("..", "..", "bench", "gpu", "torch_ref.py")

// needTorchRef returns the python that runs the checker: python3 on the PATH (a GPU
// machine's, with its PyTorch) or else Debian's (.ci/run installs python3-torch); or skips
// t, saying why.
func needTorchRef(t *testing.T) string {
	t.Helper()
	var errs []error
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		err := exec.Command(py, "-c", "import torch; torch.frombuffer").Run()
		if err == nil {
			return py
		}
		errs = append(errs, fmt.Errorf("%s: %w", py, err))
	}
	t.Skipf("no python3 imports torch 1.10 or later (apt-get install python3-torch): %v", errors.Join(errs...))
	return ""
}

// writeRefCase writes a case of kind into dir/name: case.json with meta and each
// tensor's stored type, and a raw little-endian file per tensor ([]float32, []float64,
// []int32, or []uint16 as bfloat16).
func writeRefCase(t *testing.T, dir, name, kind string, meta map[string]any, tensors map[string]any) {
	t.Helper()
	folder := filepath.Join(dir, name)
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for n, x := range tensors {
		switch x.(type) {
		case []float32:
			types[n] = "f32"
		case []float64:
			types[n] = "f64"
		case []int32:
			types[n] = "i32"
		case []uint16:
			types[n] = "bf16"
		default:
			t.Fatalf("%s: tensor %s of type %T", name, n, x)
		}
		var b bytes.Buffer
		if err := binary.Write(&b, binary.LittleEndian, x); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, n+".bin"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := map[string]any{"kind": kind, "name": name, "tensors": types}
	for k, v := range meta {
		m[k] = v
	}
	js, err := json.Marshal(m)
	if err == nil {
		err = os.WriteFile(filepath.Join(folder, "case.json"), js, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// writeAttentionCase writes causal attention over bh heads of t rows: q, k, v as the
// kernels read them (bfloat16), dO in float32 (the kernels round it), and the outputs,
// head-major (BH,T,D), lse in base 2.
func writeAttentionCase(t *testing.T, dir, name string, a *flashArgs, do []float32, out map[string][]float32) {
	writeRefCase(t, dir, name, "attention", map[string]any{"bh": a.bh, "t": a.t, "d": flashD},
		map[string]any{"q": a.q, "k": a.k, "v": a.v, "do": do,
			"o": out["O"], "lse": out["lse"], "dq": out["dQ"], "dk": out["dK"], "dv": out["dV"]})
}

// writeCECase writes a cross-entropy over the rows of logits ([]float32 or bfloat16
// []uint16) with the gradient of inv·Σ losses (float32 or bfloat16).
func writeCECase(t *testing.T, dir, name string, logits any, targets []int32, v int, losses []float64, grad any) {
	writeRefCase(t, dir, name, "crossentropy", map[string]any{"n": len(targets), "v": v, "inv": 1 / float64(len(targets))},
		map[string]any{"logits": logits, "targets": targets, "losses": losses, "grad": grad})
}

// runTorchRef runs the checker on dir: its output, and whether every case passed. A
// failure of the script itself (not of a case) fails t.
func runTorchRef(t *testing.T, py, dir string) (string, bool) {
	t.Helper()
	cmd := exec.Command(py, torchRefScript, dir)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), true
	case errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Contains(string(out), "== torch:"):
		return string(out), false
	}
	t.Fatalf("%s %s: %v\n%s", torchRefScript, dir, err, out)
	return "", false
}

// mirrorAttention is the flash mirror's outputs on a case, as the kernels' tests read
// them.
func mirrorAttention(a *flashArgs, do []float32) map[string][]float32 {
	runFlash(a, do, inOrder)
	return map[string][]float32{"O": a.o, "lse": a.lse, "dQ": a.dq, "dK": a.dk, "dV": a.dv}
}

// The Go mirrors of the flash and cross-entropy kernels pass PyTorch's checks (which the
// kernels meet on a GPU, in TestKernelsAgainstTorch), and the checks catch what they are
// for: a key row's gradient in another row's place, a gradient 2% off, a loss off in its
// fifth digit, one row's logit gradient 1% off.
func TestTorchReferenceOnMirrors(t *testing.T) {
	py := needTorchRef(t)
	good, bad := t.TempDir(), t.TempDir()
	for _, nt := range []int{1, 37, 64, 100} {
		a, do := flashCase(2, nt, uint64(nt))
		out := mirrorAttention(a, do)
		writeAttentionCase(t, good, fmt.Sprintf("mirror-T%d", nt), a, do, out)
		if nt == 37 {
			swapped := slices.Clone(out["dV"])
			copy(swapped[3*flashD:4*flashD], out["dV"][9*flashD:10*flashD])
			copy(swapped[9*flashD:10*flashD], out["dV"][3*flashD:4*flashD])
			scaled := slices.Clone(out["dQ"])
			for i := range scaled {
				scaled[i] *= 1.02
			}
			writeAttentionCase(t, bad, "swapped-dv", a, do, map[string][]float32{"O": out["O"], "lse": out["lse"], "dQ": scaled, "dK": out["dK"], "dV": swapped})
		}
	}
	for _, v := range []int{5, 513, 50304} {
		const n = 7
		logits, targets := ceCase(n, v, uint64(v))
		l, g32, _ := oldCE(logits, targets, v)
		writeCECase(t, good, fmt.Sprintf("mirror-default-V%d", v), logits, targets, v, l, g32)
		l, _, g16 := onlineCE(logits, targets, v)
		writeCECase(t, good, fmt.Sprintf("mirror-online-V%d", v), logits, targets, v, l, g16)
		z16 := toBF16(logits)
		l16, _, g := onlineCE(widened(z16), targets, v)
		writeCECase(t, good, fmt.Sprintf("mirror-logits16-V%d", v), z16, targets, v, l16, g)
		if v == 513 {
			off := slices.Clone(l16)
			off[4] += 1e-4 * max(1, off[4])
			bent := slices.Clone(g)
			for j := range v {
				bent[4*v+j] = roundBF16(bf(bent[4*v+j]) * 1.01)
			}
			writeCECase(t, bad, "bent", z16, targets, v, off, bent)
		}
	}
	out, ok := runTorchRef(t, py, good)
	t.Log(out)
	if !ok {
		t.Errorf("the mirrors fail PyTorch's checks")
	}
	out, ok = runTorchRef(t, py, bad)
	t.Log(out)
	if ok {
		t.Fatal("corrupted outputs pass PyTorch's checks")
	}
	for _, want := range []string{"FAIL attention swapped-dv (BH 2, T 37) dq:", "FAIL attention swapped-dv (BH 2, T 37) dv:",
		"ok   attention swapped-dv (BH 2, T 37) o:", "FAIL cross-entropy bent (N 7, V 513, logits bf16) loss:",
		"FAIL cross-entropy bent (N 7, V 513, logits bf16) grad:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the checks of corrupted outputs do not say %q", want)
		}
	}
}
