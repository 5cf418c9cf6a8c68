"""Schedule-Free AdamW in the form of upstream's schedulefree.AdamWScheduleFree (the
averaging weight is the largest learning rate so far, squared: lr_max = max(lr, lr_max),
weight = lr_max**2; bias-corrected second moment; weight decay at y), in float64 torch,
with the learning rate set before each step as a scheduler sets group['lr']. With c > 0,
refined SF-AdamW: c_{t+1} = min(weight/weight_sum * (1 - beta1) * C, 1) (Algorithm 2).

Reads a JSON job on stdin: {"w0": [...], "lrs": [...], "beta1", "beta2", "eps",
"weight_decay", "warmup_steps", "c", "decayed_weight": bool}, the gradient being that of
sfadamw's testGrad at y. With decayed_weight the weight is lr**2 instead (the LR of the
step, not the largest so far): what a test that tells the two apart checks against.
Writes {"x": [...], "y": [...], "z": [...]} after the last step."""
import json
import math
import sys

import torch


def grad(w):
    n = w.shape[0]
    i = torch.arange(n, dtype=torch.float64)
    g = (0.5 + (i % 5)) * w + torch.cos(w + i)
    g[:-1] += 0.1 * w[1:]
    g[1:] += 0.1 * w[:-1]
    return g


def main():
    job = json.load(sys.stdin)
    b1, b2, eps, wd = job["beta1"], job["beta2"], job["eps"], job["weight_decay"]
    warmup, C = job["warmup_steps"], job["c"]
    y = torch.tensor(job["w0"], dtype=torch.float64)
    z, x, v = y.clone(), y.clone(), torch.zeros_like(y)
    lr_max, weight_sum = -1.0, 0.0
    for k, base in enumerate(job["lrs"]):
        sched = (k + 1) / warmup if k < warmup else 1.0
        lr = base * sched
        lr_max = max(lr, lr_max)
        weight = (lr if job.get("decayed_weight") else lr_max) ** 2
        weight_sum += weight
        ckp1 = weight / weight_sum
        if C > 0:
            ckp1 = min(ckp1 * (1 - b1) * C, 1.0)
        g = grad(y)
        bc2 = 1 - b2 ** (k + 1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = v.div(bc2).sqrt().add_(eps)
        d = g / denom + wd * y
        # upstream's fused update: y <- (1-ckp1) y + ckp1 z + lr (beta1 (1-ckp1) - 1) d
        y = y.lerp(z, ckp1).add(d, alpha=lr * (b1 * (1 - ckp1) - 1))
        z = z.sub(d, alpha=lr)
        x = x.lerp(z, ckp1)
    json.dump({"x": x.tolist(), "y": y.tolist(), "z": z.tolist()}, sys.stdout)


if __name__ == "__main__":
    main()
