// Kernels of the CUDA backend, in the style of llm.c's train_gpt2_fp32.cu: float32
// throughout, one kernel per op of training/native/ops.go, with the same shapes and the same
// semantics. GEMMs (the linear layers and the two products of attention) run on cuBLAS; the
// kernels here are everything else.
//
// Compiled to PTX and embedded in the Go package (kernels.ptx; go:generate in device.go):
//
//	nvcc -ptx -arch=sm_80 -O3 -fmad=false -o kernels.ptx kernels.cu
//
// -fmad=false keeps every multiply and add separately rounded, as the Go reference kernels
// of sfadamw specify, so the optimizer kernels give bitwise the results of sfadamw on the
// CPU. No kernel uses atomics: every reduction has a fixed order, so results are
// reproducible run to run.
//
// Shapes: B batch, T sequence length, C model width, H heads, D = C/H head size, F MLP
// hidden width, V vocabulary, N = B·T rows.

#include <stdint.h>
#include <cuda_bf16.h>

#define WARP 32

// widen (bfloat16 to float32, exactly), the cross-entropy's gradient and its online kernels
// (crossentropy.cu).
#include "crossentropy.cu"

__device__ __forceinline__ float warpSum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warpMax(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// blockSum and blockMax reduce over a block of blockDim.x threads (a multiple of 32, at
// most 1024); every thread gets the result. sh is scratch of 32 floats.
__device__ float blockSum(float v, float *sh) {
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;
    v = warpSum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : 0.0f;
    return warpSum(v);
}

__device__ float blockMax(float v, float *sh) {
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;
    v = warpMax(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : -INFINITY;
    return warpMax(v);
}

// The bodies of the producers of a product's operand, forward and backward, which write it
// in float32 and, where out16 is not null, its bfloat16 copy: the same float32 value rounded once to nearest
// even, bitwise what to_bf16 makes of it. A null out16 compiles to the float32-only kernel.

// keep32 false (the norm path) leaves out unwritten: the next product reads only out16.
template <bool keep32 = true>
__device__ __forceinline__ void rmsnormForward(float *out, __nv_bfloat16 *out16, float *rstd, const float *x, const float *w, int n, int c, float eps) {
    int r = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    int lane = threadIdx.x % WARP;
    if (r >= n) return;
    const float *xr = x + (long)r * c;
    float ss = 0.0f;
    for (int i = lane; i < c; i += WARP) ss += xr[i] * xr[i];
    ss = warpSum(ss);
    float rs = 1.0f / sqrtf(ss / c + eps);
    if (lane == 0) rstd[r] = rs;
    float *o = out + (long)r * c;
    for (int i = lane; i < c; i += WARP) {
        float y = xr[i] * rs * w[i];
        if (keep32) o[i] = y;
        if (out16) out16[(long)r * c + i] = __float2bfloat16_rn(y);
    }
}

// swigluForward on gu of type G (float32, or bfloat16 on the act16 path).
template <bool keep32 = true, typename G>
__device__ __forceinline__ void swigluForward(float *out, __nv_bfloat16 *out16, const G *gu, int n, int f) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)n * f) return;
    long r = idx / f;
    int i = idx % f;
    float g = widen(gu[r * 2 * f + i]), u = widen(gu[r * 2 * f + f + i]);
    float s = 1.0f / (1.0f + expf(-g));
    float y = g * s * u;
    if (keep32) out[idx] = y;
    if (out16) out16[idx] = __float2bfloat16_rn(y);
}

__device__ __forceinline__ void rmsnormBackwardDx(float *dx, __nv_bfloat16 *dx16, const float *dout, const float *x, const float *w, const float *rstd, int n, int c) {
    int r = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    int lane = threadIdx.x % WARP;
    if (r >= n) return;
    const float *d = dout + (long)r * c, *xr = x + (long)r * c;
    float rs = rstd[r];
    float dot = 0.0f;
    for (int i = lane; i < c; i += WARP) dot += d[i] * w[i] * (xr[i] * rs);
    dot = warpSum(dot) / c;
    float *o = dx + (long)r * c;
    for (int i = lane; i < c; i += WARP) {
        float y = o[i] + rs * (d[i] * w[i] - xr[i] * rs * dot);
        o[i] = y;
        if (dx16) dx16[(long)r * c + i] = __float2bfloat16_rn(y);
    }
}

