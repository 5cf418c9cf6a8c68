// Deterministic flash attention for head size 64 on bfloat16 tensor cores
// (mma.sync.m16n8k16, ldmatrix), included by kernels.cu so that it is part of the one PTX.
// The index maths (fragment maps, ldmatrix addresses, causal tile ranges) is
// flashmath/flash_tiles.h, which Go tests check against naive loops; flash_mirror_test.go
// is the Go mirror of the algorithm, with the same tiles, masks, rescaling order and
// rounding points.
//
// flash_permute rounds q, k, v from qkv (B,T,3C) into the heads' layout, once per layer:
// the forward and the backward pass read that copy.
//
// Forward (flash_forward): a block of 4 warps per 64 query rows of one (batch, head), each
// warp 16 rows, over the key tiles of 64 that the causal mask leaves; online softmax in
// float32 registers on scores scaled by log2(e)/√D (exp2), P rounded to bfloat16 for its
// product with V; O written in float32 and bfloat16, either where asked (a null pointer
// skips it), straight into (B,T,C), the log-sum-exp (base 2) kept for the backward pass.
//
// Backward, with no atomics, so the gradients are the same bits run to run:
// flash_backward_pre rounds dO to bfloat16 into the heads' layout and takes
// D = rowsum(dO∘O); flash_backward_dkdv has a block per key tile that loops over the query
// tiles that see it, in order, and owns its rows of dK and dV; flash_backward_dq has a
// block per query tile that loops over its key tiles, in order, and owns its rows of dQ.
// P and dS are recomputed in both (seven tile products instead of FlashAttention-2's five,
// whose dQ sums with atomics in no fixed order).
//
// Layouts: qkv (B,T,3C) float32; q, k, v, dO16 (B,H,T,D) bfloat16; y, dy (B,T,C) float32; dq, dk, dv (B,H,T,D)
// float32; lse, dvec (B,H,T) float32. Grid (tiles, B·H), FLASH_WARPS·32 threads.

#include "flashmath/flash_tiles.h"

#define FLASH_THREADS (FLASH_WARPS * WARP)

typedef __nv_bfloat16 flash_tile[FLASH_LD];

// flashLoad copies rows row0 .. row0+63 of a head's (T,D) bfloat16 matrix g, its rows
// stride elements apart, into s, 16 bytes per thread and step; rows at or past t are zero,
// so padded rows add nothing.
__device__ __forceinline__ void flashLoad(flash_tile *s, const __nv_bfloat16 *g, long stride, int row0, int t) {
    for (int c = threadIdx.x; c < 64 * (FLASH_D / 8); c += FLASH_THREADS) {
        int r = c / (FLASH_D / 8), col = (c % (FLASH_D / 8)) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (row0 + r < t) v = *(const uint4 *)(g + (long)(row0 + r) * stride + col);
        *(uint4 *)&s[r][col] = v;
    }
}

// The warp's tensor-core primitives; flashemu/emu.cc defines them for the CPU instead.
#ifndef FLASH_EMULATE
__device__ __forceinline__ void ldsm(uint32_t r[4], const __nv_bfloat16 *p) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

__device__ __forceinline__ void ldsmT(uint32_t r[4], const __nv_bfloat16 *p) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

// mma is c += a·b on one m16n8k16 tile.
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&v;
}

// cToA makes the A fragment of a 16x16 block from its two C tiles (flash_c_to_a_*),
// rounding to bfloat16.
__device__ __forceinline__ void cToA(uint32_t a[4], const float c0[4], const float c1[4]) {
#pragma unroll
    for (int r = 0; r < 4; r++) {
        int i = 2 * r;
        float lo = flash_c_to_a_tile(i) ? c1[flash_c_to_a_elem(i)] : c0[flash_c_to_a_elem(i)];
        float hi = flash_c_to_a_tile(i + 1) ? c1[flash_c_to_a_elem(i + 1)] : c0[flash_c_to_a_elem(i + 1)];
        a[r] = pack2(lo, hi);
    }
}

// loadA loads a warp's 16 rows (from row0 of s) as the A fragments of the D/16 k-steps.
__device__ __forceinline__ void loadA(uint32_t a[FLASH_D / 16][4], flash_tile *s, int row0, int lane) {
#pragma unroll
    for (int ks = 0; ks < FLASH_D / 16; ks++) ldsm(a[ks], &s[row0 + flash_ldsm_a_row(lane)][ks * 16 + flash_ldsm_a_col(lane)]);
}

