"""Loss of a model file of sfsweep in PyTorch, for its tests.

python3 model_loss.py MODEL.safetensors MODEL.json TOKENS

Loads the model as the trial page's loader does (torch_llama.from_files: the module and
config model.json names, the weights by name, strictly) in float64, and prints the mean
cross-entropy of the tokens file's rows (`token target`, batch 2 of equal length) with 17
significant digits.
"""
import sys

import torch

import torch_llama


def main():
    model_path, card_path, tokens_path = sys.argv[1:4]
    model = torch_llama.from_files(model_path, card_path, torch.float64)
    rows = [tuple(map(int, line.split())) for line in open(tokens_path) if line.strip()]
    idx = torch.tensor([r[0] for r in rows]).view(2, -1)
    tgt = torch.tensor([r[1] for r in rows]).view(2, -1)
    with torch.no_grad():
        print("%.17g" % model(idx, tgt).item())


if __name__ == "__main__":
    main()