// swigluBackward on dout of type D and gu of type G (float32, or bfloat16 on the act16
// path).
template <bool keep32 = true, typename D, typename G>
__device__ __forceinline__ void swigluBackward(float *dgu, __nv_bfloat16 *dgu16, const D *dout, const G *gu, int n, int f) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)n * f) return;
    long r = idx / f;
    int i = idx % f;
    float g = widen(gu[r * 2 * f + i]), u = widen(gu[r * 2 * f + f + i]);
    float s = 1.0f / (1.0f + expf(-g));
    float d = widen(dout[idx]);
    float dg = d * u * s * (1.0f + g * (1.0f - s)), du = d * (g * s);
    if (keep32) {
        dgu[r * 2 * f + i] = dg;
        dgu[r * 2 * f + f + i] = du;
    }
    if (dgu16) {
        dgu16[r * 2 * f + i] = __float2bfloat16_rn(dg);
        dgu16[r * 2 * f + f + i] = __float2bfloat16_rn(du);
    }
}

__device__ __forceinline__ void softmaxCausal(float *att, __nv_bfloat16 *att16, int rows, int nt) {
    int r = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    int lane = threadIdx.x % WARP;
    if (r >= rows) return;
    int i = r % nt;
    float *p = att + (long)r * nt;
    float mx = -INFINITY;
    for (int j = lane; j <= i; j += WARP) mx = fmaxf(mx, p[j]);
    mx = warpMax(mx);
    float sum = 0.0f;
    for (int j = lane; j <= i; j += WARP) {
        float e = expf(p[j] - mx);
        p[j] = e;
        sum += e;
    }
    sum = warpSum(sum);
    float inv = 1.0f / sum;
    for (int j = lane; j < nt; j += WARP) {
        float y = j <= i ? p[j] * inv : 0.0f;
        p[j] = y;
        if (att16) att16[(long)r * nt + j] = __float2bfloat16_rn(y);
    }
}

__device__ __forceinline__ void softmaxCausalBackward(float *dp, __nv_bfloat16 *dp16, const float *p, int rows, int nt, float scale) {
    int r = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    int lane = threadIdx.x % WARP;
    if (r >= rows) return;
    int i = r % nt;
    float *g = dp + (long)r * nt;
    const float *pr = p + (long)r * nt;
    float dot = 0.0f;
    for (int j = lane; j <= i; j += WARP) dot += pr[j] * g[j];
    dot = warpSum(dot);
    for (int j = lane; j < nt; j += WARP) {
        float y = j <= i ? scale * pr[j] * (g[j] - dot) : 0.0f;
        g[j] = y;
        if (dp16) dp16[(long)r * nt + j] = __float2bfloat16_rn(y);
    }
}

// headToRow maps element idx of a head-major tensor (B,H,T,D) to the same element of a
// row-major one (B,T,·) whose rows are stride elements long and hold head hh at hh·D.
__device__ __forceinline__ long headToRow(long idx, int nt, int nh, int d, int stride) {
    int di = idx % d;
    int t = (idx / d) % nt;
    int hh = (idx / ((long)d * nt)) % nh;
    int bb = idx / ((long)d * nt * nh);
    return ((long)bb * nt + t) * stride + hh * d + di;
}

__device__ __forceinline__ void permuteQKV(float *q, float *k, float *v, __nv_bfloat16 *q16, __nv_bfloat16 *k16, __nv_bfloat16 *v16, const float *qkv, int b, int nt, int nh, int d) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)b * nh * nt * d) return;
    int c = nh * d;
    long src = headToRow(idx, nt, nh, d, 3 * c);
    float a = qkv[src], bk = qkv[src + c], bv = qkv[src + 2 * c];
    q[idx] = a;
    k[idx] = bk;
    v[idx] = bv;
    if (q16) {
        q16[idx] = __float2bfloat16_rn(a);
        k16[idx] = __float2bfloat16_rn(bk);
        v16[idx] = __float2bfloat16_rn(bv);
    }
}

__device__ __forceinline__ void unpermuteHeads(float *out, __nv_bfloat16 *out16, const float *in, int b, int nt, int nh, int d, int back) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)b * nh * nt * d) return;
    long y = headToRow(idx, nt, nh, d, nh * d);
    long o = back ? idx : y;
    float x = back ? in[y] : in[idx];
    out[o] = x;
    if (out16) out16[o] = __float2bfloat16_rn(x);
}