// rowsT is acc (16 x 64) += a · sᵀ over the head dimension: a the warp's A fragments, s a
// tile of 64 rows (keys or queries) stored a row each.
__device__ __forceinline__ void rowsT(float acc[8][4], const uint32_t a[FLASH_D / 16][4], flash_tile *s, int lane) {
#pragma unroll
    for (int ks = 0; ks < FLASH_D / 16; ks++) {
#pragma unroll
        for (int np = 0; np < 4; np++) {
            uint32_t b[4];
            ldsm(b, &s[np * 16 + flash_ldsm_bt_row(lane)][ks * 16 + flash_ldsm_bt_col(lane)]);
            mma(acc[2 * np], a[ks], b[0], b[1]);
            mma(acc[2 * np + 1], a[ks], b[2], b[3]);
        }
    }
}

// times is acc (16 x D) += p · s: p (16 x 64, as C tiles) rounded to bfloat16, s a tile
// of 64 rows of D.
__device__ __forceinline__ void times(float acc[FLASH_D / 8][4], const float p[8][4], flash_tile *s, int lane) {
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        uint32_t a[4];
        cToA(a, p[2 * kk], p[2 * kk + 1]);
#pragma unroll
        for (int dp = 0; dp < FLASH_D / 16; dp++) {
            uint32_t b[4];
            ldsmT(b, &s[kk * 16 + flash_ldsm_b_row(lane)][dp * 16 + flash_ldsm_b_col(lane)]);
            mma(acc[2 * dp], a, b[0], b[1]);
            mma(acc[2 * dp + 1], a, b[2], b[3]);
        }
    }
}

__device__ __forceinline__ void zero8(float x[8][4]) {
#pragma unroll
    for (int i = 0; i < 8; i++) x[i][0] = x[i][1] = x[i][2] = x[i][3] = 0.0f;
}

// scoresAndGrads sets s = a·taᵀ (the scores) and dp = b·tbᵀ (the probabilities'
// gradient) on a warp's 16 rows: the two products of each step of the backward passes.
__device__ __forceinline__ void scoresAndGrads(float s[8][4], float dp[8][4], const uint32_t a[FLASH_D / 16][4], flash_tile *ta,
        const uint32_t b[FLASH_D / 16][4], flash_tile *tb, int lane) {
    zero8(s);
    zero8(dp);
    rowsT(s, a, ta, lane);
    rowsT(dp, b, tb, lane);
}

// storeRows writes a warp's 16 rows of D (as C tiles), times s, from row row0 of a head's
// (T,D) float32 matrix out; rows at or past t are not written.
__device__ __forceinline__ void storeRows(float *out, const float g[FLASH_D / 8][4], int row0, int t, float s, int lane) {
#pragma unroll
    for (int half = 0; half < 2; half++) {
        int row = row0 + flash_c_row(lane, 2 * half);
        if (row >= t) continue;
#pragma unroll
        for (int d8 = 0; d8 < FLASH_D / 8; d8++) {
            int d = d8 * 8 + flash_c_col(lane, 2 * half);
            *(float2 *)&out[(long)row * FLASH_D + d] = make_float2(g[d8][2 * half] * s, g[d8][2 * half + 1] * s);
        }
    }
}

// load2 reads two adjacent values, 8- or 4-byte aligned, as float32.
__device__ __forceinline__ void load2(const float *p, float &a, float &b) {
    float2 v = *(const float2 *)p;
    a = v.x, b = v.y;
}
__device__ __forceinline__ void load2(const __nv_bfloat16 *p, float &a, float &b) {
    __nv_bfloat162 v = *(const __nv_bfloat162 *)p;
    a = __bfloat162float(v.x), b = __bfloat162float(v.y);
}

// rotate2 turns the pairs (a0, b0) and (a1, b1), elements i and i + D/2 of a head's row
// and the two after them, by RoPE's angles with cosines c0, c1 and sines s0, s1: the rope
// kernel's float32 expressions, each product rounded (nvcc runs with -fmad=false).
__device__ __forceinline__ void rotate2(float &a0, float &a1, float &b0, float &b1, float c0, float c1, float s0, float s1) {
    float x0 = a0 * c0 - b0 * s0, y0 = a0 * s0 + b0 * c0;
    float x1 = a1 * c1 - b1 * s1, y1 = a1 * s1 + b1 * c1;
    a0 = x0, b0 = y0, a1 = x1, b1 = y1;
}

// ropePair reads the pair (i, i+1) of the first half of a head's row x (of type T) and
// their partners (i + D/2, i + 1 + D/2), rotated by RoPE at position t with cos and sin
// (T, D/2).
template <typename T>
__device__ __forceinline__ void ropePair(const T *x, const float *cos, const float *sin, int t, int i, float &a0, float &a1, float &b0, float &b1) {
    const int hd = FLASH_D / 2;
    load2(x + i, a0, a1);
    load2(x + i + hd, b0, b1);
    float c0, c1, s0, s1;
    load2(cos + t * hd + i, c0, c1);
    load2(sin + t * hd + i, s0, s1);
    rotate2(a0, a1, b0, b1, c0, c1, s0, s1);
}

