#!/usr/bin/env python3
"""Trains the LLaMA of bench/torch/torch_llama.py with SF-AdamW, refined SF-AdamW or AdamW.

The first part of sfsweep's reference PyTorch trainer: the model, the optimizers of
sfadamw_torch.py, and the token files of `sfsweep data` (DIR/train.bin and DIR/val.bin,
flat little-endian uint16) or, without --data, uniformly random tokens. Parameters come as
W&B passes them (--key=value), with the names of sfsweep's run config: the optimizer's
fields (lr, beta1, c, warmup_frac, schedule, ...), steps, micro_batch, seq_len, eval_every,
eval_seqs, and the model card's dim, layers, heads, hidden, vocab, context.

Each evaluation prints one JSON line, {"step", "train_loss", "val_loss", "lr"}; SF-AdamW is
evaluated at x, where the paper evaluates it. Not here yet: resuming from a checkpoint, the
decay probe and what sfsweep passes in the environment.

    python3 train.py --optimizer=sfadamw --lr=2e-3 --beta1=0.95 --c=200 --steps=200 --data=DIR
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

import sfadamw_torch as sf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "torch"))
from torch_llama import Llama  # noqa: E402  (the model sfsweep's tests already check)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # the optimizer, as training.OptimizerConfig (unset values take its defaults)
    ap.add_argument("--optimizer", choices=("sfadamw", "adamw"), default="sfadamw")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--beta1", type=float, default=0.95)
    ap.add_argument("--beta2", type=float, default=0.99)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight_decay", type=float, default=0.1)
    ap.add_argument("--c", type=float, default=0.0, help="refined SF-AdamW's C; 0 is vanilla")
    ap.add_argument("--grad_clip", type=float, default=None, help="default 1.0 for adamw, 0 (off) for sfadamw")
    ap.add_argument("--warmup_frac", type=float, default=0.05)
    ap.add_argument("--schedule", choices=sf.SCHEDULES, default="cosine", help="adamw only")
    ap.add_argument("--final_frac", type=float, default=0.1, help="adamw cosine: final lr / peak")
    ap.add_argument("--decay_frac", type=float, default=0.0, help="adamw wsd: decay branch / steps")
    # the loop
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--micro_batch", type=int, default=16)
    ap.add_argument("--seq_len", type=int, default=0, help="default the model's context")
    ap.add_argument("--eval_every", type=int, default=0, help="0: only at the end")
    ap.add_argument("--eval_seqs", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    # the model (the "tiny" preset of torch_llama.py) and the data
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=344)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--data", default="", help="directory with train.bin and val.bin; none: random tokens")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    return ap.parse_args(argv)


def make_optimizer(a, params):
    """Returns the optimizer as sfsweep's engine makes it from the same run config: warmup
    and the WSD branch in whole steps of the run, weight decay on every parameter."""
    warmup = int(a.warmup_frac * a.steps)
    if a.optimizer == "sfadamw":
        clip = 0.0 if a.grad_clip is None else a.grad_clip
        return sf.SFAdamW(params, lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps, weight_decay=a.weight_decay,
                          warmup_steps=warmup, c=a.c, grad_clip=clip)
    decay_steps = max(1, int(a.decay_frac * a.steps))
    schedule = sf.Schedule(a.schedule, a.lr, warmup_steps=warmup, total_steps=a.steps, final_frac=a.final_frac,
                           decay_start=a.steps - decay_steps, decay_steps=decay_steps)
    clip = 1.0 if a.grad_clip is None else a.grad_clip
    return sf.AdamW(params, schedule, betas=(a.beta1, a.beta2), eps=a.eps, weight_decay=a.weight_decay,
                    grad_clip=clip)


class Tokens:
    """Windows of seq_len+1 tokens from one split (a token file, or random tokens)."""

    def __init__(self, data, split, vocab, seq_len, seed):
        if data:
            self.tokens = np.fromfile(os.path.join(data, split + ".bin"), dtype="<u2")
            if self.tokens.size and int(self.tokens.max()) >= vocab:
                raise SystemExit(f"{split}.bin has token {int(self.tokens.max())}: --vocab={vocab} is too small")
        else:
            rng = np.random.default_rng(seed)
            self.tokens = rng.integers(0, vocab, size=1 << 16, dtype=np.uint16)
        if self.tokens.size <= seq_len:
            raise SystemExit(f"{split}: {self.tokens.size} tokens, want more than seq_len = {seq_len}")
        self.seq_len = seq_len
        self.gen = torch.Generator().manual_seed(seed)

    def batch(self, rows, device):
        """Returns rows windows at random places, as (inputs, targets)."""
        starts = torch.randint(0, self.tokens.size - self.seq_len, (rows,), generator=self.gen)
        return self._windows(starts.tolist(), device)

    def fixed(self, first, rows, count, device):
        """Returns windows first..first+rows-1 of count windows spread evenly over the split,
        so that every evaluation sees the same tokens."""
        stride = max(1, (self.tokens.size - self.seq_len - 1) // count)
        span = self.tokens.size - self.seq_len
        return self._windows([(first + i) * stride % span for i in range(rows)], device)

    def _windows(self, starts, device):
        w = torch.stack([torch.from_numpy(self.tokens[s:s + self.seq_len + 1].astype(np.int64)) for s in starts])
        w = w.to(device)
        return w[:, :-1], w[:, 1:]


@torch.no_grad()
def evaluate(model, opt, val, a):
    """Mean validation loss over eval_seqs sequences; SF-AdamW's parameters are x meanwhile."""
    if isinstance(opt, sf.SFAdamW):
        opt.eval()
    model.eval()
    total, seqs = 0.0, 0
    while seqs < a.eval_seqs:
        rows = min(a.micro_batch, a.eval_seqs - seqs)
        idx, tgt = val.fixed(seqs, rows, a.eval_seqs, a.device)
        total += model(idx, tgt).item() * rows
        seqs += rows
    model.train()
    if isinstance(opt, sf.SFAdamW):
        opt.train()
    return total / seqs


def main(argv):
    a = parse_args(argv)
    a.seq_len = a.seq_len or a.context
    if a.seq_len > a.context:
        raise SystemExit(f"seq_len = {a.seq_len}: must be at most the model's context ({a.context})")
    torch.manual_seed(a.seed)

    # --- model and optimizer
    card = dict(vocab=a.vocab, d=a.dim, layers=a.layers, heads=a.heads, ctx=a.context, hidden=a.hidden)
    model = Llama(card).to(device=a.device, dtype=getattr(torch, a.dtype))
    opt = make_optimizer(a, list(model.parameters()))

    # --- data
    train = Tokens(a.data, "train", a.vocab, a.seq_len, a.seed)
    val = Tokens(a.data, "val", a.vocab, a.seq_len, a.seed + 1)

    # --- training loop
    for step in range(1, a.steps + 1):
        idx, tgt = train.batch(a.micro_batch, a.device)
        loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        train_loss = loss.item()
        if step == a.steps or (a.eval_every and step % a.eval_every == 0):
            lr = opt.param_groups[0]["last_lr"] if isinstance(opt, sf.SFAdamW) else opt.last_lr
            print(json.dumps({"step": step, "train_loss": train_loss, "val_loss": evaluate(model, opt, val, a),
                              "lr": lr}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
