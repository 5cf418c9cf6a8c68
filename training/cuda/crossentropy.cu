// The online cross-entropy (SFSWEEP_CUDA_FAST=ce1), included by kernels.cu so that it is
// part of the one PTX: crossentropy_loss_online is crossentropy_loss in one read of the
// logits instead of two. Each thread keeps a running max m and a running sum s of
// exp(z − m) over its strided columns, rescaling s by exp(m_old − m_new) when the max
// grows (FlashAttention's online softmax, Milakov and Gimelshein 2018); the block then
// combines the threads' (m, s) pairs in blockSum's tree. The max is the exact max, so the
// stats feed crossentropy_grad and crossentropy_grad_bf16 unchanged; the sum takes other
// roundings than the two-pass sum, so the bits differ within float32's error
// (crossentropy_online_test.go, the Go mirror).

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

extern "C" {

// crossentropy_loss_online writes what crossentropy_loss writes, each row's loss
// lse(z) − z[target] in float64 to losses (N) and its max and 1/Σexp(z − max) to stats
// (N,2), reading each logit once; logits (N,V) are left as they are. One block of 512
// threads per row.
__global__ void crossentropy_loss_online(const float *logits, double *losses, float *stats, const int *targets, int n, int v) {
    __shared__ float shm[32], shs[32];
    int r = blockIdx.x;
    if (r >= n) return;
    const float *z = logits + (long)r * v;
    float m = -INFINITY, s = 0.0f;
    for (int j = threadIdx.x; j < v; j += blockDim.x) {
        float x = z[j];
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
        losses[r] = log((double)s) + (double)m - (double)z[targets[r]];
    }
}

} // extern "C"
