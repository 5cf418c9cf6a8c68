#!/usr/bin/env python3
"""Replays a fixed sequence of gradients through the optimizers of sfadamw_torch, in float64.

Usage: python3 replay.py IN.json OUT.json

IN.json (written by reference_test.go) holds the parameter shapes, the initial point (flat),
the gradients of every step (flat) and the optimizer cases, whose settings are sfadamw.Config
and sfadamw.AdamWConfig as encoding/json writes them. OUT.json gets, per case and per
step, the learning rate, c_{t+1} (SF-AdamW) and the iterates flattened in parameter order:
y, z and x (read through eval()) for SF-AdamW, the weights for AdamW. Halfway, each run is
checkpointed through torch.save and resumed into fresh parameters and a fresh optimizer.
"""
import io
import json
import sys

import torch

import sfadamw_torch as sf


def unflatten(flat, shapes):
    out, at = [], 0
    for shape in shapes:
        n = 1
        for s in shape:
            n *= s
        out.append(torch.tensor(flat[at:at + n], dtype=torch.float64).reshape(shape))
        at += n
    return out


def flat(tensors):
    return torch.cat([t.detach().reshape(-1) for t in tensors]).tolist()


def make(case, params):
    """Returns the optimizer of case, whose settings carry sfadamw's field names."""
    if case.get("SF"):
        c = case["SF"]
        return sf.SFAdamW(params, lr=c["LR"], betas=(c["Beta1"], c["Beta2"]), eps=c["Eps"],
                          weight_decay=c["WeightDecay"], warmup_steps=c["WarmupSteps"], c=c["C"],
                          grad_clip=c["GradClip"], keep_x=c["KeepX"])
    c = case["AdamW"]
    s = c["Schedule"]
    schedule = sf.Schedule(s["Kind"], s["Peak"], warmup_steps=s["WarmupSteps"], total_steps=s["TotalSteps"],
                           final_frac=s["FinalFrac"], decay_start=s["DecayStart"],
                           decay_steps=s["DecaySteps"], decay_shape=s["DecayShape"])
    return sf.AdamW(params, schedule, betas=(c["Beta1"], c["Beta2"]), eps=c["Eps"],
                    weight_decay=c["WeightDecay"], grad_clip=c["GradClip"])


def resume(case, params, opt):
    """Returns new parameters and optimizer restored from a checkpoint of params and opt."""
    buf = io.BytesIO()
    torch.save({"params": [p.detach() for p in params], "opt": opt.state_dict()}, buf)
    buf.seek(0)
    ckpt = torch.load(buf)
    params = [p.clone().requires_grad_() for p in ckpt["params"]]
    opt = make(case, params)
    opt.load_state_dict(ckpt["opt"])
    return params, opt


def replay(case, shapes, init, grads):
    params = [p.requires_grad_() for p in unflatten(init, shapes)]
    opt = make(case, params)
    steps = []
    for t, g in enumerate(grads):
        if t == len(grads) // 2:
            params, opt = resume(case, params, opt)
        for p, gp in zip(params, unflatten(g, shapes)):
            p.grad = gp
        opt.step()
        if isinstance(opt, sf.SFAdamW):
            group = opt.param_groups[0]
            rec = {"lr": group["last_lr"], "c": group["last_c"], "y": flat(params),
                   "z": flat(opt.state[p]["z"] for p in params)}
            opt.eval()
            rec["x"] = flat(params)
            opt.train()
        else:
            rec = {"lr": opt.last_lr, "w": flat(params)}
        steps.append(rec)
    return steps


def main():
    with open(sys.argv[1]) as f:
        inp = json.load(f)
    out = {c["Name"]: replay(c, inp["shapes"], inp["init"], inp["grads"]) for c in inp["cases"]}
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
