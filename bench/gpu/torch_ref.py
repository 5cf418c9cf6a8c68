#!/usr/bin/env python3
"""The cuda backend's attention and cross-entropy kernels against PyTorch on the same inputs.

Usage: torch_ref.py DIR

DIR holds one folder per case, written by the cuda package's tests: a case.json naming
the case's kind, its sizes and its tensors' files (raw little-endian: f32, f64, i32, or
bf16 as the 16 high bits of a float32), the inputs and what the kernels computed.

Each output is compared with two things computed here, by PyTorch and not by the Go code:
- the truth: the same mathematics in float64 on the very inputs the kernels read
  (bfloat16 inputs widened exactly), its gradients by autograd;
- the peer, where this PyTorch has it: F.scaled_dot_product_attention on the GPU in
  bfloat16 (its flash kernel, the one the speed peer runs), and F.cross_entropy in float32
  with its gradient rounded as the kernel's is.
The error of a tensor is max|x - truth| / max|truth| (at least 1e-3: with T = 1, dQ and dK
are zero); of the losses, max |x - truth| / max(1, |truth|) over rows; the logits'
gradient is also checked element by element, max |x - truth| / (|truth| + 1e-6 inv) (the
float32 step of p - 1 near 1, scaled), so that a small probability cannot go wrong
unseen beside the large ones. A tensor passes
when its error is within the tolerance of its kind (the cuda tests' bounds) and, where the
peer ran, within twice the peer's own error or a quarter of the tolerance, whichever is
larger: a kernel inside its bound but far less accurate than the field's own kernel
fails too. Each tensor gives one line; the exit status is 1 if any failed.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

# the cuda package's bounds: flashTolO and flashTolGrad for attention against float64;
# the cross-entropy's losses within 1e-5, a float32 gradient within 1e-5 and a bfloat16
# one within one bfloat16 step (2^-8), relative to its scale; element by element, float32's
# exp of z - max, whose rounding of the difference moves p by up to |z - max| float32
# steps (120 of them in the test rows with an outlier), within 2e-5, and bfloat16 within
# its unit roundoff (2^-8: 8 significant bits) of the float32 value, that 2e-5 included
TOL = {"o": 4e-3, "dq": 1e-2, "dk": 1e-2, "dv": 1e-2, "lse": 1e-4, "loss": 1e-5, "grad/f32": 1e-5, "grad/bf16": 2.0 ** -8,
       "elem/f32": 2e-5, "elem/bf16": 2.0 ** -8 * (1 + 2e-5) + 2e-5}

DTYPES = {"f32": (torch.float32, 4), "f64": (torch.float64, 8), "i32": (torch.int32, 4), "bf16": (torch.bfloat16, 2)}


def load(folder, meta, name):
    """The tensor name of a case, flat, in its stored type."""
    dtype, size = DTYPES[meta["tensors"][name]]
    with open(os.path.join(folder, name + ".bin"), "rb") as f:
        raw = bytearray(f.read())
    if len(raw) % size:
        raise ValueError("%s/%s.bin: %d bytes is not a whole number of %s" % (folder, name, len(raw), meta["tensors"][name]))
    if not raw:
        return torch.zeros(0, dtype=dtype)
    return torch.frombuffer(raw, dtype=dtype).clone()


def scaled_err(x, truth):
    x, truth = x.double().flatten(), truth.double().flatten()
    if truth.numel() == 0:
        return 0.0
    return ((x - truth).abs().max() / max(truth.abs().max().item(), 1e-3)).item()


def elem_err(x, truth, floor):
    x, truth = x.double().flatten(), truth.double().flatten()
    return ((x - truth).abs() / (truth.abs() + floor)).max().item()


def loss_err(x, truth):
    x, truth = x.double().flatten(), truth.double().flatten()
    return ((x - truth).abs() / truth.abs().clamp(min=1)).max().item()


class Verdicts:
    def __init__(self):
        self.failed = []

    def check(self, case, name, kind, ours, peer):
        tol = TOL[kind]
        ok = ours <= tol
        line = "%s %s: %.3g against float64 (tolerance %.3g)" % (case, name, ours, tol)
        if ok and peer is not None:
            bound = max(2 * peer, tol / 4)
            ok = ours <= bound
            line += ", PyTorch's %.3g (bound %.3g)" % (peer, bound)
        elif peer is None:
            line += ", no peer here"
        print(("ok   " if ok else "FAIL ") + line)
        if not ok:
            self.failed.append("%s %s" % (case, name))


def peer_device():
    return "cuda" if torch.cuda.is_available() else None


def causal(q, k, v):
    """Causal attention in the precision of q, k, v, heads on the first axis, and the
    log-sum-exp of each row in base 2."""
    t, d = q.shape[1], q.shape[2]
    s = q @ k.transpose(1, 2) / math.sqrt(d)
    s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v, torch.logsumexp(s, dim=-1) / math.log(2)


def attention(folder, meta, v):
    bh, t, d = meta["bh"], meta["t"], meta["d"]
    shape = (bh, t, d)
    q, k, vv = (load(folder, meta, n).view(shape) for n in ("q", "k", "v"))
    do = load(folder, meta, "do").view(shape)
    ours = {n: load(folder, meta, n).view(shape) for n in ("o", "dq", "dk", "dv")}
    lse = load(folder, meta, "lse").view(bh, t)
    x = [a.double().requires_grad_() for a in (q, k, vv)]
    o, lse64 = causal(*x)
    o.backward(do.double())
    truth = {"o": o.detach(), "dq": x[0].grad, "dk": x[1].grad, "dv": x[2].grad}
    peer = {}
    dev = peer_device()
    if dev and hasattr(F, "scaled_dot_product_attention"):
        y = [a.to(torch.bfloat16).to(dev).unsqueeze(0).requires_grad_() for a in (q, k, vv)]
        op = F.scaled_dot_product_attention(*y, is_causal=True)
        op.backward(do.to(torch.bfloat16).to(dev).unsqueeze(0))
        got = {"o": op.detach(), "dq": y[0].grad, "dk": y[1].grad, "dv": y[2].grad}
        peer = {n: scaled_err(got[n].squeeze(0).cpu(), truth[n]) for n in got}
    case = "attention %s (BH %d, T %d)" % (meta["name"], bh, t)
    for n in ("o", "dq", "dk", "dv"):
        v.check(case, n, n, scaled_err(ours[n], truth[n]), peer.get(n))
    v.check(case, "lse", "lse", loss_err(lse, lse64.detach()), None)


def crossentropy(folder, meta, v):
    n, vocab, inv = meta["n"], meta["v"], meta["inv"]
    z = load(folder, meta, "logits").view(n, vocab)
    y = load(folder, meta, "targets").long()
    losses = load(folder, meta, "losses")
    grad = load(folder, meta, "grad").view(n, vocab)
    x = z.double().requires_grad_()
    truth = F.cross_entropy(x, y, reduction="none")
    (truth.sum() * inv).backward()
    gtype = meta["tensors"]["grad"]
    dev = peer_device() or "cpu"
    zp = z.float().to(dev).requires_grad_()
    lp = F.cross_entropy(zp, y.to(dev), reduction="none")
    (lp.sum() * inv).backward()
    gp = zp.grad.cpu()
    if grad.dtype == torch.bfloat16:
        gp = gp.to(torch.bfloat16)
    case = "cross-entropy %s (N %d, V %d, logits %s)" % (meta["name"], n, vocab, meta["tensors"]["logits"])
    v.check(case, "loss", "loss", loss_err(losses, truth.detach()), loss_err(lp.detach().cpu(), truth.detach()))
    v.check(case, "grad", "grad/" + gtype, scaled_err(grad, x.grad), scaled_err(gp, x.grad))
    floor = 1e-6 * inv
    v.check(case, "grad by element", "elem/" + gtype, elem_err(grad, x.grad, floor), elem_err(gp, x.grad, floor))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    v = Verdicts()
    cases = sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "case.json")))
    if not cases:
        sys.exit("torch_ref: no case.json under %s" % root)
    dev = peer_device()
    print("PyTorch %s, peer on %s" % (torch.__version__, torch.cuda.get_device_name(0) if dev else "the CPU (no GPU)"))
    for d in cases:
        folder = os.path.join(root, d)
        with open(os.path.join(folder, "case.json")) as f:
            meta = json.load(f)
        meta.setdefault("name", d)
        check = {"attention": attention, "crossentropy": crossentropy}.get(meta.get("kind"))
        if check is None:
            sys.exit("torch_ref: %s/case.json: kind = %r: want attention or crossentropy" % (folder, meta.get("kind")))
        check(folder, meta, v)
    if v.failed:
        print("== torch: %d failed: %s" % (len(v.failed), "; ".join(v.failed)))
        sys.exit(1)
    print("== torch: all %d cases within bounds" % len(cases))


if __name__ == "__main__":
    main()
