package cuda

import (
	"bytes"
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The flash kernels' own source (flash.cu), run on the CPU by flashemu/emu.cc with the Go
// mirror's model of an mma step and of exp2 and log2, from qkv as the projection writes it,
// gives the mirror's bits: every index,
// mask, tile range, fragment and rounding point of the kernels is the mirror's. In both
// block orders, with T not a multiple of the tile. Needs g++ (C++20); skipped without it.
func TestFlashEmulated(t *testing.T) {
	bin := buildEmulator(t, "flashemu/emu.cc")
	for _, tc := range []struct{ b, nh, nt int }{{1, 2, 37}, {2, 1, 64}, {1, 1, 130}} {
		bh := tc.b * tc.nh
		q, k, v, do := flashInputs(bh, tc.nt, uint64(tc.nt)+100)
		a := newFlashArgs(bh, tc.nt, q, k, v)
		runFlash(a, do, inOrder)
		qkv, dy := qkvRows(q, k, v, tc.b, tc.nt, tc.nh), headsToRows(do, tc.b, tc.nt, tc.nh)
		cos, sin := randn(tc.nt*flashD/2, 5), randn(tc.nt*flashD/2, 6)
		var want map[string][]float32
		for _, reverse := range []bool{false, true} {
			got := emulateFlash(t, bin, a, qkv, dy, cos, sin, tc.b, tc.nh, reverse)
			if want == nil {
				want = got
				if i := firstDiff(toBF16(got["y"]), toBF16Bits(got["y16"])); i >= 0 {
					t.Errorf("T=%d: y16[%d] is not y rounded", tc.nt, i)
				}
				if i := firstDiff(toBF16Bits(got["qkv16"]), slices.Concat(a.q, a.k, a.v)); i >= 0 {
					t.Errorf("T=%d: flash_permute's element %d is not q, k, v rounded into the heads' layout", tc.nt, i)
				}
				// RoPE inside the permutation: bitwise rope, then flash_permute
				if i := firstDiff(toBF16Bits(got["rope16"]), ropeHeads(qkv, cos, sin, tc.b, tc.nt, tc.nh)); i >= 0 {
					t.Errorf("T=%d: flash_permute_rope's element %d is not rope then flash_permute", tc.nt, i)
				}
				// the rope path's backward kernels: bitwise the default ones, then the gather
				// with the inverse rotation and the rounding (sin standing for −sin)
				_, gathered := gatherRopeFused(got["dq"], got["dk"], got["dv"], cos, sin, tc.b, tc.nt, tc.nh, flashD)
				if i := firstDiff(toBF16Bits(got["dqkv16"]), gathered); i >= 0 {
					t.Errorf("T=%d: dqkv16[%d] of the rope16 backward kernels is %#04x, the gather's %#04x", tc.nt, i, toBF16Bits(got["dqkv16"])[i], gathered[i])
				}
				// the act16 path with rope: flash_permute_rope_bf16 on qkv in bfloat16,
				// bitwise flash_permute_rope on it widened, and the kernels that read q, k,
				// v from qkv with RoPE on the way (rows), bitwise that permutation then the
				// kernels on the heads' layout
				for _, p := range [][2]string{{"permB16", "permW16"}, {"yB", "yA"}, {"yB16", "yA16"}, {"lseB", "lseA"}, {"dqkvB16", "dqkvA16"}} {
					if i := firstDiff(bits32(got[p[0]]), bits32(got[p[1]])); i >= 0 {
						t.Errorf("T=%d: %s[%d] = %v, %s's %v", tc.nt, p[0], i, got[p[0]][i], p[1], got[p[1]][i])
					}
				}
				// the act16 path's O: y16 the same without the float32 y, and D from it
				// bitwise the float32 kernel's on it widened
				for _, p := range [][2]string{{"yOnly16", "y16"}, {"preO16", "preOW16"}, {"preOvec", "preOWvec"}} {
					if i := firstDiff(bits32(got[p[0]]), bits32(got[p[1]])); i >= 0 {
						t.Errorf("T=%d: %s[%d] = %v, %s's %v", tc.nt, p[0], i, got[p[0]][i], p[1], got[p[1]][i])
					}
				}
				// flash_backward_pre on dy rounded to bfloat16 and widened: the kernel on dy
				// itself, since it rounds dy first (so the act16 path's bfloat16 dy changes
				// only the product's rounding)
				if i := firstDiff(bits32(got["preWvec"]), bits32(got["dvec"])); i >= 0 {
					t.Errorf("T=%d: D[%d] = %v on the rounded dy, %v on dy", tc.nt, i, got["preWvec"][i], got["dvec"][i])
				}
			} else {
				for name := range want {
					if i := firstDiff(bits32(got[name]), bits32(want[name])); i >= 0 {
						t.Errorf("T=%d: %s[%d] = %v with the blocks reversed, %v in order", tc.nt, name, i, got[name][i], want[name][i])
					}
				}
			}
		}
		for _, c := range []struct {
			name   string
			got    []float32
			mirror []float32
		}{
			{"O", rowsToHeads(want["y"], tc.b, tc.nt, tc.nh), a.o}, {"lse", want["lse"], a.lse}, {"D", want["dvec"], a.dvec},
			{"dQ", want["dq"], a.dq}, {"dK", want["dk"], a.dk}, {"dV", want["dv"], a.dv},
		} {
			if i := firstDiff(bits32(c.got), bits32(c.mirror)); i >= 0 {
				t.Errorf("B=%d H=%d T=%d: %s[%d] = %v, the mirror's %v (relative error over the tensor %.2g)",
					tc.b, tc.nh, tc.nt, c.name, i, c.got[i], c.mirror[i], maxRelErr(c.got, f64(c.mirror)))
			}
		}
	}
}

// buildEmulator compiles one of flashemu's emulators into the test's temporary folder, or
// skips the test where there is no g++ or in -short mode (flash.cu's takes about 20 s).
func buildEmulator(t *testing.T, src string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs an emulator")
	}
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ to build the emulator")
	}
	bin := filepath.Join(t.TempDir(), "emu")
	build := exec.Command(cxx, "-std=c++20", "-O2", "-pthread", "-fno-strict-aliasing", "-Wall", "-Wno-unknown-pragmas", "-Werror", "-o", bin, src)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", src, err, out)
	}
	return bin
}

