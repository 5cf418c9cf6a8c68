#!/usr/bin/env python3
"""PyTorch peer of the CUDA backend: the LLaMA of bench/torch/torch_llama.py, trained on a GPU.

The model (and its initialisation) is imported from bench/torch/torch_llama.py unchanged; this
script only moves it to cuda, picks fp32 (TF32 off) or TF32 matmuls, and times full training
steps (forward, backward, AdamW step) on uniformly random tokens. Optionally the attention is
replaced by F.scaled_dot_product_attention (--sdpa), PyTorch's fused attention, the stronger
baseline.

Usage (from the repository root, on a GPU machine):
  python3 training/cuda/testdata/torch_llama_cuda.py --batch 16 --seq 512 --steps 20
  python3 training/cuda/testdata/torch_llama_cuda.py --batch 16 --seq 512 --tf32
Prints one JSON object per run. FLOPs per step: 6·N_matmul·B·T + 12·L·T²·d·B (dense causal
attention counted in full), the formula of the CPU peer and of model.Config.FLOPsPerStep.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "torch"))
import torch_llama  # noqa: E402

CONFIGS = dict(torch_llama.CONFIGS)
CONFIGS["llama-124m"] = dict(vocab=50304, d=768, layers=12, heads=12, ctx=512, hidden=2048, batch=16)
CONFIGS["tiny-llama"] = CONFIGS["tiny"]


def sdpa_forward(self, x, cos, sin, mask):
    B, T, d = x.shape
    q, k, v = self.c_attn(x).split(d, dim=2)
    q = q.view(B, T, self.h, self.hd).transpose(1, 2)
    k = k.view(B, T, self.h, self.hd).transpose(1, 2)
    v = v.view(B, T, self.h, self.hd).transpose(1, 2)
    q = torch_llama.apply_rope(q, cos, sin)
    k = torch_llama.apply_rope(k, cos, sin)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return self.c_proj(y.transpose(1, 2).reshape(B, T, d))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", choices=sorted(CONFIGS), default="llama-124m")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--tf32", action="store_true", help="allow TF32 matmuls (default: strict fp32)")
    ap.add_argument("--sdpa", action="store_true", help="use F.scaled_dot_product_attention")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (fp32 master weights)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step")
    ap.add_argument("--peak-tflops", type=float, default=0.0, help="peak for MFU (default: by device name)")
    args = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    if args.sdpa:
        torch_llama.Attention.forward = sdpa_forward
    dev = torch.device("cuda")
    torch.manual_seed(0)
    c = dict(CONFIGS[args.config], batch=args.batch, ctx=max(args.seq, CONFIGS[args.config]["ctx"]))
    model = torch_llama.Llama(c).to(dev)
    fwd = model
    compiled = False
    if args.compile:
        try:
            fwd = torch.compile(model)
            compiled = True
        except Exception as e:  # noqa: BLE001
            print(json.dumps(dict(compile_failed=str(e)[:200])), file=sys.stderr)
    n_params = sum(p.numel() for p in model.parameters())
    n_matmul = n_params  # the tied embedding is the head's matmul
    wte = model.transformer.wte.weight
    decay = [p for p in model.parameters() if p.dim() == 2 and p is not wte]
    no_decay = [p for p in model.parameters() if p.dim() < 2 or p is wte]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8, fused=True)
    B, T, V = args.batch, args.seq, c["vocab"]
    g = torch.Generator(device=dev).manual_seed(0)

    def step():
        opt.zero_grad(set_to_none=True)
        for _ in range(args.accum):
            batch = torch.randint(0, V, (B, T + 1), generator=g, device=dev)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.bf16):
                loss = fwd(batch[:, :-1], batch[:, 1:])
            (loss / args.accum).backward()
        opt.step()
        return loss

    try:
        for _ in range(args.warmup):
            step()
    except Exception as e:  # noqa: BLE001 -- compile errors surface at the first call
        if not compiled:
            raise
        print(json.dumps(dict(compile_failed=str(e)[:200])), file=sys.stderr)
        fwd, compiled = model, False
        for _ in range(args.warmup):
            step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.steps):
        loss = step()
    end.record()
    torch.cuda.synchronize()
    sec = start.elapsed_time(end) / 1e3 / args.steps / args.accum  # per micro-batch
    L, d = c["layers"], c["d"]
    flops = 6.0 * n_matmul * B * T + 12.0 * L * T * T * d * B
    name = torch.cuda.get_device_name(0)
    peak = args.peak_tflops
    if peak == 0:
        # dense peaks from NVIDIA's H100 datasheet: FP32 67 / TF32 495 (SXM), 51 / 378 (PCIe)
        sxm = "PCIe" not in name
        # bf16 dense 989 (SXM) / 756 (PCIe)
        if args.bf16:
            peak = 989.0 if sxm else 756.0
        else:
            peak = (495.0 if sxm else 378.0) if args.tf32 else (67.0 if sxm else 51.0)
    print(json.dumps(dict(
        impl="pytorch", torch=torch.__version__, device=name, config=args.config, batch=B, seq=T,
        tf32=args.tf32, sdpa=args.sdpa, bf16=args.bf16, compiled=compiled, accum=args.accum, params=n_params, step_ms=round(sec * 1e3, 3),
        tokens_per_s=round(B * T / sec), tflops=round(flops / sec / 1e12, 2),
        mfu=round(flops / sec / 1e12 / peak, 4), peak_tflops=peak, loss=round(loss.item(), 4),
        max_mem_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2))))


if __name__ == "__main__":
    main()