extern "C" {

// scale_add is the kernel of the recipe test: y[i] = a·x[i] + y[i].
__global__ void scale_add(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// encoder_forward gathers the token embeddings: out (N,C), tokens (N), emb (V,C).
__global__ void encoder_forward(float *out, const int *tokens, const float *emb, int n, int c) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)n * c) return;
    int r = i / c, j = i % c;
    out[i] = emb[(long)tokens[r] * c + j];
}

// encoder_backward adds dout into the embedding gradient: thread (j, bucket) handles column
// j of the rows whose token ≡ bucket (mod nb), in row order, so repeated tokens add up in a
// fixed order and no two threads touch the same element.
// demb (V,C), dout (N,C), tokens (N); grid covers c·nb threads.
__global__ void encoder_backward(float *demb, const float *dout, const int *tokens, int n, int c, int nb) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= c * nb) return;
    int j = i % c, bucket = i / c;
    for (int r = 0; r < n; r++) {
        int t = tokens[r];
        if (t % nb == bucket) demb[(long)t * c + j] += dout[(long)r * c + j];
    }
}

// rmsnorm_forward: out = x·rstd·w with rstd = 1/sqrt(mean(x²)+eps), one warp per row.
// out (N,C), rstd (N), x (N,C), w (C)
__global__ void rmsnorm_forward(float *out, float *rstd, const float *x, const float *w, int n, int c, float eps) {
    rmsnormForward(out, nullptr, rstd, x, w, n, c, eps);
}

// rmsnorm_forward_bf16 is rmsnorm_forward that also writes out rounded to bfloat16 into
// out16 (N,C), the operand of the next product (SFSWEEP_CUDA_FAST=round).
__global__ void rmsnorm_forward_bf16(float *out, __nv_bfloat16 *out16, float *rstd, const float *x, const float *w, int n, int c, float eps) {
    rmsnormForward(out, out16, rstd, x, w, n, c, eps);
}

// rmsnorm_forward_to_bf16 is rmsnorm_forward_bf16 without the float32 output (SFSWEEP_CUDA_FAST=norm): out16 (N,C)
// bfloat16 and rstd (N) from x (N,C) and w (C).
__global__ void rmsnorm_forward_to_bf16(__nv_bfloat16 *out16, float *rstd, const float *x, const float *w, int n, int c, float eps) {
    rmsnormForward<false>(nullptr, out16, rstd, x, w, n, c, eps);
}

// rmsnorm_backward_dx adds the gradient with respect to x to dx, one warp per row:
// with x̂ = x·rstd and dot = mean(dout·w·x̂), dx += rstd·(dout·w − x̂·dot).
// dx (N,C), dout (N,C), x (N,C), w (C), rstd (N)
__global__ void rmsnorm_backward_dx(float *dx, const float *dout, const float *x, const float *w, const float *rstd, int n, int c) {
    rmsnormBackwardDx(dx, nullptr, dout, x, w, rstd, n, c);
}

// rmsnorm_backward_dx_bf16 is rmsnorm_backward_dx that also writes the new dx rounded to
// bfloat16 into dx16 (N,C), the operand of the next two products (SFSWEEP_CUDA_FAST=round).
__global__ void rmsnorm_backward_dx_bf16(float *dx, __nv_bfloat16 *dx16, const float *dout, const float *x, const float *w, const float *rstd, int n, int c) {
    rmsnormBackwardDx(dx, dx16, dout, x, w, rstd, n, c);
}

// rmsnorm_backward_dw_part writes the sums over chunks of rows of dout·x̂ into part: thread
// (chunk, j) sums rows [chunk·rows, (chunk+1)·rows) of column j in order.
// part (chunks,C), dout (N,C), x (N,C), rstd (N)
__global__ void rmsnorm_backward_dw_part(float *part, const float *dout, const float *x, const float *rstd, int n, int c, int rows) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = blockIdx.y;
    if (j >= c) return;
    int r0 = chunk * rows, r1 = min(r0 + rows, n);
    float s = 0.0f;
    for (int r = r0; r < r1; r++) s += dout[(long)r * c + j] * (x[(long)r * c + j] * rstd[r]);
    part[(long)chunk * c + j] = s;
}

// sum_rows_add adds the column sums of part (rows,C) to dw (C), row by row in order.
__global__ void sum_rows_add(float *dw, const float *part, int rows, int c) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= c) return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) s += part[(long)r * c + j];
    dw[j] += s;
}

