// emu runs the flash attention kernels of ../flash.cu, their source as nvcc compiles it, on
// the CPU: a thread per CUDA thread, blocks one after another, __syncthreads a barrier of
// the block, and the warp's collectives (shuffles, ldmatrix, mma.sync) exchanges between
// its 32 threads as the PTX ISA defines them, with the fragment maps of flash_tiles.h
// (which package flashmath checks against the ISA's tables). An mma step adds its 16
// products exactly and rounds once onto the accumulator, and exp2f and log2f are exp2 and
// log2 in double rounded to float: the Go mirror's model (flash_mirror_test.go), so the two
// agree bit for bit where the kernels do what the mirror does. flash_emu_test.go builds and
// runs it; it is no part of any build.
//
// Input on stdin: int32 B, H, T, reverse (run the blocks in reverse order); float32
// scaleLog2, scale; qkv (B,T,3C) and dy (B,T,C) float32, C = H·64; RoPE's cos and sin
// (T,32) float32. Output on stdout: q, k, v (B,H,T,64) bfloat16, y (B,T,C) float32, y16
// bfloat16, lse (B,H,T), dvec (B,H,T), dq, dk, dv (B,H,T,64) float32; then q, k, v of
// flash_permute_rope on qkv; then D (B,H,T) float32 of flash_backward_pre on dy rounded to bfloat16 and
// widened; then dqkv (B,T,3C) bfloat16 of flash_backward_dkdv_rope16 and
// flash_backward_dq_rope16, with sin as the inverse rotation's table; then y16 of
// flash_forward writing no float32 y, and dO and D of flash_backward_pre_bf16 on the
// rounded dy and y16, and of flash_backward_pre on them widened; then y, y16, lse and
// dqkv16 of the rope16 kernels after flash_permute_rope on qkv rounded to bfloat16 and
// widened, and of the rows kernels on qkv rounded; last q, k, v of flash_permute_rope on
// qkv rounded and widened, and of flash_permute_rope_bf16 on qkv rounded.
#define FLASH_EMULATE 1
#include "emu.h"

#include "../flashmath/flash_tiles.h"

struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
struct uint4 {
    uint32_t x, y, z, w;
};
struct float2 {
    float x, y;
};
static uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { return {x, y, z, w}; }
static float2 make_float2(float x, float y) { return {x, y}; }

static __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {{rne(a)}, {rne(b)}}; }

static float emuExp2(float x) { return (float)exp2((double)x); }
static float emuLog2(float x) { return (float)log2((double)x); }
#define exp2f emuExp2
#define log2f emuLog2

// ldmatrix .x4: lane l's address is row l%8 of matrix l/8; lane l gets in register j
// elements 2(l%4), 2(l%4)+1 of row l/4 of matrix j, or of its transpose.
static void ldmatrix(uint32_t r[4], const __nv_bfloat16 *p, bool trans) {
    slot(lane())[0] = (uint64_t)(uintptr_t)p;
    warpSync();
    int g = lane() / 4, q = lane() % 4;
    for (int j = 0; j < 4; j++) {
        uint16_t h[2];
        for (int e = 0; e < 2; e++) {
            const __nv_bfloat16 *row = (const __nv_bfloat16 *)(uintptr_t)slot(8 * j + (trans ? 2 * q + e : g))[0];
            h[e] = row[trans ? g : 2 * q + e].x;
        }
        r[j] = h[0] | (uint32_t)h[1] << 16;
    }
    warpSync();
}
static void ldsm(uint32_t r[4], const __nv_bfloat16 *p) { ldmatrix(r, p, false); }
static void ldsmT(uint32_t r[4], const __nv_bfloat16 *p) { ldmatrix(r, p, true); }

static float half16(uint32_t reg, int i) { return bf((uint16_t)(reg >> (16 * (i & 1)))); }

// mma is c += a·b on one m16n8k16 tile, the warp's fragments gathered by the ISA's maps.
static void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    uint64_t *s = slot(lane());
    for (int i = 0; i < 4; i++) s[i] = a[i];
    s[4] = b0, s[5] = b1;
    warpSync();
    float A[16][16], B[16][8];
    for (int l = 0; l < WARP; l++) {
        uint64_t *o = slot(l);
        for (int i = 0; i < 8; i++) A[flash_a_row(l, i)][flash_a_col(l, i)] = half16((uint32_t)o[i / 2], i);
        for (int i = 0; i < 4; i++) B[flash_b_row(l, i)][flash_b_col(l, i)] = half16((uint32_t)o[4 + i / 2], i);
    }
    warpSync();
    for (int i = 0; i < 4; i++) {
        double sum = c[i];
        for (int k = 0; k < 16; k++) sum += (double)A[flash_c_row(lane(), i)][k] * (double)B[k][flash_c_col(lane(), i)];
        c[i] = (float)sum;
    }
}

