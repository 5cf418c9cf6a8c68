// RMSNorm's backward pass in one kernel (SFSWEEP_CUDA_FAST=norm), included by kernels.cu
// so that it is part of the one PTX. rmsnorm_backward_fused does in one pass what
// rmsnorm_backward_dx and rmsnorm_backward_dw_part do in two, bitwise: a block per chunk
// of NORM_ROWS rows, whose warps first take each row's mean(dout·w·x̂) as
// rmsnorm_backward_dx does (a warp per row, its lanes striding over the row, warpSum),
// then whose threads walk the columns, each column down the chunk's rows in order,
// updating dx and summing dout·x̂ as rmsnorm_backward_dw_part does. dout and x are read
// from memory once and from cache the second time; the partial sums are those of the old
// kernel, so sum_rows_add adds them up to the same bits.

// NORM_ROWS is the rows of a partial sum of a norm-weight gradient, the Go side's
// normRows (a test reads it here): the chunks fix the order of the sum.
#define NORM_ROWS 32

// dout is float32, or bfloat16 on the act16 path, read through widen (crossentropy.cu):
// the same values, so the same bits as on dout widened.
template <bool copy16, typename D>
__device__ __forceinline__ void rmsnormBackwardFused(float *dx, __nv_bfloat16 *dx16, float *part, const D *dout, const float *x, const float *w, const float *rstd, int n, int c) {
    __shared__ float dots[NORM_ROWS];
    int chunk = blockIdx.x, r0 = chunk * NORM_ROWS, rows = min(NORM_ROWS, n - r0);
    int lane = threadIdx.x % WARP, nw = blockDim.x / WARP;
    for (int k = threadIdx.x / WARP; k < rows; k += nw) {
        long r = r0 + k;
        const D *d = dout + r * c;
        const float *xr = x + r * c;
        float rs = rstd[r];
        float dot = 0.0f;
        for (int i = lane; i < c; i += WARP) dot += widen(d[i]) * w[i] * (xr[i] * rs);
        dot = warpSum(dot) / c;
        if (lane == 0) dots[k] = dot;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < c; j += blockDim.x) {
        float wj = w[j], s = 0.0f;
        // unrolled, so that the loads of several rows are in flight at once
#pragma unroll 4
        for (int k = 0; k < rows; k++) {
            long i = (long)(r0 + k) * c + j;
            float d = widen(dout[i]), xv = x[i], rs = rstd[r0 + k];
            float y = dx[i] + rs * (d * wj - xv * rs * dots[k]);
            dx[i] = y;
            if (copy16) dx16[i] = __float2bfloat16_rn(y);
            s += d * (xv * rs);
        }
        part[(long)chunk * c + j] = s;
    }
}

extern "C" {

// rmsnorm_backward_fused adds the input gradient to dx (N,C), as rmsnorm_backward_dx does,
// and writes the chunks' sums of dout·x̂ into part (chunks,C), as rmsnorm_backward_dw_part
// does; a block per chunk of NORM_ROWS rows, of whole warps (any number up to 1024).
__global__ void __launch_bounds__(1024) rmsnorm_backward_fused(float *dx, float *part, const float *dout, const float *x, const float *w, const float *rstd, int n, int c) {
    rmsnormBackwardFused<false>(dx, nullptr, part, dout, x, w, rstd, n, c);
}

// rmsnorm_backward_fused_bf16 is rmsnorm_backward_fused that also writes the new dx rounded
// to bfloat16 into dx16 (N,C), as rmsnorm_backward_dx_bf16 does.
__global__ void __launch_bounds__(1024) rmsnorm_backward_fused_bf16(float *dx, __nv_bfloat16 *dx16, float *part, const float *dout, const float *x, const float *w, const float *rstd, int n, int c) {
    rmsnormBackwardFused<true>(dx, dx16, part, dout, x, w, rstd, n, c);
}

// rmsnorm_backward_fused_from_bf16 is rmsnorm_backward_fused_bf16 on dout (N,C) in
// bfloat16, as the act16 path's products write the gradient at a norm's output: bitwise
// that kernel on the same values widened.
__global__ void __launch_bounds__(1024) rmsnorm_backward_fused_from_bf16(float *dx, __nv_bfloat16 *dx16, float *part, const __nv_bfloat16 *dout, const float *x, const float *w, const float *rstd, int n, int c) {
    rmsnormBackwardFused<true>(dx, dx16, part, dout, x, w, rstd, n, c);
}

} // extern "C"
