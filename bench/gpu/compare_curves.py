#!/usr/bin/env python3
"""Compare the validation-loss curves of sfsweep train results (train -json output).

Usage: compare_curves.py FP32.json BF16.json [FP32_OTHER_SEED.json]
Prints, at each evaluation, the validation loss at x of each run and the relative
difference of bf16 from fp32, and with a third run (fp32, another seed) the seed-to-seed
difference: the yardstick. The check holds when bf16's largest difference from fp32 is no
larger than the largest difference a change of seed makes (without a third run: TOL).
Exits 1 if it does not hold.
"""
import json
import sys

TOL = 0.02  # bf16 vs fp32, relative, when no other-seed run gives the yardstick


def curve(path):
    with open(path) as f:
        r = json.load(f)
    return {c["step"]: c["val"]["x"] for c in r["curves"]}, r


def main():
    runs = [curve(p) for p in sys.argv[1:]]
    (a, ra), (b, rb) = runs[0], runs[1]
    seed = runs[2][0] if len(runs) > 2 else None
    worst = worst_seed = 0.0
    print("step  fp32      bf16      |bf16-fp32|/fp32" + ("  fp32 other seed  |seed diff|/fp32" if seed else ""))
    for s in sorted(a):
        d = abs(b[s] - a[s]) / a[s]
        worst = max(worst, d)
        line = f"{s:4d}  {a[s]:.5f}  {b[s]:.5f}  {d:.2e}"
        if seed:
            ds = abs(seed[s] - a[s]) / a[s]
            worst_seed = max(worst_seed, ds)
            line += f"          {seed[s]:.5f}  {ds:.2e}"
        print(line)
    secs = f"fp32 {ra['seconds']:.1f} s, bf16 {rb['seconds']:.1f} s"
    tol = worst_seed if seed else TOL
    ok = worst <= tol
    what = "the seed-to-seed difference" if seed else "TOL"
    print(f"== curve: bf16 vs fp32 worst relative difference {worst:.2e}; tolerance {tol:.2e} ({what}): "
          f"{'holds' if ok else 'FAILS'}; {secs}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