// rope rotates q and k of every row of qkv in place, in the rotate_half form: the pairs
// (x_i, x_{i+D/2}) of each head by the angle of the row's position t = r mod T and index i.
// sin is −sin for the backward pass (the inverse rotation).
// qkv (N,3C), cos, sin (T,D/2); one thread per (row, head of q or k, i).
__global__ void rope(float *qkv, const float *cos, const float *sin, int n, int nt, int c, int nh) {
    int d = c / nh, h = d / 2;
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long total = (long)n * 2 * nh * h;
    if (idx >= total) return;
    int i = idx % h;
    int head = (idx / h) % (2 * nh);
    int r = idx / ((long)h * 2 * nh);
    int t = r % nt;
    float *x = qkv + (long)r * 3 * c + head * d;
    float co = cos[t * h + i], si = sin[t * h + i];
    float a = x[i], b = x[i + h];
    x[i] = a * co - b * si;
    x[i + h] = a * si + b * co;
}

// permute splits qkv (B,T,3C) into q, k, v (B,H,T,D).
__global__ void permute(float *q, float *k, float *v, const float *qkv, int b, int nt, int nh, int d) {
    permuteQKV(q, k, v, nullptr, nullptr, nullptr, qkv, b, nt, nh, d);
}

// permute_bf16 is permute that also writes q, k, v rounded to bfloat16 into q16, k16, v16
// (B,H,T,D), the operands of attention's products (SFSWEEP_CUDA_FAST=round).
__global__ void permute_bf16(float *q, float *k, float *v, __nv_bfloat16 *q16, __nv_bfloat16 *k16, __nv_bfloat16 *v16, const float *qkv, int b, int nt, int nh, int d) {
    permuteQKV(q, k, v, q16, k16, v16, qkv, b, nt, nh, d);
}

// permute_backward gathers dq, dk, dv (B,H,T,D) into dqkv (B,T,3C), overwriting it.
__global__ void permute_backward(float *dqkv, const float *dq, const float *dk, const float *dv, int b, int nt, int nh, int d) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)b * nh * nt * d) return;
    int c = nh * d;
    long dst = headToRow(idx, nt, nh, d, 3 * c);
    dqkv[dst] = dq[idx];
    dqkv[dst + c] = dk[idx];
    dqkv[dst + 2 * c] = dv[idx];
}

// permute_backward_rope_bf16 is permute_backward, then rope with the inverse rotation
// (sin = −sin) on dqkv's q and k, then to_bf16 on dqkv, in one pass: dqkv (B,T,3C) float32
// and dqkv16 (B,T,3C) bfloat16 from dq, dk, dv (B,H,T,D). One thread per (batch, head,
// position, i < D/2) moves the pair (i, i + D/2) of q, k and v; the rotation is rope's
// expression on the same values (SFSWEEP_CUDA_FAST=round).
__global__ void permute_backward_rope_bf16(float *dqkv, __nv_bfloat16 *dqkv16, const float *dq, const float *dk, const float *dv, const float *cos, const float *sin, int b, int nt, int nh, int d) {
    int h = d / 2;
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)b * nh * nt * h) return;
    int i = idx % h;
    int t = (idx / h) % nt;
    long head = idx / ((long)h * nt); // bb·nh + hh
    int hh = head % nh, bb = head / nh;
    int c = nh * d;
    long src = (head * nt + t) * d;
    long dst = ((long)bb * nt + t) * 3 * c + hh * d;
    float co = cos[t * h + i], si = sin[t * h + i];
    const float *in[3] = {dq, dk, dv};
    for (int part = 0; part < 3; part++) {
        float a = in[part][src + i], bh = in[part][src + i + h];
        float x0 = a, x1 = bh;
        if (part < 2) {
            x0 = a * co - bh * si;
            x1 = a * si + bh * co;
        }
        long o = dst + part * c;
        dqkv[o + i] = x0;
        dqkv[o + i + h] = x1;
        dqkv16[o + i] = __float2bfloat16_rn(x0);
        dqkv16[o + i + h] = __float2bfloat16_rn(x1);
    }
}

// unpermute writes y (B,T,C) from the heads' outputs (B,H,T,D); with back set it goes the
// other way, the gradient dy (B,T,C) into (B,H,T,D).
__global__ void unpermute(float *out, const float *in, int b, int nt, int nh, int d, int back) {
    unpermuteHeads(out, nullptr, in, b, nt, nh, d, back);
}

