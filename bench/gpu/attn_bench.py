#!/usr/bin/env python3
"""PyTorch's causal attention at its best, the peer of the cuda package's flash kernels.

Usage: attn_bench.py [--heads 12] [--seq 512] [--batch 16 32] [--iters 20]

F.scaled_dot_product_attention in bfloat16 with is_causal on (B, H, T, 64), the kernel
PyTorch picks (flash attention on an H100), timed with CUDA events: the forward pass, and
the backward pass alone (one forward's graph kept, its gradients taken again on each
run), the median of --iters runs after a warm-up. FLOPs as BenchmarkFlashAttention
counts them (flashFLOPs): 4·B·H·T²·D/2 for the forward, 2.5 times that for the backward.
One JSON line per batch size.
"""
import argparse
import json

import torch
import torch.nn.functional as F


def timed(fn, iters):
    """The median milliseconds of fn over iters runs, after three warm-up runs."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, nargs="+", default=[16, 32])
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    d = 64
    torch.manual_seed(1)
    for b in args.batch:
        shape = (b, args.heads, args.seq, d)
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        do = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
        fwd = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), args.iters)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        bwd = timed(lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True), args.iters)
        flops = 4 * b * args.heads * args.seq * args.seq * d / 2
        print(json.dumps({"batch": b, "heads": args.heads, "seq": args.seq, "forward_ms": fwd, "backward_ms": bwd,
                          "forward_tflops": flops / fwd / 1e9, "backward_tflops": 2.5 * flops / bwd / 1e9,
                          "torch": torch.__version__, "device": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    main()
