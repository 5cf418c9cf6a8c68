#!/usr/bin/env python3
"""The flash kernels against PyTorch's SDPA, side by side.

Usage: attn_table.py FLASH_BENCH.log SDPA.jsonl

FLASH_BENCH.log is the output of the cuda package's BenchmarkFlashAttention (its
forward-ms, backward-ms and TFLOP/s metrics per micro-batch), SDPA.jsonl that of
attn_bench.py on the same shapes in the same call. Prints a Markdown table and, last, a
line (check.sh's verdict) with the ratio of PyTorch's time to ours (above 1: ours is faster) per pass and
batch; exits 1 when a side is missing.
"""
import json
import re
import sys


def flash(path):
    out = {}
    for line in open(path, errors="replace"):
        m = re.match(r"BenchmarkFlashAttention/B=(\d+)/\S+\s+\d+\s+(.*)", line)
        if m:
            metrics = dict((k, float(v)) for v, k in re.findall(r"([0-9.]+) (\S+)", m.group(2)))
            out[int(m.group(1))] = metrics
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
    both = sorted(set(ours) & set(peer))
    if not both:
        print("missing figures (flash batches %s, SDPA batches %s)" % (sorted(ours), sorted(peer)))
        sys.exit(1)
    dev = peer[both[0]]["device"]
    print("causal attention, 12 heads of 64, T = 512, bf16, %s, PyTorch %s" % (dev, peer[both[0]]["torch"]))
    print("| batch | pass | flash kernels ms | TFLOP/s | SDPA ms | TFLOP/s | SDPA / flash time |")
    print("|---|---|---|---|---|---|---|")
    ratios = []
    for b in both:
        for p in ("forward", "backward"):
            o, t = ours[b][p + "-ms"], peer[b][p + "_ms"]
            print("| %d | %s | %.3f | %.0f | %.3f | %.0f | %.2f |" % (b, p, o, ours[b][p + "-TFLOP/s"], t, peer[b][p + "_tflops"], t / o))
            ratios.append("B=%d %s %.2f" % (b, p, t / o))
    print("SDPA time / flash kernels' time: " + ", ".join(ratios))


if __name__ == "__main__":
    main()