// unpermute_bf16 is unpermute that also writes out rounded to bfloat16 into out16, laid
// out as out (SFSWEEP_CUDA_FAST=round).
__global__ void unpermute_bf16(float *out, __nv_bfloat16 *out16, const float *in, int b, int nt, int nh, int d, int back) {
    unpermuteHeads(out, out16, in, b, nt, nh, d, back);
}

// softmax_causal replaces each row i (mod T) of the scores (BH,T,T) by the softmax of its
// first i+1 entries and zeroes the rest, one warp per row. In place.
__global__ void softmax_causal(float *att, int rows, int nt) {
    softmaxCausal(att, nullptr, rows, nt);
}

// softmax_causal_bf16 is softmax_causal that also writes the probabilities rounded to
// bfloat16 into att16 (BH,T,T) (SFSWEEP_CUDA_FAST=round).
__global__ void softmax_causal_bf16(float *att, __nv_bfloat16 *att16, int rows, int nt) {
    softmaxCausal(att, att16, rows, nt);
}

// softmax_causal_backward turns dp, the gradient of the probabilities p (BH,T,T), into the
// gradient of the scores, scale·p·(dp − Σ p·dp), zero above the diagonal; one warp per row,
// in place.
__global__ void softmax_causal_backward(float *dp, const float *p, int rows, int nt, float scale) {
    softmaxCausalBackward(dp, nullptr, p, rows, nt, scale);
}

// softmax_causal_backward_bf16 is softmax_causal_backward that also writes the scores'
// gradient rounded to bfloat16 into dp16 (BH,T,T) (SFSWEEP_CUDA_FAST=round).
__global__ void softmax_causal_backward_bf16(float *dp, __nv_bfloat16 *dp16, const float *p, int rows, int nt, float scale) {
    softmaxCausalBackward(dp, dp16, p, rows, nt, scale);
}

// swiglu_forward: out = silu(g)·u, where each row of gu holds the gate g then the up
// projection u. out (N,F), gu (N,2F)
__global__ void swiglu_forward(float *out, const float *gu, int n, int f) {
    swigluForward(out, nullptr, gu, n, f);
}

// swiglu_forward_bf16 is swiglu_forward that also writes out rounded to bfloat16 into
// out16 (N,F) (SFSWEEP_CUDA_FAST=round).
__global__ void swiglu_forward_bf16(float *out, __nv_bfloat16 *out16, const float *gu, int n, int f) {
    swigluForward(out, out16, gu, n, f);
}

// swiglu_backward writes the gradients of g and u into dgu (overwriting them):
// dg = dout·u·σ(g)·(1 + g·(1−σ(g))), du = dout·silu(g).
// dgu (N,2F), dout (N,F), gu (N,2F)
__global__ void swiglu_backward(float *dgu, const float *dout, const float *gu, int n, int f) {
    swigluBackward(dgu, nullptr, dout, gu, n, f);
}

// swiglu_backward_bf16 is swiglu_backward that also writes dgu rounded to bfloat16 into
// dgu16 (N,2F) (SFSWEEP_CUDA_FAST=round).
__global__ void swiglu_backward_bf16(float *dgu, __nv_bfloat16 *dgu16, const float *dout, const float *gu, int n, int f) {
    swigluBackward(dgu, dgu16, dout, gu, n, f);
}

// swiglu_forward_to_bf16 is swiglu_forward_bf16 without the float32 output (SFSWEEP_CUDA_FAST=swiglu): out16 (N,F)
// bfloat16 from gu (N,2F).
__global__ void swiglu_forward_to_bf16(__nv_bfloat16 *out16, const float *gu, int n, int f) {
    swigluForward<false>(nullptr, out16, gu, n, f);
}

// swiglu_backward_to_bf16 is swiglu_backward_bf16 without the float32 gradient (SFSWEEP_CUDA_FAST=swiglu): dgu16
// (N,2F) bfloat16 from dout (N,F) and gu (N,2F).
__global__ void swiglu_backward_to_bf16(__nv_bfloat16 *dgu16, const float *dout, const float *gu, int n, int f) {
    swigluBackward<false>(nullptr, dgu16, dout, gu, n, f);
}

// swiglu_forward_from_bf16 is swiglu_forward_to_bf16 on bfloat16 gu (N,2F), as the act16
// path's product writes it (SFSWEEP_CUDA_FAST=act16): bitwise that kernel on the same
// values in float32.
__global__ void swiglu_forward_from_bf16(__nv_bfloat16 *out16, const __nv_bfloat16 *gu, int n, int f) {
    swigluForward<false>(nullptr, out16, gu, n, f);
}

