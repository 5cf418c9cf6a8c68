#!/usr/bin/env python3
"""The flash kernels against PyTorch's SDPA, side by side.

Usage: attn_table.py FLASH_BENCH.log SDPA.jsonl

FLASH_BENCH.log is the output of the cuda package's BenchmarkFlashAttention (its
forward-ms, backward-ms and TFLOP/s metrics per micro-batch and layout: heads, the kernels
alone; rope16, with the permutation that rotates q and k; perm16, that permutation from
act16's bfloat16 qkv; rows, reading those rows and rotating on the way), SDPA.jsonl that of attn_bench.py on the same shapes in the same
call. Prints a Markdown table and, last, a line (check.sh's verdict) with the ratio of
PyTorch's time to ours (above 1: ours is faster) per layout, pass and batch; exits 1 when
a side is missing. A log without layouts (an older benchmark) reads as heads.
"""
import json
import re
import sys


def flash(path):
    out = {}
    for line in open(path, errors="replace"):
        m = re.match(r"BenchmarkFlashAttention/B=(\d+)/H=\d+/T=\d+(?:/(\w+))?(?:-\d+)?\s+\d+\s+(.*)", line)
        if m:
            metrics = dict((k, float(v)) for v, k in re.findall(r"([0-9.]+) (\S+)", m.group(3)))
            out[(int(m.group(1)), m.group(2) or "heads")] = metrics
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ours = flash(sys.argv[1])
    peer = {}
    try:
        for line in open(sys.argv[2]):
            if line.startswith("{"):
                r = json.loads(line)
                peer[r["batch"]] = r
    except (OSError, ValueError):
        pass
    both = sorted(k for k in ours if k[0] in peer)
    if not both:
        print("missing figures (flash batches %s, SDPA batches %s)" % (sorted(ours), sorted(peer)))
        sys.exit(1)
    first = peer[both[0][0]]
    print("causal attention, 12 heads of 64, T = 512, bf16, %s, PyTorch %s" % (first["device"], first["torch"]))
    print("| batch | layout | pass | flash kernels ms | TFLOP/s | SDPA ms | TFLOP/s | SDPA / flash time |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    order = {"heads": 0, "rope16": 1, "perm16": 2, "rows": 3}
    for b, layout in sorted(both, key=lambda k: (k[0], order.get(k[1], 9), k[1])):
        for p in ("forward", "backward"):
            o, t = ours[(b, layout)][p + "-ms"], peer[b][p + "_ms"]
            print("| %d | %s | %s | %.3f | %.0f | %.3f | %.0f | %.2f |" % (b, layout, p, o, ours[(b, layout)][p + "-TFLOP/s"], t, peer[b][p + "_tflops"], t / o))
            ratios.append("B=%d %s %s %.2f" % (b, layout, p, t / o))
    print("SDPA time / flash kernels' time: " + ", ".join(ratios))

if __name__ == "__main__":
    main()