// The kernels read a head's q, k, v (and dO) through one of two sources. headSrc: a (T,D)
// bfloat16 matrix in the heads' layout, as flash_permute writes it. rowSrc (the rows
// path: act16 with rope and rows): a head's columns of one part of qkv (B,T,3C) in bfloat16, as the
// product of Wqkv writes it, rows 3C apart, with RoPE applied to q and k on the way in
// flash_permute_rope's expressions (ropePair), so that a tile holds the bits
// flash_permute_rope writes from those values widened, and no permuted copy is made.
struct headSrc {
    const __nv_bfloat16 *g;
    __device__ __forceinline__ void load(flash_tile *s, int row0, int t) const { flashLoad(s, g, FLASH_D, row0, t); }
};

struct rowSrc {
    const __nv_bfloat16 *g; // the head's first column in row 0 of its sequence
    long stride;            // 3C
    const float *cos, *sin; // (T, D/2); null: no rotation (v)
    __device__ __forceinline__ void load(flash_tile *s, int row0, int t) const {
        if (!cos) {
            flashLoad(s, g, stride, row0, t);
            return;
        }
        const int hd = FLASH_D / 2;
        for (int c = threadIdx.x; c < 64 * (hd / 2); c += FLASH_THREADS) {
            int r = c / (hd / 2), i = (c % (hd / 2)) * 2;
            float a0 = 0.0f, a1 = 0.0f, b0 = 0.0f, b1 = 0.0f;
            if (row0 + r < t) ropePair(g + (long)(row0 + r) * stride, cos, sin, row0 + r, i, a0, a1, b0, b1);
            *(__nv_bfloat162 *)&s[r][i] = __floats2bfloat162_rn(a0, a1);
            *(__nv_bfloat162 *)&s[r][i + hd] = __floats2bfloat162_rn(b0, b1);
        }
    }
};

// rowSrcAt is the rowSrc of part (0 q, 1 k, 2 v) of head bh (of nh) in qkv (B,T,3C).
__device__ __forceinline__ rowSrc rowSrcAt(const __nv_bfloat16 *qkv, int part, int bh, int nh, int nt, const float *cos, const float *sin) {
    long c = (long)nh * FLASH_D;
    int bb = bh / nh, h = bh % nh;
    return rowSrc{qkv + (long)bb * nt * 3 * c + part * c + (long)h * FLASH_D, 3 * c, part < 2 ? cos : nullptr, part < 2 ? sin : nullptr};
}

// The backward kernels write a warp's rows of a gradient with one of two stores.
// headRows: into a head's (T,D) float32 matrix, which the gather (permute_backward_rope_*)
// then moves into (B,T,3C). ropeRows16 (the rope path): straight into the bfloat16 dqkv
// (B,T,3C) that the products read, with the inverse RoPE rotation of q's and k's
// gradients on the way, in the gather kernel's float32 expressions on the same values
// (each gradient times its scale, as headRows stores it), so the same bits, without the
// float32 gradients' round trip through memory. A thread holds columns d and d + D/2 of
// its rows (n-tiles d8 and d8 + D/16), so the rotation needs no exchange.
struct headRows {
    float *out; // the head's (T,D) matrix
    __device__ __forceinline__ void operator()(const float g[FLASH_D / 8][4], int row0, int t, float s, int lane) const {
        storeRows(out, g, row0, t, s, lane);
    }
};

struct ropeRows16 {
    __nv_bfloat16 *out;     // the head's first column in row 0 of its sequence; rows 3C apart
    long stride;            // 3C
    const float *cos, *sin; // (T, D/2), sin = −sin for the inverse; null: no rotation (v)
    __device__ __forceinline__ void operator()(const float g[FLASH_D / 8][4], int row0, int t, float s, int lane) const {
        const int hd = FLASH_D / 2;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int row = row0 + flash_c_row(lane, 2 * half);
            if (row >= t) continue;
            __nv_bfloat16 *o = out + (long)row * stride;
#pragma unroll
            for (int d8 = 0; d8 < FLASH_D / 16; d8++) {
                int d = d8 * 8 + flash_c_col(lane, 2 * half);
                float a0 = g[d8][2 * half] * s, a1 = g[d8][2 * half + 1] * s;
                float b0 = g[d8 + FLASH_D / 16][2 * half] * s, b1 = g[d8 + FLASH_D / 16][2 * half + 1] * s;
                if (cos) rotate2(a0, a1, b0, b1, cos[row * hd + d], cos[row * hd + d + 1], sin[row * hd + d], sin[row * hd + d + 1]);
                *(__nv_bfloat162 *)&o[d] = __floats2bfloat162_rn(a0, a1);
                *(__nv_bfloat162 *)&o[d + hd] = __floats2bfloat162_rn(b0, b1);
            }
        }
    }
};

