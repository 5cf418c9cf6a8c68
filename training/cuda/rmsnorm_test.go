package cuda

import (
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// A Go mirror of rmsnorm_backward_fused (rmsnorm.cu): a block per chunk of normRows rows,
// whose warps take each row's mean(dout·w·x̂) (a warp per row, 32 lanes striding over it,
// warpSum) and whose threads then walk the columns, each down the chunk's rows in order.
// It must give bitwise what the default path's two kernels give: rmsnorm_backward_dx's dx
// (and the round path's copy) and rmsnorm_backward_dw_part's partial sums, whose mirrors
// are rmsnormBackwardDxMirror and dwPartMirror. No transcendental is involved, so the
// GPU must give these bits too (TestNormKernels).

// dwPartMirror is rmsnorm_backward_dw_part: thread (chunk, j) sums dout·(x·rstd) over the
// chunk's rows of column j, in order.
func dwPartMirror(dout, x, rstd []float32, c int) []float32 {
	n := len(rstd)
	chunks := (n + normRows - 1) / normRows
	part := make([]float32, chunks*c)
	for chunk := range chunks {
		for j := range c {
			var s float32
			for r := chunk * normRows; r < min((chunk+1)*normRows, n); r++ {
				s += float32(dout[r*c+j] * float32(x[r*c+j]*rstd[r]))
			}
			part[chunk*c+j] = s
		}
	}
	return part
}

// rmsnormBackwardFusedMirror is rmsnorm_backward_fused_bf16 with blocks of nthreads
// threads, run in the order of chunks given: dx is updated in place; it returns dx's copy
// and the partial sums.
func rmsnormBackwardFusedMirror(dx, dout, x, w, rstd []float32, c, nthreads int, chunks []int) (dx16 []uint16, part []float32) {
	n := len(rstd)
	dx16, part = make([]uint16, n*c), make([]float32, len(chunks)*c)
	nw := nthreads / warp
	for _, chunk := range chunks {
		r0 := chunk * normRows
		rows := min(normRows, n-r0)
		var dots [normRows]float32
		for w0 := range nw {
			for k := w0; k < rows; k += nw {
				r := r0 + k
				lanes := make([]float32, warp)
				for l := range lanes {
					for i := l; i < c; i += warp {
						lanes[l] += float32(float32(dout[r*c+i]*w[i]) * float32(x[r*c+i]*rstd[r]))
					}
				}
				warpReduce(lanes, add)
				dots[k] = lanes[0] / float32(c)
			}
		}
		for t := range nthreads {
			for j := t; j < c; j += nthreads {
				wj, s := w[j], float32(0)
				for k := range rows {
					i := (r0+k)*c + j
					d, xv, rs := dout[i], x[i], rstd[r0+k]
					y := dx[i] + float32(rs*(float32(d*wj)-float32(float32(xv*rs)*dots[k])))
					dx[i], dx16[i] = y, roundBF16(y)
					s += float32(d * float32(xv*rs))
				}
				part[chunk*c+j] = s
			}
		}
	}
	return dx16, part
}

func TestRMSNormBackwardFusedMirror(t *testing.T) {
	for _, s := range []struct{ n, c int }{{1, 1}, {5, 12}, {31, 33}, {32, 64}, {33, 768}, {100, 1000}} {
		n, c := s.n, s.c
		x, w, dout, dx0 := randn(n*c, 1), randn(c, 2), randn(n*c, 3), randn(n*c, 4)
		for i := range x {
			x[i] *= 4
		}
		_, _, rstd := rmsnormMirror(x, w, c, 1e-5)
		// the default path
		dxOld := slices.Clone(dx0)
		dx16Old := rmsnormBackwardDxMirror(dxOld, dout, x, w, rstd, c)
		partOld := dwPartMirror(dout, x, rstd, c)
		// the fused kernel, its blocks in reverse order, in the engine's block and in
		// smaller ones
		chunks := (n + normRows - 1) / normRows
		order := make([]int, chunks)
		for i := range order {
			order[i] = chunks - 1 - i
		}
		for _, nthreads := range []int{normThreads(c), 256, 64} {
			dx := slices.Clone(dx0)
			dx16, part := rmsnormBackwardFusedMirror(dx, dout, x, w, rstd, c, nthreads, order)
			if i := firstDiff(bits32(dx), bits32(dxOld)); i >= 0 {
				t.Fatalf("%+v, %d threads: dx[%d] fused %v, default %v", s, nthreads, i, dx[i], dxOld[i])
			}
			if i := firstDiff(dx16, dx16Old); i >= 0 {
				t.Fatalf("%+v, %d threads: dx16[%d] fused %#04x, default %#04x", s, nthreads, i, dx16[i], dx16Old[i])
			}
			if i := firstDiff(bits32(part), bits32(partOld)); i >= 0 {
				t.Fatalf("%+v, %d threads: partial sum %d fused %v, default %v", s, nthreads, i, part[i], partOld[i])
			}
		}
		// the weight gradient sum_rows_add makes of the partial sums, against float64
		for j := range c {
			var got float32
			var ref, mag float64
			for k := range chunks {
				got += partOld[k*c+j]
			}
			for r := range n {
				v := float64(dout[r*c+j]) * float64(x[r*c+j]) * float64(rstd[r])
				ref += v
				mag += math.Abs(v)
			}
			if math.Abs(float64(got)-ref) > 1e-6*mag*float64(n) {
				t.Fatalf("%+v: dw[%d] = %v, float64 %v", s, j, got, ref)
			}
		}
	}
}

// The Go side's normRows is rmsnorm.cu's NORM_ROWS, which sizes the kernel's shared memory
// and fixes the chunks of the sum.
func TestNormRowsConstant(t *testing.T) {
	b, err := os.ReadFile("rmsnorm.cu")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define NORM_ROWS (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("rmsnorm.cu defines no NORM_ROWS")
	}
	if v, _ := strconv.Atoi(string(m[1])); v != normRows {
		t.Errorf("rmsnorm.cu: NORM_ROWS = %d, the Go side's normRows %d", v, normRows)
	}
}

// The fused backward pass's block is whole warps, a thread per column up to 1024, which
// __launch_bounds__(1024) in rmsnorm.cu allows.
func TestNormThreads(t *testing.T) {
	for _, tc := range []struct{ c, want int }{{1, 32}, {32, 32}, {33, 64}, {768, 768}, {1000, 1024}, {4096, 1024}} {
		if got := normThreads(tc.c); got != tc.want {
			t.Errorf("normThreads(%d) = %d, want %d", tc.c, got, tc.want)
		}
	}
	b, err := os.ReadFile("rmsnorm.cu")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rmsnorm_backward_fused", "rmsnorm_backward_fused_bf16"} {
		if !regexp.MustCompile(`__global__ void __launch_bounds__\(1024\) ` + k + `\(`).Match(b) {
			t.Errorf("rmsnorm.cu: %s is not bounded to blocks of 1024 threads", k)
		}
	}
}