// widen as crossentropy.cu defines it for the GPU build, which includes it before flash.cu
static float widen(float x) { return x; }
static float widen(__nv_bfloat16 h) { return __bfloat162float(h); }

#include "../flash.cu"

int main() {
    auto hdr = get<int32_t>(4);
    auto sc = get<float>(2);
    int b = hdr[0], nh = hdr[1], nt = hdr[2];
    bool rev = hdr[3] != 0;
    size_t n = (size_t)b * nh * nt * FLASH_D, rows = (size_t)b * nh * nt;
    auto qkv = get<float>(3 * n), dy = get<float>(n);
    auto cos = get<float>((size_t)nt * FLASH_D / 2), sin = get<float>((size_t)nt * FLASH_D / 2);
    std::vector<float> y(n), lse(rows), dvec(rows), dq(n), dk(n), dv(n);
    std::vector<__nv_bfloat16> qkv16(3 * n), y16(n), do16(n);
    const __nv_bfloat16 *q = qkv16.data(), *k = q + n, *v = k + n;
    int bh = b * nh;
    launch(flash_tiles((int)(n / 2), 256), 3, 256, rev, [&] { flash_permute(qkv16.data(), qkv.data(), b, nt, nh); });
    launch(flash_tiles(nt, FLASH_BR), bh, FLASH_THREADS, rev,
           [&] { flash_forward(y.data(), y16.data(), lse.data(), q, k, v, nt, nh, sc[0]); });
    launch(flash_tiles((int)rows, 8), 1, 256, rev,
           [&] { flash_backward_pre(do16.data(), dvec.data(), dy.data(), y.data(), (int)rows, nt, nh); });
    launch(flash_tiles(nt, FLASH_BC), bh, FLASH_THREADS, rev, [&] {
        flash_backward_dkdv(dk.data(), dv.data(), q, k, v, do16.data(), lse.data(), dvec.data(), nt, sc[0], sc[1]);
    });
    launch(flash_tiles(nt, FLASH_BR), bh, FLASH_THREADS, rev, [&] {
        flash_backward_dq(dq.data(), q, k, v, do16.data(), lse.data(), dvec.data(), nt, sc[0], sc[1]);
    });
    // the rope path's backward kernels, writing dqkv16 (B,T,3C) with sin as the inverse's table
    std::vector<__nv_bfloat16> dqkv16(3 * n);
    launch(flash_tiles(nt, FLASH_BC), bh, FLASH_THREADS, rev, [&] {
        flash_backward_dkdv_rope16(dqkv16.data(), cos.data(), sin.data(), nh, q, k, v, do16.data(), lse.data(), dvec.data(), nt, sc[0], sc[1]);
    });
    launch(flash_tiles(nt, FLASH_BR), bh, FLASH_THREADS, rev, [&] {
        flash_backward_dq_rope16(dqkv16.data(), cos.data(), sin.data(), nh, q, k, v, do16.data(), lse.data(), dvec.data(), nt, sc[0], sc[1]);
    });
    // qkv rounded to bfloat16 (as the act16 path's product writes it), and widened
    std::vector<__nv_bfloat16> rope16(3 * n), rope16w(3 * n), qkvb(3 * n);
    std::vector<float> qkvw(3 * n);
    for (size_t i = 0; i < qkvb.size(); i++) qkvb[i] = __float2bfloat16_rn(qkv[i]), qkvw[i] = bf(qkvb[i].x);
    launch(flash_tiles((int)(n / 4), 256), 3, 256, rev,
           [&] { flash_permute_rope(rope16.data(), qkv.data(), cos.data(), sin.data(), b, nt, nh); });
    launch(flash_tiles((int)(n / 4), 256), 3, 256, rev,
           [&] { flash_permute_rope(rope16w.data(), qkvw.data(), cos.data(), sin.data(), b, nt, nh); });
    std::vector<__nv_bfloat16> dyb(n), preW16(n);
    std::vector<float> dyw(n), preWvec(rows);
    for (size_t i = 0; i < n; i++) dyb[i] = __float2bfloat16_rn(dy[i]), dyw[i] = bf(dyb[i].x);
    launch(flash_tiles((int)rows, 8), 1, 256, rev,
           [&] { flash_backward_pre(preW16.data(), preWvec.data(), dyw.data(), y.data(), (int)rows, nt, nh); });
    put(qkv16), put(y), put(y16), put(lse), put(dvec), put(dq), put(dk), put(dv), put(rope16);
    // the act16 path's O: the forward pass writing only its bfloat16 copy, and
    // flash_backward_pre_bf16 on it, against flash_backward_pre on dy and the copy widened
    std::vector<__nv_bfloat16> yOnly16(n), preO16(n), preOW16(n);
    std::vector<float> y16w(n), preOvec(rows), preOWvec(rows);
    launch(flash_tiles(nt, FLASH_BR), bh, FLASH_THREADS, rev,
           [&] { flash_forward(nullptr, yOnly16.data(), lse.data(), q, k, v, nt, nh, sc[0]); });
    for (size_t i = 0; i < n; i++) y16w[i] = bf(y16[i].x);
    launch(flash_tiles((int)rows, 8), 1, 256, rev,
           [&] { flash_backward_pre_bf16(preO16.data(), preOvec.data(), dyb.data(), y16.data(), (int)rows, nt, nh); });
    launch(flash_tiles((int)rows, 8), 1, 256, rev,
           [&] { flash_backward_pre(preOW16.data(), preOWvec.data(), dyw.data(), y16w.data(), (int)rows, nt, nh); });
    // the act16 path with rope: the kernels reading q, k, v from the rounded qkv (B,T,3C)
    // with RoPE on the way (B), against flash_permute_rope on it widened, then the kernels on
    // the heads' layout (A); sin stands for the inverse rotation's table too
    std::vector<float> yA(n), yB(n), lseA(rows), lseB(rows), dvecA(rows), dvecB(rows);
    std::vector<__nv_bfloat16> yA16(n), yB16(n), doA(n), doB(n), dqkvA(3 * n), dqkvB(3 * n);
    const __nv_bfloat16 *qr = rope16w.data(), *kr = qr + n, *vr = kr + n;
    launch(flash_tiles(nt, FLASH_BR), bh, FLASH_THREADS, rev,
           [&] { flash_forward(yA.data(), yA16.data(), lseA.data(), qr, kr, vr, nt, nh, sc[0]); });
    launch(flash_tiles(nt, FLASH_BR), bh, FLASH_THREADS, rev,
           [&] { flash_forward_rows(yB.data(), yB16.data(), lseB.data(), qkvb.data(), cos.data(), sin.data(), nt, nh, sc[0]); });
    launch(flash_tiles((int)rows, 8), 1, 256, rev,
           [&] { flash_backward_pre(doA.data(), dvecA.data(), dy.data(), yA.data(), (int)rows, nt, nh); });
    launch(flash_tiles((int)rows, 8), 1, 256, rev,
           [&] { flash_backward_pre(doB.data(), dvecB.data(), dy.data(), yB.data(), (int)rows, nt, nh); });
    launch(flash_tiles(nt, FLASH_BC), bh, FLASH_THREADS, rev, [&] {
        flash_backward_dkdv_rope16(dqkvA.data(), cos.data(), sin.data(), nh, qr, kr, vr, doA.data(), lseA.data(), dvecA.data(), nt, sc[0], sc[1]);
    });
    launch(flash_tiles(nt, FLASH_BR), bh, FLASH_THREADS, rev, [&] {
        flash_backward_dq_rope16(dqkvA.data(), cos.data(), sin.data(), nh, qr, kr, vr, doA.data(), lseA.data(), dvecA.data(), nt, sc[0], sc[1]);
    });
    launch(flash_tiles(nt, FLASH_BC), bh, FLASH_THREADS, rev, [&] {
        flash_backward_dkdv_rows(dqkvB.data(), qkvb.data(), cos.data(), sin.data(), sin.data(), nh, doB.data(), lseB.data(), dvecB.data(), nt, sc[0], sc[1]);
    });
    launch(flash_tiles(nt, FLASH_BR), bh, FLASH_THREADS, rev, [&] {
        flash_backward_dq_rows(dqkvB.data(), qkvb.data(), cos.data(), sin.data(), sin.data(), nh, doB.data(), lseB.data(), dvecB.data(), nt, sc[0], sc[1]);
    });
    put(preWvec), put(dqkv16);
    put(yOnly16), put(preO16), put(preOvec), put(preOW16), put(preOWvec);
    put(yA), put(yA16), put(lseA), put(dqkvA), put(yB), put(yB16), put(lseB), put(dqkvB);
    std::vector<__nv_bfloat16> rope16b(3 * n);
    launch(flash_tiles((int)(n / 4), 256), 3, 256, rev,
           [&] { flash_permute_rope_bf16(rope16b.data(), qkvb.data(), cos.data(), sin.data(), b, nt, nh); });
    put(rope16w), put(rope16b);
    return 0;
}