// swiglu_backward_from_bf16 is swiglu_backward_to_bf16 on bfloat16 dout (N,F) and gu
// (N,2F) (SFSWEEP_CUDA_FAST=act16): bitwise that kernel on the same values in float32.
__global__ void swiglu_backward_from_bf16(__nv_bfloat16 *dgu16, const __nv_bfloat16 *dout, const __nv_bfloat16 *gu, int n, int f) {
    swigluBackward<false>(nullptr, dgu16, dout, gu, n, f);
}

// crossentropy_forward replaces each row of logits (N,V) by its softmax and writes the row's
// loss lse(z) − z[target], in float64, to losses (N); one block per row.
__global__ void crossentropy_forward(float *logits, double *losses, const int *targets, int n, int v) {
    __shared__ float sh[32];
    int r = blockIdx.x;
    if (r >= n) return;
    float *z = logits + (long)r * v;
    float zy = z[targets[r]];
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < v; j += blockDim.x) mx = fmaxf(mx, z[j]);
    mx = blockMax(mx, sh);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < v; j += blockDim.x) {
        float e = expf(z[j] - mx);
        z[j] = e;
        sum += e;
    }
    sum = blockSum(sum, sh);
    float inv = 1.0f / sum;
    for (int j = threadIdx.x; j < v; j += blockDim.x) z[j] *= inv;
    if (threadIdx.x == 0) losses[r] = log((double)sum) + (double)mx - (double)zy;
}

// crossentropy_backward turns the probabilities (N,V) into the gradient of the mean loss
// over all rows, in place: (p − onehot(target))·inv, inv = 1/rows.
__global__ void crossentropy_backward(float *probs, const int *targets, int n, int v, float inv) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)n * v) return;
    int r = idx / v, j = idx % v;
    float p = probs[idx] * inv;
    if (j == targets[r]) p -= inv;
    probs[idx] = p;
}

// The fused cross-entropy (SFSWEEP_CUDA_FAST=ce): crossentropy_loss then, for a backward
// pass, crossentropy_grad or crossentropy_grad_bf16, in place of crossentropy_forward and
// crossentropy_backward. The loss kernel runs crossentropy_forward's block, loops and
// reductions, so its max, sum and loss are bitwise those; the gradient kernels recompute
// e = expf(z − max) from the same z and max, so each element runs the sequence of the two
// old kernels, p = e·inv, g = p·(1/n), g −= 1/n at the target, and is bitwise what they
// left (in bf16 mode: rounded once, as to_bf16 rounded it). The logits are read three
// times and never written; the probabilities are never stored.

// crossentropy_loss writes each row's loss lse(z) − z[target], in float64, to losses (N),
// and its max and 1/Σexp(z − max) to stats (N,2); logits (N,V) are left as they are. One
// block of 512 threads per row.
__global__ void crossentropy_loss(const float *logits, double *losses, float *stats, const int *targets, int n, int v) {
    __shared__ float sh[32];
    int r = blockIdx.x;
    if (r >= n) return;
    const float *z = logits + (long)r * v;
    float zy = z[targets[r]];
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < v; j += blockDim.x) mx = fmaxf(mx, z[j]);
    mx = blockMax(mx, sh);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < v; j += blockDim.x) sum += expf(z[j] - mx);
    sum = blockSum(sum, sh);
    if (threadIdx.x == 0) {
        stats[2 * r] = mx;
        stats[2 * r + 1] = 1.0f / sum;
        losses[r] = log((double)sum) + (double)mx - (double)zy;
    }
}

// crossentropy_grad writes the float32 gradient of the logits (N,V) in place.
__global__ void crossentropy_grad(float *logits, const float *stats, const int *targets, int n, int v, float inv) {
    crossEntropyGrad(logits, logits, stats, targets, n, v, inv);
}

// crossentropy_grad_bf16 writes the gradient of the logits (N,V) rounded to bfloat16 into
// out (N,V), the operand of both head products.
__global__ void crossentropy_grad_bf16(__nv_bfloat16 *out, const float *logits, const float *stats, const int *targets, int n, int v, float inv) {
    crossEntropyGrad(out, logits, stats, targets, n, v, inv);
}