// ropeRowsAt is the ropeRows16 of part (0 q, 1 k, 2 v) of head bh (of nh) in dqkv16.
__device__ __forceinline__ ropeRows16 ropeRowsAt(__nv_bfloat16 *dqkv16, int part, int bh, int nh, int nt, const float *cos, const float *sin) {
    long c = (long)nh * FLASH_D;
    int bb = bh / nh, h = bh % nh;
    return ropeRows16{dqkv16 + (long)bb * nt * 3 * c + part * c + (long)h * FLASH_D, 3 * c, part < 2 ? cos : nullptr, part < 2 ? sin : nullptr};
}

// flashPermuteRope is flash_permute_rope on qkv of type T.
template <typename T>
__device__ __forceinline__ void flashPermuteRope(__nv_bfloat16 *qkv16, const T *qkv, const float *cos, const float *sin, int b, int nt, int nh) {
    const int hd = FLASH_D / 2;
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x, n = (long)b * nh * nt * FLASH_D;
    if (idx >= n / 4) return;
    int part = blockIdx.y, i = (int)(idx % (hd / 2)) * 2;
    long r = idx / (hd / 2);
    int t = (int)(r % nt), bh = (int)(r / nt), h = bh % nh, bb = bh / nh;
    const T *x = qkv + ((long)bb * nt + t) * 3 * nh * FLASH_D + (long)(part * nh + h) * FLASH_D;
    float a0, a1, b0, b1;
    if (part < 2) {
        ropePair(x, cos, sin, t, i, a0, a1, b0, b1);
    } else {
        load2(x + i, a0, a1);
        load2(x + i + hd, b0, b1);
    }
    __nv_bfloat16 *o = qkv16 + part * n + r * FLASH_D;
    *(__nv_bfloat162 *)&o[i] = __floats2bfloat162_rn(a0, a1);
    *(__nv_bfloat162 *)&o[i + hd] = __floats2bfloat162_rn(b0, b1);
}

// flashBackwardPre is flash_backward_pre on dy of type T and O of type Y (float32, or
// bfloat16 on the act16 path).
template <typename T, typename Y>
__device__ __forceinline__ void flashBackwardPre(__nv_bfloat16 *do16, float *dvec, const T *dy, const Y *y, int rows, int nt, int nh) {
    int r = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP, lane = threadIdx.x % WARP;
    if (r >= rows) return;
    int bh = r / nt, i = r % nt, b = bh / nh, h = bh % nh;
    long src = ((long)(b * nt + i) * nh + h) * FLASH_D, dst = (long)r * FLASH_D;
    __nv_bfloat16 d0 = __float2bfloat16_rn(widen(dy[src + lane])), d1 = __float2bfloat16_rn(widen(dy[src + lane + WARP]));
    do16[dst + lane] = d0;
    do16[dst + lane + WARP] = d1;
    float s = __bfloat162float(d0) * widen(y[src + lane]);
    s += __bfloat162float(d1) * widen(y[src + lane + WARP]);
    s = warpSum(s);
    if (lane == 0) dvec[r] = s;
}

