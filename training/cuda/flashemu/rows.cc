// rows runs the row kernels of ../rmsnorm.cu (RMSNorm's backward pass in one kernel) and
// ../crossentropy.cu (the online cross-entropy), their source as nvcc compiles it, on the
// CPU with emu.h's model of a block. expf is exp in double rounded to float, the Go
// mirrors' model (crossentropy_online_test.go), so kernels and mirrors agree bit for bit
// where the kernels do what the mirrors do. rows_emu_test.go builds and runs it; it is no
// part of any build.
//
// Input on stdin: int32 N, C, threads, reverse (run the blocks in reverse order), NCE, V;
// float32 dx (N,C), dout (N,C), x (N,C), w (C), rstd (N), logits (NCE,V); int32 targets
// (NCE). Output on stdout: dx (N,C) and part (chunks,C) float32 of rmsnorm_backward_fused;
// dx (N,C) float32, dx16 (N,C) bfloat16 and part of rmsnorm_backward_fused_bf16; losses
// (NCE) float64 and stats (NCE,2) float32 of crossentropy_loss_online; then the logits
// rounded to bfloat16: losses and stats of crossentropy_loss_online_bf16 and the gradient
// (NCE,V) bfloat16 of crossentropy_grad_from_bf16, written over the logits; then dx, dx16
// and part of rmsnorm_backward_fused_from_bf16 on dout rounded to bfloat16, and of
// rmsnorm_backward_fused_bf16 on those values widened.
#include "emu.h"

using std::min;

static inline float emuExp(float x) { return (float)exp((double)x); }
#define expf emuExp

#include "../crossentropy.cu"
#include "../rmsnorm.cu"

int main() {
    auto hdr = get<int32_t>(6);
    int n = hdr[0], c = hdr[1], threads = hdr[2], nce = hdr[4], v = hdr[5];
    bool rev = hdr[3] != 0;
    size_t nc = (size_t)n * c;
    int chunks = (n + NORM_ROWS - 1) / NORM_ROWS;
    auto dx = get<float>(nc), dout = get<float>(nc), x = get<float>(nc), w = get<float>(c), rstd = get<float>(n);
    auto logits = get<float>((size_t)nce * v);
    auto targets = get<int32_t>(nce);

    std::vector<float> dx1 = dx, part1((size_t)chunks * c), dx2 = dx, part2((size_t)chunks * c);
    std::vector<__nv_bfloat16> dx16(nc);
    launch(chunks, 1, threads, rev, [&] {
        rmsnorm_backward_fused(dx1.data(), part1.data(), dout.data(), x.data(), w.data(), rstd.data(), n, c);
    });
    launch(chunks, 1, threads, rev, [&] {
        rmsnorm_backward_fused_bf16(dx2.data(), dx16.data(), part2.data(), dout.data(), x.data(), w.data(), rstd.data(), n, c);
    });

    // on dout rounded to bfloat16: rmsnorm_backward_fused_from_bf16, and
    // rmsnorm_backward_fused_bf16 on the same values widened
    std::vector<__nv_bfloat16> dout16(nc);
    std::vector<float> doutw(nc);
    for (size_t i = 0; i < nc; i++) dout16[i] = __float2bfloat16_rn(dout[i]), doutw[i] = bf(dout16[i].x);
    std::vector<float> dx3 = dx, part3((size_t)chunks * c), dx4 = dx, part4((size_t)chunks * c);
    std::vector<__nv_bfloat16> dx3h(nc), dx4h(nc);
    launch(chunks, 1, threads, rev, [&] {
        rmsnorm_backward_fused_from_bf16(dx3.data(), dx3h.data(), part3.data(), dout16.data(), x.data(), w.data(), rstd.data(), n, c);
    });
    launch(chunks, 1, threads, rev, [&] {
        rmsnorm_backward_fused_bf16(dx4.data(), dx4h.data(), part4.data(), doutw.data(), x.data(), w.data(), rstd.data(), n, c);
    });

    std::vector<double> losses(nce);
    std::vector<float> stats(2 * (size_t)nce);
    launch(nce, 1, 512, rev, [&] {
        crossentropy_loss_online(logits.data(), losses.data(), stats.data(), targets.data(), nce, v);
    });
    std::vector<__nv_bfloat16> logits16((size_t)nce * v);
    for (size_t i = 0; i < logits16.size(); i++) logits16[i] = __float2bfloat16_rn(logits[i]);
    std::vector<double> losses16(nce);
    std::vector<float> stats16(2 * (size_t)nce);
    launch(nce, 1, 512, rev, [&] {
        crossentropy_loss_online_bf16(logits16.data(), losses16.data(), stats16.data(), targets.data(), nce, v);
    });
    float inv = (float)(1.0 / nce);
    launch(nce, 1, 512, rev, [&] {
        crossentropy_grad_from_bf16(logits16.data(), logits16.data(), stats16.data(), targets.data(), nce, v, inv);
    });
    put(dx1), put(part1), put(dx2), put(dx16), put(part2), put(losses), put(stats);
    put(losses16), put(stats16), put(logits16);
    put(dx3), put(dx3h), put(part3), put(dx4), put(dx4h), put(part4);
    return 0;
}
