#!/usr/bin/env python3
"""Side-by-side training speed: sfsweep train's log against the PyTorch peer's JSON.

Usage: speed_table.py SFSWEEP_TRAIN.log TORCH.json
The sfsweep figure is the last tokens/s its progress line printed (optimizer steps only;
the final evaluation excluded). FLOPs per token are the peer's (6·N_matmul + 12·L·T·d, as
model.Config.FLOPsPerStep), so both MFUs are on one formula, against the GPU's dense bf16
peak (H100 SXM: 989 TFLOP/s).
"""
import json
import re
import sys


def main():
    log = open(sys.argv[1], errors="replace").read()
    rates = re.findall(r"([0-9]+) tok/s", log)
    peer = {}
    for line in open(sys.argv[2]):
        line = line.strip()
        if line.startswith("{"):
            peer = json.loads(line)
    if not rates or "tokens_per_s" not in peer:
        print("== speed: missing figures (sfsweep rates %d, peer %s)" % (len(rates), bool(peer)))
        sys.exit(1)
    ours = float(rates[-1])
    flops_tok = peer["tflops"] * 1e12 / peer["tokens_per_s"]
    peak = peer["peak_tflops"]
    rows = [("sfsweep train (cuda, bf16)", ours), (
        "PyTorch %s (bf16 autocast%s%s, fused AdamW)" % (peer["torch"], ", SDPA" if peer["sdpa"] else "",
                                                        ", torch.compile" if peer["compiled"] else ""), peer["tokens_per_s"])]
    print(f"llama-124m, T = 512, batch 16 x 512 x {peer['accum']} micro-batches, {peer['device']}")
    print("| engine | tokens/s | TFLOP/s | MFU (bf16 peak %g) |" % peak)
    print("|---|---|---|---|")
    for name, tps in rows:
        print(f"| {name} | {tps:,.0f} | {tps * flops_tok / 1e12:.1f} | {tps * flops_tok / 1e12 / peak:.3f} |")
    print(f"== speed: sfsweep / PyTorch = {ours / peer['tokens_per_s']:.3f}")


if __name__ == "__main__":
    main()
