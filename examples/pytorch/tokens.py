"""The token files of `sfsweep data`, read the way sfsweep's engine reads them.

A split is a flat little-endian uint16 file (DIR/train.bin, val.bin, test.bin). Batches
follow sfsweep's training/data package exactly, so that this trainer and the engine train
on the same tokens for the same seed:

  - Sampler: row r of micro-batch m of step s starts at the high 64 bits of
    hash(seed, s, m, r) x (len - seq_len), hash being SplitMix64's finaliser chained over
    the four words (data.Sampler). There is no sequential random state: a resumed run, or
    a probe from a checkpoint, reads exactly the batches the run would have read.
  - Windows: the evaluation set is the first n non-overlapping windows of the split,
    window j reading tokens[j seq_len : (j+1) seq_len + 1] (data.EvalWindows), the same at
    every evaluation.
"""
import json
import os

import numpy as np
import torch

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _mix64(z):
    """SplitMix64's finaliser on a 64-bit integer (data.mix64)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def counter_hash(seed, a, b, c):
    """Mixes (seed, a, b, c) into 64 bits as data.counterHash does."""
    h = _mix64((seed + _GOLDEN) & _MASK)
    for w in (a, b, c):
        h = _mix64((h + w + _GOLDEN) & _MASK)
    return h


class ConfigError(Exception):
    """A setting or an input that makes the run impossible: the trainer exits 2."""


def read_meta(data):
    """Returns meta.json of a token directory, or None where there is none."""
    path = os.path.join(data, "meta.json")
    if not data or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def load_split(data, split, vocab, seed, required=True):
    """Returns the tokens of split: DIR/split.bin memory-mapped, or without a directory
    2^16 uniformly random tokens of seed. None where the file is missing and not required."""
    if not data:
        return np.random.default_rng(seed).integers(0, vocab, size=1 << 16, dtype=np.uint16)
    path = os.path.join(data, split + ".bin")
    if not os.path.exists(path):
        if required:
            raise ConfigError(f"data: {path} does not exist")
        return None
    if os.path.getsize(path) == 0:
        return np.zeros(0, dtype="<u2")
    return np.memmap(path, dtype="<u2", mode="r")


class Sampler:
    """The training batches of a split: data.Sampler, row for row."""

    def __init__(self, tokens, seq_len, seed):
        if tokens.size < seq_len + 1:
            raise ConfigError(f"train split: {tokens.size} tokens, fewer than seq_len + 1 = {seq_len + 1}")
        self.tokens, self.seq_len, self.seed = tokens, seq_len, seed & _MASK
        self.starts = tokens.size - seq_len

    def offset(self, step, micro, row):
        """The first token of row row of micro-batch micro of step step."""
        return (counter_hash(self.seed, step, micro, row) * self.starts) >> 64

    def batch(self, step, micro, rows, device):
        """Returns micro-batch micro of step step as (inputs, targets), each (rows, seq_len)."""
        return windows(self.tokens, [self.offset(step, micro, r) for r in range(rows)], self.seq_len, device)


class EvalSet:
    """The first n non-overlapping windows of a split, in whole batches of rows windows (a
    partial last batch is left out, as the engine does, unless it is the only one)."""

    def __init__(self, tokens, seq_len, n, rows, split):
        if tokens.size < seq_len + 1:
            raise ConfigError(f"{split} split: {tokens.size} tokens, fewer than seq_len + 1 = {seq_len + 1}")
        self.tokens, self.seq_len = tokens, seq_len
        self.n = min(n, (tokens.size - 1) // seq_len)
        self.rows = min(rows, self.n)

    def batches(self, device):
        """Yields the set's batches as (inputs, targets)."""
        for first in range(0, self.n - self.rows + 1, self.rows):
            starts = [(first + i) * self.seq_len for i in range(self.rows)]
            yield windows(self.tokens, starts, self.seq_len, device)


def windows(tokens, starts, seq_len, device):
    """Returns the windows of seq_len+1 tokens at starts as (inputs, targets). On a GPU the
    copy is from pinned memory and does not wait: the host goes on (to the next batch)
    while it runs, in the stream's order before the kernels that read it."""
    w = np.stack([np.asarray(tokens[s:s + seq_len + 1], dtype=np.int64) for s in starts])
    w = torch.from_numpy(w)
    if torch.device(device).type == "cuda":
        w = w.pin_memory().to(device, non_blocking=True)
    else:
        w = w.to(device)
    return w[:, :-1], w[:, 1:]