// flashForward is flash_forward's block, reading q, k and v through sources (headSrc,
// rowSrc).
template <class Src>
__device__ __forceinline__ void flashForward(float *y, __nv_bfloat16 *y16, float *lse, Src q, Src k, Src v, int nt, int nh, float scaleLog2) {
    __shared__ __align__(16) flash_tile sq[FLASH_BR], sk[FLASH_BC], sv[FLASH_BC];
    // the last query tiles visit the most key tiles: they start first
    int qt = gridDim.x - 1 - blockIdx.x, bh = blockIdx.y, warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    q.load(sq, qt * FLASH_BR, nt);
    __syncthreads();
    uint32_t qa[FLASH_D / 16][4];
    loadA(qa, sq, warp * 16, lane);
    float o[FLASH_D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    zero8(o);
    int r0 = qt * FLASH_BR + warp * 16;
    int end = flash_kv_end(qt, FLASH_BR, FLASH_BC, nt);
    for (int kt = 0; kt < end; kt++) {
        __syncthreads(); // every warp is done with the last tile
        k.load(sk, kt * FLASH_BC, nt);
        v.load(sv, kt * FLASH_BC, nt);
        __syncthreads();
        float s[8][4];
        zero8(s);
        rowsT(s, qa, sk, lane);
        bool masked = flash_tile_masked(qt, kt, FLASH_BR, FLASH_BC, nt);
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n8 = 0; n8 < 8; n8++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float x = s[n8][e] * scaleLog2;
                if (masked && !flash_visible(r0 + flash_c_row(lane, e), kt * FLASH_BC + n8 * 8 + flash_c_col(lane, e), nt)) x = -INFINITY;
                s[n8][e] = x;
                mx[e >> 1] = fmaxf(mx[e >> 1], x);
            }
        float alpha[2], rs[2] = {0.0f, 0.0f};
#pragma unroll
        for (int h = 0; h < 2; h++) {
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
            float mn = fmaxf(m[h], mx[h]);
            // a row with nothing visible yet (only rows past T) keeps zeros, not NaNs
            float ref = mn == -INFINITY ? 0.0f : mn;
            alpha[h] = exp2f(m[h] - ref);
            m[h] = mn;
            mx[h] = ref;
        }
#pragma unroll
        for (int n8 = 0; n8 < 8; n8++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[n8][e] = exp2f(s[n8][e] - mx[e >> 1]);
                rs[e >> 1] += s[n8][e];
            }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            rs[h] += __shfl_xor_sync(0xffffffffu, rs[h], 1);
            rs[h] += __shfl_xor_sync(0xffffffffu, rs[h], 2);
            l[h] = l[h] * alpha[h] + rs[h];
        }
#pragma unroll
        for (int d8 = 0; d8 < FLASH_D / 8; d8++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[d8][e] *= alpha[e >> 1];
        times(o, s, sv, lane);
    }
    int b = bh / nh, h = bh % nh;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        int row = r0 + flash_c_row(lane, 2 * half);
        if (row >= nt) continue;
        float inv = 1.0f / l[half];
        long base = ((long)(b * nt + row) * nh + h) * FLASH_D;
#pragma unroll
        for (int d8 = 0; d8 < FLASH_D / 8; d8++) {
            int d = d8 * 8 + flash_c_col(lane, 2 * half);
            float v0 = o[d8][2 * half] * inv, v1 = o[d8][2 * half + 1] * inv;
            if (y) *(float2 *)&y[base + d] = make_float2(v0, v1);
            if (y16) *(__nv_bfloat162 *)&y16[base + d] = __floats2bfloat162_rn(v0, v1);
        }
        if ((lane & 3) == 0) lse[(long)bh * nt + row] = m[half] + log2f(l[half]);
    }
}

