// emu.h is the CPU's model of a CUDA block that the emulators of the kernels share
// (emu.cc: flash.cu; rows.cc: rmsnorm.cu and crossentropy.cu): a thread per CUDA thread,
// blocks one after another, __syncthreads a barrier of the block, a warp's shuffle an
// exchange between its 32 threads, and bfloat16 rounding to nearest even.
#pragma once

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(n)
#define WARP 32

struct __nv_bfloat16 {
    uint16_t x;
};
static inline uint16_t rne(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return {rne(f)}; }
static inline float bf(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static inline float __bfloat162float(__nv_bfloat16 h) { return bf(h.x); }

struct dim3 {
    int x, y, z;
};
thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;

// Block is what the threads of a block share: its barrier, one per warp, and a slot per
// lane for a collective's operands.
struct Block {
    std::barrier<> all;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    std::vector<uint64_t> slots; // [warp][lane][8]
    explicit Block(int threads) : all(threads), slots((size_t)threads * 8) {
        for (int w = 0; w < threads / WARP; w++) warps.push_back(std::make_unique<std::barrier<>>(WARP));
    }
};
thread_local Block *blk;

static inline void __syncthreads() { blk->all.arrive_and_wait(); }

static inline int lane() { return threadIdx.x % WARP; }
static inline void warpSync() { blk->warps[threadIdx.x / WARP]->arrive_and_wait(); }
// slot is lane l's operands in the calling thread's warp.
static inline uint64_t *slot(int l) { return &blk->slots[((size_t)(threadIdx.x / WARP) * WARP + l) * 8]; }

static inline float __shfl_xor_sync(unsigned, float v, int o) {
    uint32_t u;
    memcpy(&u, &v, 4);
    slot(lane())[0] = u;
    warpSync();
    u = (uint32_t)slot(lane() ^ o)[0];
    warpSync();
    memcpy(&v, &u, 4);
    return v;
}

static inline float warpSum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// launch runs kernel on a grid of gx × gy blocks of threads threads, block after block.
template <class F>
static inline void launch(int gx, int gy, int threads, bool reverse, F kernel) {
    blockDim = {threads, 1, 1}, gridDim = {gx, gy, 1};
    std::vector<dim3> order;
    for (int y = 0; y < gy; y++)
        for (int x = 0; x < gx; x++) order.push_back({x, y, 0});
    if (reverse) std::reverse(order.begin(), order.end());
    for (dim3 b : order) {
        Block block(threads);
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; t++)
            ts.emplace_back([&, t] {
                threadIdx = {t, 0, 0};
                blockIdx = b;
                blk = &block;
                kernel();
            });
        for (auto &t : ts) t.join();
    }
}

template <class T>
static inline std::vector<T> get(size_t n) {
    std::vector<T> x(n);
    if (fread(x.data(), sizeof(T), n, stdin) != n) {
        fprintf(stderr, "emu: short input\n");
        exit(2);
    }
    return x;
}

template <class T>
static inline void put(const std::vector<T> &x) { fwrite(x.data(), sizeof(T), x.size(), stdout); }