// sumsq_chunks writes the float64 sum of squares of each chunk of `chunk` elements of g
// into part, in the order of sfadamw's gradient norm: four interleaved partial sums, then
// (s0 + s1) + (s2 + s3); one thread per chunk.
__global__ void sumsq_chunks(double *part, const float *g, long n, int chunk) {
    long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long lo = k * chunk;
    if (lo >= n) return;
    long hi = min(lo + chunk, n);
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    long i = lo;
    for (; i + 4 <= hi; i += 4) {
        double a = g[i], b = g[i + 1], c = g[i + 2], d = g[i + 3];
        s0 += a * a;
        s1 += b * b;
        s2 += c * c;
        s3 += d * d;
    }
    for (; i < hi; i++) {
        double a = g[i];
        s0 += a * a;
    }
    part[k] = (s0 + s1) + (s2 + s3);
}

// sfadamw_step is sfadamw's SF-AdamW kernel, element for element in the same order:
//
//	g' = g·gs
//	v  = β2·v + ((1−β2)·g')·g'
//	d  = g'/(√v·rs + ε) + λ·y
//	y  = (y + c·(z − y)) + coef·d
//	z  = z − γ·d
__global__ void sfadamw_step(const float *g, float *y, float *z, float *v, long n,
                             float b2, float omb2, float rs, float eps, float wd, float gs,
                             float c, float lr, float coef) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i] * gs;
    float vi = b2 * v[i] + omb2 * gi * gi;
    v[i] = vi;
    float d = gi / (sqrtf(vi) * rs + eps) + wd * y[i];
    float yi = y[i], zi = z[i];
    y[i] = (yi + c * (zi - yi)) + coef * d;
    z[i] = zi - lr * d;
}

// adamw_step is sfadamw's AdamW kernel, element for element in the same order:
//
//	g' = g·gs
//	m  = β1·m + (1−β1)·g'
//	v  = β2·v + ((1−β2)·g')·g'
//	p  = p·decay − (step·m)/(√v·rs + ε)
__global__ void adamw_step(const float *g, float *p, float *m, float *v, long n,
                           float decay, float b1, float omb1, float b2, float omb2,
                           float step, float rs, float eps, float gs) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i] * gs;
    float mi = b1 * m[i] + omb1 * gi;
    float vi = b2 * v[i] + omb2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - (step * mi) / (sqrtf(vi) * rs + eps);
}

// The ops of GPT-2 (training/native/ops_gpt2.go) that LLaMA does not have.

// position_forward adds the position embeddings: out (N,C) row r gets wpe (Context,C) row
// r mod T.
__global__ void position_forward(float *out, const float *wpe, int n, int nt, int c) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)n * c) return;
    int r = idx / c, i = idx % c;
    out[idx] += wpe[(long)(r % nt) * c + i];
}

// position_backward adds to dwpe (Context,C) row t the gradient of the rows at position t,
// sequence by sequence in order; one thread per (t, column).
__global__ void position_backward(float *dwpe, const float *dout, int b, int nt, int c) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= nt * c) return;
    int t = idx / c, i = idx % c;
    float s = dwpe[idx];
    for (int bb = 0; bb < b; bb++) s += dout[((long)bb * nt + t) * c + i];
    dwpe[idx] = s;
}

// layernorm_forward: out = (x − mean)·rstd·w + b with the biased variance, one warp per row;
// keeps mean and rstd. out (N,C), mean, rstd (N), x (N,C), w, b (C)
__global__ void layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w, const float *bias, int n, int c, float eps) {
    int r = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    int lane = threadIdx.x % WARP;
    if (r >= n) return;
    const float *xr = x + (long)r * c;
    float s = 0.0f;
    for (int i = lane; i < c; i += WARP) s += xr[i];
    float mu = warpSum(s) / c;
    float s2 = 0.0f;
    for (int i = lane; i < c; i += WARP) {
        float d = xr[i] - mu;
        s2 += d * d;
    }
    float rs = 1.0f / sqrtf(warpSum(s2) / c + eps);
    if (lane == 0) {
        mean[r] = mu;
        rstd[r] = rs;
    }
    float *o = out + (long)r * c;
    for (int i = lane; i < c; i += WARP) o[i] = (xr[i] - mu) * rs * w[i] + bias[i];
}