extern "C" {

// flash_permute writes q, k and v of qkv (B,T,3C), rounded to bfloat16, into the heads'
// layout: qkv16 holds q, k, v (B,H,T,D) one after another, blockIdx.y choosing which; a
// thread per pair of elements.
__global__ void flash_permute(__nv_bfloat16 *qkv16, const float *qkv, int b, int nt, int nh) {
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x, n = (long)b * nh * nt * FLASH_D;
    if (idx >= n / 2) return;
    int part = blockIdx.y, d = (int)(idx % (FLASH_D / 2)) * 2;
    long r = idx / (FLASH_D / 2);
    int i = (int)(r % nt), bh = (int)(r / nt), h = bh % nh, bb = bh / nh;
    long src = ((long)bb * nt + i) * 3 * nh * FLASH_D + (long)(part * nh + h) * FLASH_D + d;
    float2 x = *(const float2 *)&qkv[src];
    *(__nv_bfloat162 *)&qkv16[part * n + 2 * idx] = __floats2bfloat162_rn(x.x, x.y);
}

// flash_permute_rope is flash_permute with RoPE applied to q and k on the way, as the rope
// kernel applies it (the same float32 expressions, so bitwise rope then flash_permute):
// cos and sin (T, D/2). A thread per pair (i, i+1) of the first half of a head and their
// partners (i + D/2, i + 1 + D/2); qkv is left as it is (SFSWEEP_CUDA_FAST=rope).
__global__ void flash_permute_rope(__nv_bfloat16 *qkv16, const float *qkv, const float *cos, const float *sin, int b, int nt, int nh) {
    flashPermuteRope(qkv16, qkv, cos, sin, b, nt, nh);
}

// flash_permute_rope_bf16 is flash_permute_rope on qkv in bfloat16, as the product of Wqkv
// writes it on the act16 path: each value widened, then the same float32 expressions, so
// the tiles flash_forward_rows and flash_backward_*_rows rotate as they load them, bit for
// bit, kept in the heads' layout for flash_forward and flash_backward_*_rope16.
__global__ void flash_permute_rope_bf16(__nv_bfloat16 *qkv16, const __nv_bfloat16 *qkv, const float *cos, const float *sin, int b, int nt, int nh) {
    flashPermuteRope(qkv16, qkv, cos, sin, b, nt, nh);
}

__global__ void __launch_bounds__(FLASH_THREADS) flash_forward(float *y, __nv_bfloat16 *y16, float *lse,
        const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v, int nt, int nh, float scaleLog2) {
    long head = (long)blockIdx.y * nt * FLASH_D;
    flashForward(y, y16, lse, headSrc{q + head}, headSrc{k + head}, headSrc{v + head}, nt, nh, scaleLog2);
}

// flash_forward_rows is flash_forward reading q, k and v straight from qkv (B,T,3C) in
// bfloat16, as the act16 path's product of Wqkv writes it, with RoPE applied to q and k on
// the way (cos and sin (T, D/2)): bitwise flash_permute_rope_bf16, then flash_forward,
// without the permuted copy (the rows path).
__global__ void __launch_bounds__(FLASH_THREADS) flash_forward_rows(float *y, __nv_bfloat16 *y16, float *lse,
        const __nv_bfloat16 *qkv, const float *cos, const float *sin, int nt, int nh, float scaleLog2) {
    int bh = blockIdx.y;
    flashForward(y, y16, lse, rowSrcAt(qkv, 0, bh, nh, nt, cos, sin), rowSrcAt(qkv, 1, bh, nh, nt, cos, sin),
                 rowSrcAt(qkv, 2, bh, nh, nt, cos, sin), nt, nh, scaleLog2);
}

// flash_backward_pre: a warp per row of (B,H,T): dO rounded into the heads' layout, and
// D = rowsum(dO∘O) on the rounded dO, lane l taking elements l and l+32.
__global__ void flash_backward_pre(__nv_bfloat16 *do16, float *dvec, const float *dy, const float *y, int rows, int nt, int nh) {
    flashBackwardPre(do16, dvec, dy, y, rows, nt, nh);
}

// flash_backward_pre_bf16 is flash_backward_pre on the act16 path: dy (B,T,C) in bfloat16,
// as the backward product through Wo writes it, and O's bfloat16 copy y16 (B,T,C), the
// output SDPA gives under torch.autocast, for D; bitwise flash_backward_pre on dy and y16
// widened (dy is rounded to bfloat16 either way). The forward pass then writes only the
// copy of O.
__global__ void flash_backward_pre_bf16(__nv_bfloat16 *do16, float *dvec, const __nv_bfloat16 *dy, const __nv_bfloat16 *y16, int rows, int nt, int nh) {
    flashBackwardPre(do16, dvec, dy, y16, rows, nt, nh);
}

} // extern "C"

// flashBackwardDkdv is flash_backward_dkdv's block, reading q, k and v through sources and
// dO in the heads' layout, its rows of dK and dV written by storeK and storeV.
template <class Store, class Src>
__device__ __forceinline__ void flashBackwardDkdv(Store storeK, Store storeV, Src q, Src k, Src v, headSrc dO,
        const float *lse, const float *dvec, int nt, float scaleLog2, float scale) {
    __shared__ __align__(16) flash_tile sq[FLASH_BR], sdo[FLASH_BR], skv[FLASH_BC];
    __shared__ float slse[FLASH_BR], sdv[FLASH_BR];
    int kt = blockIdx.x, bh = blockIdx.y, warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    uint32_t ka[FLASH_D / 16][4], va[FLASH_D / 16][4];
    k.load(skv, kt * FLASH_BC, nt);
    __syncthreads();
    loadA(ka, skv, warp * 16, lane);
    __syncthreads();
    v.load(skv, kt * FLASH_BC, nt);
    __syncthreads();
    loadA(va, skv, warp * 16, lane);
    float gk[FLASH_D / 8][4], gv[FLASH_D / 8][4];
    zero8(gk);
    zero8(gv);
    int j0 = kt * FLASH_BC + warp * 16, nq = flash_tiles(nt, FLASH_BR);
    for (int qt = flash_q_begin(kt, FLASH_BR, FLASH_BC); qt < nq; qt++) {
        __syncthreads();
        q.load(sq, qt * FLASH_BR, nt);
        dO.load(sdo, qt * FLASH_BR, nt);
        for (int i = threadIdx.x; i < FLASH_BR; i += FLASH_THREADS) {
            int row = qt * FLASH_BR + i;
            slse[i] = row < nt ? lse[(long)bh * nt + row] : 0.0f;
            sdv[i] = row < nt ? dvec[(long)bh * nt + row] : 0.0f;
        }
        __syncthreads();
        // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ for the warp's 16 keys and the tile's 64 queries
        float st[8][4], dpt[8][4];
        scoresAndGrads(st, dpt, ka, sq, va, sdo, lane);
        bool masked = flash_tile_masked(qt, kt, FLASH_BR, FLASH_BC, nt);
#pragma unroll
        for (int n8 = 0; n8 < 8; n8++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int ii = n8 * 8 + flash_c_col(lane, e);
                float p = 0.0f;
                if (!masked || flash_visible(qt * FLASH_BR + ii, j0 + flash_c_row(lane, e), nt))
                    p = exp2f(st[n8][e] * scaleLog2 - slse[ii]);
                st[n8][e] = p;
                dpt[n8][e] = p * (dpt[n8][e] - sdv[ii]);
            }
        times(gv, st, sdo, lane);
        times(gk, dpt, sq, lane);
    }
    storeK(gk, j0, nt, scale, lane);
    storeV(gv, j0, nt, 1.0f, lane);
}

