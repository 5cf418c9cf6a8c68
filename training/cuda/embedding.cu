// The embedding gradient from the rows of each token (SFSWEEP_CUDA_FAST=embed), included by
// kernels.cu; flashemu/embed.cc runs it on the CPU.
extern "C" {

// encoder_backward_rows adds dout into the embedding gradient as encoder_backward does, but
// reads only the rows of each token, which the host lists (embed.go): idx (3n+2) holds
// rows (n), the micro-batch's rows grouped by token and ascending within a token; ids (n),
// the distinct tokens; off (n+1), where token u's rows are rows[off[u]..off[u+1]); and, at
// 3n+1, the number of distinct tokens, read here so that a captured graph's fixed grid
// serves any micro-batch. Block u (striding by the grid) sums token ids[u]'s rows into its
// row of demb, column by column, in row order: the additions of encoder_backward, in its
// order, so the same bits, without every thread scanning every token.
// demb (V,C), dout (N,C).
__global__ void encoder_backward_rows(float *demb, const float *dout, const int *idx, int n, int c) {
    const int *rows = idx, *ids = idx + n, *off = idx + 2 * n;
    int count = idx[3 * n + 1];
    for (int u = blockIdx.x; u < count; u += gridDim.x) {
        float *d = demb + (long)ids[u] * c;
        int from = off[u], to = off[u + 1];
        for (int j = threadIdx.x; j < c; j += blockDim.x) {
            float acc = d[j];
            for (int k = from; k < to; k++) acc += dout[(long)rows[k] * c + j];
            d[j] = acc;
        }
    }
}

} // extern "C"
