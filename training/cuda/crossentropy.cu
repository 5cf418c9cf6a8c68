// The cross-entropy's gradient, shared by the fused kernels of kernels.cu, and the online
// cross-entropy (SFSWEEP_CUDA_FAST=ce1), included by kernels.cu so that it is part of the
// one PTX: crossentropy_loss_online is crossentropy_loss in one read of the
// logits instead of two. Each thread keeps a running max m and a running sum s of
// exp(z − m) over its strided columns, rescaling s by exp(m_old − m_new) when the max
// grows (FlashAttention's online softmax, Milakov and Gimelshein 2018); the block then
// combines the threads' (m, s) pairs in blockSum's tree. The max is the exact max, so the
// stats feed crossentropy_grad and crossentropy_grad_bf16 unchanged; the sum takes other
// roundings than the two-pass sum, so the bits differ within float32's error
// (crossentropy_online_test.go, the Go mirror). The logits16 path
// (SFSWEEP_CUDA_FAST=logits16) runs the same loss, and the gradient, on bfloat16 logits.

// widen reads a value as float32: bfloat16 widens exactly, so a kernel on bfloat16 inputs
// computes what its float32 twin computes on the same values widened.
__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

// softmaxCombine merges two partial (max, sum) pairs of a row. It is commutative bit for
// bit (each term depends on its own pair and the common max), so both lanes of a shuffle
// get the same pair, and a pair with no columns (m = −∞, s = 0) adds nothing.
__device__ __forceinline__ void softmaxCombine(float &m, float &s, float m2, float s2) {
    float mx = fmaxf(m, m2);
    if (mx == -INFINITY) return;
    float a = m == mx ? s : s * expf(m - mx);
    float b = m2 == mx ? s2 : s2 * expf(m2 - mx);
    m = mx;
    s = a + b;
}

__device__ __forceinline__ void warpSoftmax(float &m, float &s) {
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        softmaxCombine(m, s, m2, s2);
    }
}


__device__ __forceinline__ void storeGrad(float *p, float g) { *p = g; }
__device__ __forceinline__ void storeGrad(__nv_bfloat16 *p, float g) { *p = __float2bfloat16_rn(g); }

// crossEntropyGrad writes the gradient of the mean loss over all rows into out (N,V) from
// the logits (N,V) of type L and the loss kernel's stats; one block per row. out may be
// the logits.
template <typename T, typename L>
__device__ void crossEntropyGrad(T *out, const L *logits, const float *stats, const int *targets, int n, int v, float inv) {
    int r = blockIdx.x;
    if (r >= n) return;
    const L *z = logits + (long)r * v;
    T *o = out + (long)r * v;
    float mx = stats[2 * r], rs = stats[2 * r + 1];
    int y = targets[r];
    for (int j = threadIdx.x; j < v; j += blockDim.x) {
        float p = expf(widen(z[j]) - mx) * rs;
        float g = p * inv;
        if (j == y) g -= inv;
        storeGrad(o + j, g);
    }
}

// ceLossOnline is crossentropy_loss_online on logits of type T.
template <typename T>
__device__ __forceinline__ void ceLossOnline(const T *logits, double *losses, float *stats, const int *targets, int n, int v) {
    __shared__ float shm[32], shs[32];
    int r = blockIdx.x;
    if (r >= n) return;
    const T *z = logits + (long)r * v;
    float m = -INFINITY, s = 0.0f;
    for (int j = threadIdx.x; j < v; j += blockDim.x) {
        float x = widen(z[j]);
        if (x > m) {
            s = s * expf(m - x) + 1.0f;
            m = x;
        } else {
            s += expf(x - m);
        }
    }
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;
    warpSoftmax(m, s);
    if (lane == 0) {
        shm[w] = m;
        shs[w] = s;
    }
    __syncthreads();
    m = lane < nw ? shm[lane] : -INFINITY;
    s = lane < nw ? shs[lane] : 0.0f;
    warpSoftmax(m, s);
    if (threadIdx.x == 0) {
        stats[2 * r] = m;
        stats[2 * r + 1] = 1.0f / s;
        losses[r] = log((double)s) + (double)m - (double)widen(z[targets[r]]);
    }
}

extern "C" {

// crossentropy_loss_online writes what crossentropy_loss writes, each row's loss
// lse(z) − z[target] in float64 to losses (N) and its max and 1/Σexp(z − max) to stats
// (N,2), reading each logit once; logits (N,V) are left as they are. One block of 512
// threads per row.
__global__ void crossentropy_loss_online(const float *logits, double *losses, float *stats, const int *targets, int n, int v) {
    ceLossOnline(logits, losses, stats, targets, n, v);
}

// crossentropy_loss_online_bf16 is crossentropy_loss_online on bfloat16 logits (N,V), as
// the head product writes them on the logits16 path: bitwise crossentropy_loss_online on
// the same values in float32.
__global__ void crossentropy_loss_online_bf16(const __nv_bfloat16 *logits, double *losses, float *stats, const int *targets, int n, int v) {
    ceLossOnline(logits, losses, stats, targets, n, v);
}

// crossentropy_grad_from_bf16 writes the gradient of the mean loss over all rows, rounded
// to bfloat16, into out (N,V) from bfloat16 logits (N,V) and the loss kernel's stats, in
// crossentropy_grad_bf16's sequence of operations: bitwise that kernel on the same values
// in float32. One block per row; out may be the logits.
__global__ void crossentropy_grad_from_bf16(__nv_bfloat16 *out, const __nv_bfloat16 *logits, const float *stats, const int *targets, int n, int v, float inv) {
    crossEntropyGrad(out, logits, stats, targets, n, v, inv);
}

} // extern "C"