// flashBackwardDq is flash_backward_dq's block, reading q, k and v through sources and dO
// in the heads' layout, its rows of dQ written by store.
template <class Store, class Src>
__device__ __forceinline__ void flashBackwardDq(Store store, Src q, Src k, Src v, headSrc dO,
        const float *lse, const float *dvec, int nt, float scaleLog2, float scale) {
    __shared__ __align__(16) flash_tile sk[FLASH_BC], sv[FLASH_BC];
    int qt = gridDim.x - 1 - blockIdx.x, bh = blockIdx.y, warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    uint32_t qa[FLASH_D / 16][4], oa[FLASH_D / 16][4];
    // Q and dO pass through the key and value tiles' space before the loop
    q.load(sk, qt * FLASH_BR, nt);
    dO.load(sv, qt * FLASH_BR, nt);
    __syncthreads();
    loadA(qa, sk, warp * 16, lane);
    loadA(oa, sv, warp * 16, lane);
    int r0 = qt * FLASH_BR + warp * 16;
    float rl[2], rd[2];
#pragma unroll
    for (int half = 0; half < 2; half++) {
        int row = r0 + flash_c_row(lane, 2 * half);
        rl[half] = row < nt ? lse[(long)bh * nt + row] : 0.0f;
        rd[half] = row < nt ? dvec[(long)bh * nt + row] : 0.0f;
    }
    float g[FLASH_D / 8][4];
    zero8(g);
    int end = flash_kv_end(qt, FLASH_BR, FLASH_BC, nt);
    for (int kt = 0; kt < end; kt++) {
        __syncthreads();
        k.load(sk, kt * FLASH_BC, nt);
        v.load(sv, kt * FLASH_BC, nt);
        __syncthreads();
        float s[8][4], dp[8][4];
        scoresAndGrads(s, dp, qa, sk, oa, sv, lane);
        bool masked = flash_tile_masked(qt, kt, FLASH_BR, FLASH_BC, nt);
#pragma unroll
        for (int n8 = 0; n8 < 8; n8++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float p = 0.0f;
                if (!masked || flash_visible(r0 + flash_c_row(lane, e), kt * FLASH_BC + n8 * 8 + flash_c_col(lane, e), nt))
                    p = exp2f(s[n8][e] * scaleLog2 - rl[e >> 1]);
                s[n8][e] = p * (dp[n8][e] - rd[e >> 1]);
            }
        times(g, s, sk, lane);
    }
    store(g, r0, nt, scale, lane);
}

