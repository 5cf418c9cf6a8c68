"""Checkpoints of the trainer in a directory, as docs/trainer.md asks of a program.

A checkpoint is DIR/step-<N>.pt, the step in its name so that a probe can start from it.
It is written under a name ending in .tmp, which sfsweep does not copy to the store, then
renamed into place, so a reader (or the store) never sees half a file. Its contents are
plain tensors, numbers, strings, lists and dicts, so it loads with torch.load's
weights_only.
"""
import os
import re
import sys

import torch

_NAME = re.compile(r"^step-(\d+)\.pt$")


def path(directory, step):
    """The checkpoint of step step in directory."""
    return os.path.join(directory, f"step-{step}.pt")


def steps(directory):
    """The steps of the checkpoints in directory, oldest first."""
    if not directory or not os.path.isdir(directory):
        return []
    found = (_NAME.match(name) for name in os.listdir(directory))
    return sorted(int(m.group(1)) for m in found if m)


def save(directory, step, state, keep=0):
    """Writes state as the checkpoint of step, then deletes all but the newest keep (0: all)."""
    os.makedirs(directory, exist_ok=True)
    final = path(directory, step)
    tmp = final + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    if keep > 0:
        for old in steps(directory)[:-keep]:
            try:
                os.remove(path(directory, old))
            except FileNotFoundError:
                pass


def load(file, device):
    """Reads one checkpoint file: with weights_only from torch 2 on; the restricted
    unpickler of older torch refuses even floats, and loads it whole."""
    if int(torch.__version__.split(".")[0]) >= 2:
        return torch.load(file, map_location=device, weights_only=True)
    return torch.load(file, map_location=device)


def newest(directory, device, at_most):
    """Returns the newest checkpoint of a step ≤ at_most that reads back, or None. A file
    that does not read (cut short by a crash, say) is passed over for the one before it."""
    for step in reversed(steps(directory)):
        if step > at_most:
            continue
        try:
            state = load(path(directory, step), device)
        except Exception as e:  # noqa: BLE001 (any unreadable file is skipped, saying so)
            print(f"checkpoint {path(directory, step)} does not read, skipped: {e}", file=sys.stderr)
            continue
        if isinstance(state, dict) and state.get("step") == step:
            return state
    return None