// layernorm_backward_dx adds the input gradient to dx, one warp per row: with
// x̂ = (x − mean)·rstd and dx̂ = dout·w, dx += rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)).
__global__ void layernorm_backward_dx(float *dx, const float *dout, const float *x, const float *w, const float *mean, const float *rstd, int n, int c) {
    int r = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    int lane = threadIdx.x % WARP;
    if (r >= n) return;
    const float *g = dout + (long)r * c, *xr = x + (long)r * c;
    float mu = mean[r], rs = rstd[r];
    float sg = 0.0f, sgx = 0.0f;
    for (int i = lane; i < c; i += WARP) {
        float dxh = g[i] * w[i];
        sg += dxh;
        sgx += dxh * (xr[i] - mu) * rs;
    }
    sg = warpSum(sg) / c;
    sgx = warpSum(sgx) / c;
    float *o = dx + (long)r * c;
    for (int i = lane; i < c; i += WARP) {
        float xh = (xr[i] - mu) * rs;
        o[i] += rs * (g[i] * w[i] - sg - xh * sgx);
    }
}

// layernorm_backward_dwdb_part writes the sums over chunks of rows of dout·x̂ and of dout
// into wpart and bpart (chunks,C); thread (chunk, j) sums its rows in order.
__global__ void layernorm_backward_dwdb_part(float *wpart, float *bpart, const float *dout, const float *x, const float *mean, const float *rstd, int n, int c, int rows) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = blockIdx.y;
    if (j >= c) return;
    int r0 = chunk * rows, r1 = min(r0 + rows, n);
    float sw = 0.0f, sb = 0.0f;
    for (int r = r0; r < r1; r++) {
        float g = dout[(long)r * c + j];
        sw += g * ((x[(long)r * c + j] - mean[r]) * rstd[r]);
        sb += g;
    }
    wpart[(long)chunk * c + j] = sw;
    bpart[(long)chunk * c + j] = sb;
}

// bias_forward adds b (W) to every row of out (N,W).
__global__ void bias_forward(float *out, const float *b, int n, int w) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)n * w) return;
    out[idx] += b[idx % w];
}

// colsum_part writes the sums over chunks of rows of dout (N,W) into part (chunks,W).
__global__ void colsum_part(float *part, const float *dout, int n, int w, int rows) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = blockIdx.y;
    if (j >= w) return;
    int r0 = chunk * rows, r1 = min(r0 + rows, n);
    float s = 0.0f;
    for (int r = r0; r < r1; r++) s += dout[(long)r * w + j];
    part[(long)chunk * w + j] = s;
}

// gelu_forward computes the exact GELU 0.5·x·(1 + erf(x/√2)). out, x (N·F)
__global__ void gelu_forward(float *out, const float *x, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

// gelu_backward writes dx = dout·(Φ(x) + x·φ(x)) (overwriting dx).
__global__ void gelu_backward(float *dx, const float *dout, const float *x, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752f));
    float pdf = 0.3989422804014327f * expf(-0.5f * v * v);
    dx[i] = dout[i] * (cdf + v * pdf);
}

// The training loop's step on the device (training.Run with a device optimizer): the mean
// of the accumulated gradients and the exponential averages of the iterates, in the
// element order and rounding of training.scaleGrads and sfadamw.EWA / UpdateEWAX.

// scale multiplies x by s: x = x·s (the mean of accumulated micro-batch gradients).
__global__ void scale(float *x, float s, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * s;
}

// ewa_update folds w into the average v: v = d·v + (1−d)·w, with omd = 1−d rounded to
// float32 as sfadamw.EWA does.
__global__ void ewa_update(float *v, const float *w, float d, float omd, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = d * v[i] + omd * w[i];
}

// sf_x writes SF-AdamW's x = (y − (1−β)·z)/β into x (sfadamw's X).
__global__ void sf_x(float *x, const float *y, const float *z, float b, float omb, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = (y[i] - omb * z[i]) / b;
}

// ewa_update_x folds x = (y − (1−β)·z)/β into v without storing x (sfadamw's UpdateEWAX).
__global__ void ewa_update_x(float *v, const float *y, const float *z, float d, float omd,
                             float b, float omb, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = d * v[i] + omd * ((y[i] - omb * z[i]) / b);
}

// to_bf16 rounds x to bfloat16 (to nearest, ties to even): the operands of the bf16
// matrix products, as torch.autocast casts them.
__global__ void to_bf16(__nv_bfloat16 *dst, const float *x, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = __float2bfloat16_rn(x[i]);
}

} // extern "C"

// The flash attention kernels (flash.cu), RMSNorm's fused backward pass (rmsnorm.cu) and the
// embedding gradient by token (embedding.cu),
// in the same PTX.
#include "flash.cu"
#include "rmsnorm.cu"
#include "embedding.cu"