// runEmulator runs an emulator with the little-endian bytes of in on its standard input
// and returns its standard output.
func runEmulator(t *testing.T, bin string, in ...any) *bytes.Buffer {
	t.Helper()
	var stdin bytes.Buffer
	for _, x := range in {
		_ = binary.Write(&stdin, binary.LittleEndian, x) // a bytes.Buffer takes every write
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("emulator: %v\n%s", err, errb.String())
	}
	return &out
}

// flag is an emulator's int32 for b.
func flag(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// emulateFlash runs the emulator on qkv (B,T,3C) and dy (B,T,C) with a's shape and scale,
// and RoPE's tables cos and sin (T,32);
// the bfloat16 outputs come back widened to float32 (toBF16Bits undoes it).
func emulateFlash(t *testing.T, bin string, a *flashArgs, qkv, dy, cos, sin []float32, b, nh int, reverse bool) map[string][]float32 {
	t.Helper()
	scale, _ := flashScale()
	out := runEmulator(t, bin, []int32{int32(b), int32(nh), int32(a.t), flag(reverse)}, []float32{a.scaleLog2, scale}, qkv, dy, cos, sin)
	n, rows := len(a.q), a.bh*a.t
	res := map[string][]float32{}
	for _, f := range []struct {
		name string
		n    int
	}{{"qkv16", 3 * n}, {"y", n}, {"y16", n}, {"lse", rows}, {"dvec", rows}, {"dq", n}, {"dk", n}, {"dv", n},
		{"rope16", 3 * n}, {"preWvec", rows},
		{"dqkv16", 3 * n}, {"yOnly16", n}, {"preO16", n}, {"preOvec", rows}, {"preOW16", n}, {"preOWvec", rows},
		{"yA", n}, {"yA16", n}, {"lseA", rows}, {"dqkvA16", 3 * n}, {"yB", n}, {"yB16", n}, {"lseB", rows}, {"dqkvB16", 3 * n},
		{"permW16", 3 * n}, {"permB16", 3 * n}} {
		if strings.HasSuffix(f.name, "16") {
			h := make([]uint16, f.n)
			if err := binary.Read(out, binary.LittleEndian, h); err != nil {
				t.Fatalf("emulator output %s: %v", f.name, err)
			}
			res[f.name] = make([]float32, f.n)
			for i, v := range h {
				res[f.name][i] = bf(v)
			}
			continue
		}
		res[f.name] = make([]float32, f.n)
		if err := binary.Read(out, binary.LittleEndian, res[f.name]); err != nil {
			t.Fatalf("emulator output %s: %v", f.name, err)
		}
	}
	if out.Len() != 0 {
		t.Fatalf("emulator wrote %d bytes more than expected", out.Len())
	}
	return res
}

// ropeHeads is the rope kernel on qkv (B,T,3C), rotating each head of q and k by cos and
// sin (T,32), then flash_permute: q, k, v rounded to bfloat16 into the heads' layout, one
// after another. The conversions keep Go from fusing a multiply and an add, as
// -fmad=false keeps nvcc.
func ropeHeads(qkv, cos, sin []float32, b, nt, nh int) []uint16 {
	c, h, n := nh*flashD, flashD/2, b*nh*nt*flashD
	out := make([]uint16, 3*n)
	for bb := range b {
		for t := range nt {
			for part := range 3 {
				for hh := range nh {
					x := qkv[(bb*nt+t)*3*c+part*c+hh*flashD:]
					o := out[part*n+((bb*nh+hh)*nt+t)*flashD:]
					for i := range h {
						a, bv := x[i], x[i+h]
						if part < 2 {
							co, si := cos[t*h+i], sin[t*h+i]
							a, bv = float32(a*co)-float32(bv*si), float32(a*si)+float32(bv*co)
						}
						o[i], o[i+h] = roundBF16(a), roundBF16(bv)
					}
				}
			}
		}
	}
	return out
}

func toBF16Bits(x []float32) []uint16 {
	h := make([]uint16, len(x))
	for i, v := range x {
		h[i] = uint16(bits32([]float32{v})[0] >> 16)
	}
	return h
}