extern "C" {

// flash_backward_dkdv: a block per key tile (blockIdx.x) of a head; warp w owns keys
// 16w .. 16w+15 of it and their rows of dK and dV.
__global__ void __launch_bounds__(FLASH_THREADS) flash_backward_dkdv(float *dk, float *dv,
        const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v, const __nv_bfloat16 *do16,
        const float *lse, const float *dvec, int nt, float scaleLog2, float scale) {
    long head = (long)blockIdx.y * nt * FLASH_D;
    flashBackwardDkdv(headRows{dk + head}, headRows{dv + head}, headSrc{q + head}, headSrc{k + head}, headSrc{v + head},
                      headSrc{do16 + head}, lse, dvec, nt, scaleLog2, scale);
}

// flash_backward_dq: a block per query tile (the last first) of a head; warp w owns queries
// 16w .. 16w+15 of it and their rows of dQ.
__global__ void __launch_bounds__(FLASH_THREADS) flash_backward_dq(float *dq,
        const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v, const __nv_bfloat16 *do16,
        const float *lse, const float *dvec, int nt, float scaleLog2, float scale) {
    long head = (long)blockIdx.y * nt * FLASH_D;
    flashBackwardDq(headRows{dq + head}, headSrc{q + head}, headSrc{k + head}, headSrc{v + head}, headSrc{do16 + head},
                    lse, dvec, nt, scaleLog2, scale);
}

// flash_backward_dkdv_rope16 is flash_backward_dkdv writing dK and dV as the rope path's
// gather would from its output: into k's and v's columns of the bfloat16 dqkv16
// (B,T,3C), k's rotated back by RoPE with cos and nsin = −sin (T, D/2). Bitwise
// flash_backward_dkdv then permute_backward_rope_bf16's bfloat16 output.
__global__ void __launch_bounds__(FLASH_THREADS) flash_backward_dkdv_rope16(__nv_bfloat16 *dqkv16, const float *cos, const float *nsin, int nh,
        const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v, const __nv_bfloat16 *do16,
        const float *lse, const float *dvec, int nt, float scaleLog2, float scale) {
    int bh = blockIdx.y;
    long head = (long)bh * nt * FLASH_D;
    flashBackwardDkdv(ropeRowsAt(dqkv16, 1, bh, nh, nt, cos, nsin), ropeRowsAt(dqkv16, 2, bh, nh, nt, cos, nsin),
                      headSrc{q + head}, headSrc{k + head}, headSrc{v + head}, headSrc{do16 + head}, lse, dvec, nt, scaleLog2, scale);
}

// flash_backward_dkdv_rows is flash_backward_dkdv_rope16 reading q, k and v straight from
// qkv (B,T,3C) in bfloat16 with RoPE applied on the way, as flash_forward_rows does (its
// cos and sin, and nsin for the rotation back): bitwise flash_permute_rope on qkv widened,
// then flash_backward_dkdv_rope16.
__global__ void __launch_bounds__(FLASH_THREADS) flash_backward_dkdv_rows(__nv_bfloat16 *dqkv16, const __nv_bfloat16 *qkv,
        const float *cos, const float *sin, const float *nsin, int nh, const __nv_bfloat16 *do16,
        const float *lse, const float *dvec, int nt, float scaleLog2, float scale) {
    int bh = blockIdx.y;
    flashBackwardDkdv(ropeRowsAt(dqkv16, 1, bh, nh, nt, cos, nsin), ropeRowsAt(dqkv16, 2, bh, nh, nt, cos, nsin),
                      rowSrcAt(qkv, 0, bh, nh, nt, cos, sin), rowSrcAt(qkv, 1, bh, nh, nt, cos, sin), rowSrcAt(qkv, 2, bh, nh, nt, cos, sin),
                      headSrc{do16 + (long)bh * nt * FLASH_D}, lse, dvec, nt, scaleLog2, scale);
}

// flash_backward_dq_rope16 is flash_backward_dq writing dQ into q's columns of dqkv16,
// rotated back, as flash_backward_dkdv_rope16 writes dK.
__global__ void __launch_bounds__(FLASH_THREADS) flash_backward_dq_rope16(__nv_bfloat16 *dqkv16, const float *cos, const float *nsin, int nh,
        const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v, const __nv_bfloat16 *do16,
        const float *lse, const float *dvec, int nt, float scaleLog2, float scale) {
    long head = (long)blockIdx.y * nt * FLASH_D;
    flashBackwardDq(ropeRowsAt(dqkv16, 0, blockIdx.y, nh, nt, cos, nsin), headSrc{q + head}, headSrc{k + head}, headSrc{v + head},
                    headSrc{do16 + head}, lse, dvec, nt, scaleLog2, scale);
}

// flash_backward_dq_rows is flash_backward_dq_rope16 reading q, k and v from qkv as
// flash_backward_dkdv_rows does.
__global__ void __launch_bounds__(FLASH_THREADS) flash_backward_dq_rows(__nv_bfloat16 *dqkv16, const __nv_bfloat16 *qkv,
        const float *cos, const float *sin, const float *nsin, int nh, const __nv_bfloat16 *do16,
        const float *lse, const float *dvec, int nt, float scaleLog2, float scale) {
    int bh = blockIdx.y;
    flashBackwardDq(ropeRowsAt(dqkv16, 0, bh, nh, nt, cos, nsin), rowSrcAt(qkv, 0, bh, nh, nt, cos, sin),
                    rowSrcAt(qkv, 1, bh, nh, nt, cos, sin), rowSrcAt(qkv, 2, bh, nh, nt, cos, sin),
                    headSrc{do16 + (long)bh * nt * FLASH_D}, lse, dvec, nt, scaleLog2, scale);
}

} // extern "C"
