// embed runs encoder_backward_rows of ../embedding.cu, its source as nvcc compiles it, on
// the CPU with emu.h's model of a block. embed_test.go builds and runs it; it is no part of
// any build.
//
// Input on stdin: int32 n, c, v, grid, threads, reverse (run the blocks in reverse order);
// int32 idx (3n+2, embed.go's embedIndex); float32 demb (v,c), dout (n,c). Output on
// stdout: demb (v,c) float32 after the kernel.
#include "emu.h"

#include "../embedding.cu"

int main() {
    auto hdr = get<int32_t>(6);
    int n = hdr[0], c = hdr[1], v = hdr[2], grid = hdr[3], threads = hdr[4];
    bool rev = hdr[5] != 0;
    auto idx = get<int32_t>(3 * (size_t)n + 2);
    auto demb = get<float>((size_t)v * c), dout = get<float>((size_t)n * c);
    launch(grid, 1, threads, rev, [&] {
        encoder_backward_rows(demb.data(), dout.data(), idx.data(), n, c);
    });
    put(demb);
    return 0;
}
