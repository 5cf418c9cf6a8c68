#!/usr/bin/env python3
"""Side-by-side training speed: sfsweep train's log against the PyTorch peer's runs.

Usage: speed_table.py SFSWEEP_TRAIN.log TORCH.json [TORCH.json ...]
The sfsweep figure is the last tokens/s its progress line printed: steady state (the
attempt's first step left out), optimizer steps only, the final evaluation excluded. The
peer is run several times in the same call (its figure moves by up to 25% between runs):
each run is listed and the ratio is against the best. FLOPs per token are the peer's
(6·N_matmul + 12·L·T·d, as model.Config.FLOPsPerStep), so both MFUs are on one formula,
against the GPU's dense bf16 peak (H100 SXM: 989 TFLOP/s).
"""
import json
import re
import sys


def peer_run(path):
    """The last JSON line of a peer's output, or None."""
    run = None
    try:
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                run = json.loads(line)
    except (OSError, ValueError):
        return None
    return run if run and "tokens_per_s" in run else None


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    log = open(sys.argv[1], errors="replace").read()
    rates = re.findall(r"([0-9]+) tok/s", log)
    peers = [r for r in map(peer_run, sys.argv[2:]) if r]
    if not rates or not peers:
        print("== speed: missing figures (sfsweep rates %d, peer runs %d of %d)" % (len(rates), len(peers), len(sys.argv) - 2))
        sys.exit(1)
    ours = float(rates[-1])
    best = max(peers, key=lambda r: r["tokens_per_s"])
    flops_tok = best["tflops"] * 1e12 / best["tokens_per_s"]
    peak = best["peak_tflops"]
    name = "PyTorch %s (bf16 autocast%s%s, fused AdamW)" % (best["torch"], ", SDPA" if best["sdpa"] else "",
                                                         ", torch.compile" if best["compiled"] else "")
    rows = [("sfsweep train (cuda, bf16), steady state", ours)]
    rows += [("%s, run %d of %d%s" % (name, i + 1, len(peers), " (best)" if r is best else ""), r["tokens_per_s"])
             for i, r in enumerate(peers)]
    print(f"llama-124m, T = 512, batch 16 x 512 x {best['accum']} micro-batches, {best['device']}")
    print("| engine | tokens/s | TFLOP/s | MFU (bf16 peak %g) |" % peak)
    print("|---|---|---|---|")
    for label, tps in rows:
        print(f"| {label} | {tps:,.0f} | {tps * flops_tok / 1e12:.1f} | {tps * flops_tok / 1e12 / peak:.3f} |")
    print(f"== speed: sfsweep / PyTorch (best of {len(peers)}) = {ours / best['tokens_per_s']:.3f}")


if __name__ == "__main__":
    main()
