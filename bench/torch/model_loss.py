"""Loss of a model file of sfsweep in PyTorch, for its tests.

python3 model_loss.py MODEL.safetensors MODEL.json TOKENS

Loads the weights by name, strictly, into torch_llama.py's Llama (the LLaMA-style model of
training/native) in float64 and prints the mean cross-entropy of the tokens file's rows
(`token target`, batch 2 of equal length) with 17 significant digits. The safetensors file
is read with the standard library and numpy alone: 8 bytes of header length, the JSON
header, then the data at the header's offsets.
"""
import json
import struct
import sys

import numpy as np
import torch

import torch_llama


def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise SystemExit("%s: dtype %s, want F32" % (name, t["dtype"]))
        a, b = t["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[a:b], dtype=np.float32).reshape(t["shape"]).copy()).double()
    return out


def main():
    model_path, card_path, tokens_path = sys.argv[1:4]
    m = json.load(open(card_path))["model"]
    if m["arch"] != "llama":
        raise SystemExit("arch %s: torch_llama.py holds the LLaMA-style model only" % m["arch"])
    c = dict(vocab=m["vocab"], d=m["dim"], layers=m["layers"], heads=m["heads"], ctx=m["context"], hidden=m["hidden"], batch=2,
             untied=m["untied"])
    model = torch_llama.Llama(c).double()
    model.load_state_dict(load(model_path), strict=True)
    rows = [tuple(map(int, line.split())) for line in open(tokens_path) if line.strip()]
    idx = torch.tensor([r[0] for r in rows]).view(2, -1)
    tgt = torch.tensor([r[1] for r in rows]).view(2, -1)
    with torch.no_grad():
        print("%.17g" % model(idx, tgt).item())


if __name__ == "__main__":
    main()
