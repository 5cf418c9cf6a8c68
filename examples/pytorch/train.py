#!/usr/bin/env python3
"""Trains the LLaMA of bench/torch/torch_llama.py with SF-AdamW, refined SF-AdamW or AdamW.

sfsweep's reference trainer: a complete program of the protocol of docs/trainer.md, which
sfsweep runs as a trial like a run of its own engine. It trains the model with the
optimizers of sfadamw_torch.py on the token files of `sfsweep data`, as the engine would
from the same run config:

  parameters  --key=value, as W&B passes them, with the names of sfsweep's config.json
              (optimizer, lr, beta1, beta2, eps, weight_decay, c, grad_clip, warmup_frac,
              schedule, final_frac, decay_frac, steps, seed, micro_batch, seq_len,
              batch_tokens, eval_every, eval_seqs, test_seqs, checkpoint_every). Unset
              values take the engine's defaults; steps and seed those of $SFSWEEP_STEPS
              and $SFSWEEP_SEED, which a manifest without optimizer grids passes only
              there. An unknown parameter is an error (exit 2).
  model       the "model" card of $SFSWEEP_CONFIG (training/model.Config's fields), or
              without one --dim, --layers, --heads, --hidden, --vocab, --context.
  data        $SFSWEEP_DATA or --data: train.bin, val.bin, test.bin (flat little-endian
              uint16); without either, random tokens. Batches and evaluation windows are
              the engine's (tokens.py): the same seed reads the same tokens.
  a step      batch_tokens / (micro_batch seq_len) micro-batches, their gradients
              averaged, then one optimizer step.
  metrics     one JSON line per evaluation, {"step", "tokens", "lr", "train_loss",
              "val_loss"}, appended to $SFSWEEP_METRICS (stdout without it) and flushed;
              the last line also has "test_loss" where test_seqs > 0 and test.bin exists.
              SF-AdamW is evaluated at x, where the paper evaluates it; evaluating leaves
              the training state bit for bit as it was.
  checkpoints every checkpoint_every steps and at the end, $SFSWEEP_CHECKPOINT_DIR (or
              --checkpoint_dir)/step-<N>.pt: the model, the optimizer's whole state, the
              RNG states and the step (batches need no state: they are a function of the
              seed and the step). At start the newest checkpoint that reads is resumed:
              the metrics lines after it are those of an uninterrupted run, bit for bit.
              --keep_checkpoints keeps only the newest ones.
  rungs       SFSWEEP_UNTIL=N > 0: exit 0 after the evaluation and checkpoint of step N
              (even where N is neither an evaluation nor a checkpoint step). A run
              started again at or past its rung or its end writes the line of the step
              it resumed at again, and exits 0.
  exit        0 completed, 2 invalid config, 3 diverged (a non-finite loss, whose line is
              written first); anything else is a failure sfsweep retries.
  speed       --precision bf16 (the default on a GPU) runs the passes under bf16 autocast
              with the parameters and the optimizer in float32, as llm-baselines; fp32 (the
              default on the CPU) runs them in --dtype. Attention is torch's
              scaled_dot_product_attention where torch has it (2.0 on), else the
              materialised softmax; --compile (auto: on a GPU with torch 2.0 on) compiles
              the model. The optimizers step every tensor at once (torch's _foreach ops),
              the losses are summed on the device and read once a step, and a batch goes
              to the GPU from pinned memory while the one before computes.
  ranks       under torchrun (sfsweep's gpus: N with launcher: torchrun; WORLD_SIZE > 1),
              rank r trains micro-batches r, r + N, ... of each step and evaluates every
              N-th evaluation batch; one all-reduce sums the losses, one the gradients, so
              every rank makes the same update (NCCL on GPUs, each rank on cuda:LOCAL_RANK;
              gloo on the CPU). Only rank 0 writes metrics lines and checkpoints; every
              rank resumes from the same checkpoint. The micro-batches of a step must split
              evenly over the ranks. The sums run in another order than in one process, so
              a run of N ranks agrees with one of a single process to rounding, not bits.

The LR-decay probe (SFSWEEP_MODE=probe, SFSWEEP_PROBE={"kind": "lr_decay", "step": S, "steps":
K, "shape": "linear" | "sqrt"}) loads step-S.pt, trains K more steps on the batches the run
would have read, and writes a metrics line per step, the last with val_loss; it writes no
checkpoint. Its learning rate is that of sfsweep's LR-decay branch (training.LRDecay: a
WSD schedule whose decay starts at S): lr_t = lr_S (1 - t/K), or lr_S (1 - sqrt(t/K)) for
"sqrt", t = 1..K, where lr_S is the run's learning rate at step S; the optimizer keeps its
state from the checkpoint. For SF-AdamW the decay is on gamma_t, and the averaging weights
go on as Algorithm 1's c_{t+1} = gamma_t^2 / sum_{i<=t} gamma_i^2 (Algorithm 2's cap for
refined SF-AdamW), the sum carried on from the run. It is not the paper's decay probe of
sfsweep's own engine (training.DecayProbe: fresh AdamW from x at a peak of 1e-4), whose
peak SFSWEEP_PROBE does not carry. A probe of another kind is refused (exit 2).

    python3 train.py --optimizer=sfadamw --lr=2e-3 --beta1=0.95 --c=200 --steps=200 --data=DIR
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

import checkpoints
import sfadamw_torch as sf
import tokens as tk

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "torch"))
from torch_llama import Llama, RMSNorm, rope_tables  # noqa: E402  (the model sfsweep's tests already check)

EXIT_INVALID, EXIT_DIVERGED = 2, 3


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    # the optimizer, as training.OptimizerConfig (unset values take its defaults)
    ap.add_argument("--optimizer", choices=("sfadamw", "adamw"), default="sfadamw")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--beta1", type=float, default=0.95)
    ap.add_argument("--beta2", type=float, default=0.99)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight_decay", type=float, default=0.1)
    ap.add_argument("--decay_params", choices=("linear", "all"), default="linear",
                    help="what weight decay applies to: the weights of linear layers (as llm-baselines), or all")
    ap.add_argument("--c", type=float, default=0.0, help="refined SF-AdamW's C; 0 is vanilla")
    ap.add_argument("--grad_clip", type=float, default=None, help="default 1.0 for adamw, 0 (off) for sfadamw")
    ap.add_argument("--warmup_frac", type=float, default=0.05)
    ap.add_argument("--schedule", choices=sf.SCHEDULES, default="cosine", help="adamw only")
    ap.add_argument("--final_frac", type=float, default=0.1, help="adamw cosine: final lr / peak")
    ap.add_argument("--decay_frac", type=float, default=0.0, help="adamw wsd: decay branch / steps")
    # the loop, as training.Loop
    ap.add_argument("--steps", type=int, default=None, help="default $SFSWEEP_STEPS, else 100")
    ap.add_argument("--seed", type=int, default=None, help="default $SFSWEEP_SEED, else 1")
    ap.add_argument("--micro_batch", type=int, default=0, help="sequences per forward pass; default the card's batch")
    ap.add_argument("--seq_len", type=int, default=0, help="default the model's context")
    ap.add_argument("--batch_tokens", type=int, default=0, help="tokens per step; default one micro-batch")
    ap.add_argument("--eval_every", type=int, default=0, help="0: only at the end")
    ap.add_argument("--eval_seqs", type=int, default=3200)
    ap.add_argument("--test_seqs", type=int, default=None, help="default eval_seqs; 0: no test loss")
    ap.add_argument("--checkpoint_every", type=int, default=0, help="0: only at the end")
    ap.add_argument("--keep_checkpoints", type=int, default=0, help="newest checkpoints kept; 0: all")
    ap.add_argument("--checkpoint_dir", default="", help="default $SFSWEEP_CHECKPOINT_DIR; none: no checkpoints")
    # the model without $SFSWEEP_CONFIG (the "tiny" preset of torch_llama.py), and the data
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=344)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--data", default="", help="default $SFSWEEP_DATA; none: random tokens")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                    help="the parameters' and the optimizer's type")
    ap.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto",
                    help="the forward and backward passes: fp32, or bf16 under torch.autocast (the parameters "
                         "and the optimizer stay in --dtype); auto: bf16 on a GPU, fp32 on the CPU")
    ap.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                    help="torch.compile the model: auto, on a GPU where torch has it (2.0 on)")
    a = ap.parse_args(argv)
    try:
        resolve(a)
    except (tk.ConfigError, ValueError) as e:
        ap.error(str(e))
    return a


def resolve(a):
    """Fills in what the environment and the model card decide, and checks the run as the
    engine's training.Config.Validate does; raises ConfigError naming the field."""
    a.card = model_card(a)
    a.data = a.data or os.environ.get("SFSWEEP_DATA", "")
    a.checkpoint_dir = a.checkpoint_dir or os.environ.get("SFSWEEP_CHECKPOINT_DIR", "")
    a.steps = env_int("SFSWEEP_STEPS", 100) if a.steps is None else a.steps
    a.seed = env_int("SFSWEEP_SEED", 1) if a.seed is None else a.seed
    a.until = env_int("SFSWEEP_UNTIL", 0)
    a.micro_batch = a.micro_batch or a.card["batch"]
    a.seq_len = a.seq_len or a.card["ctx"]
    a.batch_tokens = a.batch_tokens or a.micro_batch * a.seq_len
    a.test_seqs = a.eval_seqs if a.test_seqs is None else a.test_seqs
    for name in ("steps", "micro_batch", "seq_len", "batch_tokens", "eval_seqs"):
        if getattr(a, name) < 1:
            raise tk.ConfigError(f"{name} = {getattr(a, name)}: must be ≥ 1")
    for name in ("test_seqs", "eval_every", "checkpoint_every", "keep_checkpoints"):
        if getattr(a, name) < 0:
            raise tk.ConfigError(f"{name} = {getattr(a, name)}: must be ≥ 0")
    if a.seq_len > a.card["ctx"]:
        raise tk.ConfigError(f"seq_len = {a.seq_len}: must be ≤ the model's context ({a.card['ctx']})")
    if a.batch_tokens % (a.micro_batch * a.seq_len):
        raise tk.ConfigError(f"batch_tokens = {a.batch_tokens}: must be a multiple of micro_batch × seq_len = "
                             f"{a.micro_batch} × {a.seq_len} = {a.micro_batch * a.seq_len}")
    if not 0 <= a.warmup_frac < 1:
        raise tk.ConfigError(f"warmup_frac = {a.warmup_frac}: must be in [0, 1)")
    if a.optimizer == "adamw" and a.c != 0:
        raise tk.ConfigError(f"c = {a.c}: applies to sfadamw only")
    if a.optimizer == "adamw" and a.schedule == "wsd" and not 0 < a.decay_frac <= 1:
        raise tk.ConfigError(f"decay_frac = {a.decay_frac}: must be in (0, 1] for the wsd schedule")
    a.accum = a.batch_tokens // (a.micro_batch * a.seq_len)
    # the ranks of a job under torchrun (sfsweep's gpus: N): each takes micro-batches
    # rank, rank + world, ... of every step
    a.rank, a.world = env_int("RANK", 0), env_int("WORLD_SIZE", 1)
    if a.accum % a.world:
        raise tk.ConfigError(f"batch_tokens = {a.batch_tokens}: its {a.accum} micro-batches must split evenly "
                             f"over the {a.world} ranks")
    gpu = torch.device(a.device).type == "cuda"
    if a.precision == "auto":
        a.precision = "bf16" if gpu else "fp32"
    if a.precision == "bf16" and a.dtype == "float64":
        raise tk.ConfigError("precision = bf16: autocast computes in bfloat16 from float32 parameters, not float64")
    if a.compile == "on" and not hasattr(torch, "compile"):
        raise tk.ConfigError(f"compile = on: torch {torch.__version__} has no torch.compile (2.0 on)")
    a.compile = a.compile == "on" or (a.compile == "auto" and gpu and hasattr(torch, "compile"))
    meta = tk.read_meta(a.data)
    if meta and meta.get("vocab", 0) > a.card["vocab"]:
        raise tk.ConfigError(f"vocab = {a.card['vocab']}: the data's tokens go up to {meta['vocab'] - 1}")


def env_int(name, default):
    """The integer in environment variable name, or default where it is unset or empty."""
    v = os.environ.get(name, "")
    try:
        return int(v) if v else default
    except ValueError:
        raise tk.ConfigError(f"${name} = {v!r}: must be an integer") from None


def model_card(a):
    """The model as torch_llama's card: the "model" object of $SFSWEEP_CONFIG (sfsweep's
    resolved training/model.Config, its defaults filled in as model.Config.WithDefaults
    does), or the --dim, --layers, ... arguments."""
    m = None
    if os.environ.get("SFSWEEP_CONFIG"):
        with open(os.environ["SFSWEEP_CONFIG"]) as f:
            m = json.load(f).get("model")
    if not m:
        return dict(vocab=a.vocab, d=a.dim, layers=a.layers, heads=a.heads, ctx=a.context, hidden=a.hidden,
                    batch=16, rope_theta=10000.0, norm_eps=1e-5, init_std=0.02, untied=False)
    if m.get("arch", "llama") != "llama":
        raise tk.ConfigError(f"model.arch = {m['arch']}: this trainer trains \"llama\" only")
    card = dict(vocab=m.get("vocab", 0), d=m.get("dim", 0), layers=m.get("layers", 0), heads=m.get("heads", 0),
                ctx=m.get("context", 0), hidden=m.get("hidden", 0), batch=m.get("batch") or 16,
                rope_theta=m.get("rope_theta") or 10000.0, norm_eps=m.get("norm_eps") or 1e-5,
                init_std=m.get("init_std") or 0.02, untied=bool(m.get("untied")))
    for field, key in (("vocab", "vocab"), ("dim", "d"), ("layers", "layers"), ("heads", "heads"),
                       ("context", "ctx"), ("hidden", "hidden")):
        if not isinstance(card[key], int) or card[key] < 1:
            raise tk.ConfigError(f"model.{field} = {card[key]}: must be an integer ≥ 1")
    if card["d"] % card["heads"] or (card["d"] // card["heads"]) % 2:
        raise tk.ConfigError(f"model.heads = {card['heads']}: must divide dim ({card['d']}) into even head sizes")
    return card


def make_model(a):
    """torch_llama's Llama of the card (llm-baselines' Llama, tied unless the card is
    untied), with its RoPE base, norm epsilon and initialisation."""
    c = a.card
    torch.manual_seed(a.seed)
    model = Llama(c)
    if c["init_std"] != 0.02:  # torch_llama initialises with σ = 0.02
        torch.manual_seed(a.seed)
        model.init_weights(c["init_std"])
    if c["rope_theta"] != 10000.0:
        model.cos, model.sin = rope_tables(c["ctx"], c["d"] // c["heads"], c["rope_theta"])
    for m in model.modules():
        if isinstance(m, RMSNorm):
            m.eps = c["norm_eps"]
    return model.to(device=a.device, dtype=getattr(torch, a.dtype))


def param_groups(a, model):
    """The parameters in the groups of weight decay: with decay_params "linear" (as
    llm-baselines and sfsweep's engine) the weights of the blocks' linear layers decay; the
    norms, the token embedding and the LM head, tied or untied, do not; with "all" every
    parameter does."""
    if a.decay_params == "all":
        return [{"params": list(model.parameters())}]
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and n.startswith("transformer.h.")]
    rest = [p for n, p in model.named_parameters() if not (p.dim() == 2 and n.startswith("transformer.h."))]
    return [{"params": decay}, {"params": rest, "weight_decay": 0.0}]


def make_optimizer(a, params):
    """Returns the optimizer as sfsweep's engine makes it from the same run config: warmup
    and the WSD branch in whole steps of the run, weight decay as param_groups groups it."""
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


class Diverged(Exception):
    """A non-finite loss: its metrics line is written, and the program exits 3."""


class Metrics:
    """The metrics lines: appended to $SFSWEEP_METRICS, or printed, each flushed at once; by
    rank 0 alone. Every rank sees the same losses, and so diverges at the same line."""

    def __init__(self, rank=0):
        name = os.environ.get("SFSWEEP_METRICS")
        self.out = None if rank else open(name, "a") if name else sys.stdout

    def write(self, line):
        if self.out is not None:
            self.out.write(json.dumps(line) + "\n")
            self.out.flush()
        losses = [line[k] for k in ("train_loss", "val_loss", "test_loss") if k in line]
        if not all(math.isfinite(v) for v in losses):
            raise Diverged(f"step {line['step']}: {line}")


class Trainer:
    """The model, its optimizer and its data: the one training step, evaluation and the
    state a checkpoint holds, shared by the run and the probe."""

    def __init__(self, a):
        self.a = a
        self.model = make_model(a)
        self.params = list(self.model.parameters())
        # the passes: compiled where asked, under bf16 autocast where asked; the state
        # dict, the optimizer and evaluation's x/y swap are the model's own
        self.forward = torch.compile(self.model) if a.compile else self.model
        self.autocast = torch.autocast(torch.device(a.device).type, dtype=torch.bfloat16,
                                       enabled=a.precision == "bf16")
        self.opt = make_optimizer(a, param_groups(a, self.model))
        self.sf = isinstance(self.opt, sf.SFAdamW)
        self.decay = None  # the probe's learning rate, a function of the step
        vocab = a.card["vocab"]
        self.sampler = tk.Sampler(tk.load_split(a.data, "train", vocab, a.seed), a.seq_len, a.seed)
        self.val = tk.EvalSet(tk.load_split(a.data, "val", vocab, a.seed + 1), a.seq_len, a.eval_seqs,
                              a.micro_batch, "val")
        test = tk.load_split(a.data, "test", vocab, a.seed + 2, required=False) if a.data else None
        self.test = None
        if test is not None and a.test_seqs > 0:
            self.test = tk.EvalSet(test, a.seq_len, a.test_seqs, a.micro_batch, "test")

    def loss(self, idx, tgt):
        """The loss of a batch, in the run's precision."""
        with self.autocast:
            return self.forward(idx, tgt)

    def step(self, step):
        """Takes optimizer step step on its batches and returns the mean training loss. The
        losses are summed on the device and read once, at the end of the step, so the host
        never waits on the device within it; each micro-batch's batch is on its way to the
        device while the one before computes. A step with a loss that is not finite makes
        no update and returns the first such loss, as the engine, whose step ends there."""
        a = self.a
        self.opt.zero_grad(set_to_none=True)
        losses, total = [], torch.zeros((), dtype=torch.float64, device=a.device)
        mine = range(a.rank, a.accum, a.world)  # all of them, but under torchrun
        batch = self.sampler.batch(step, mine[0], a.micro_batch, a.device)
        for i, micro in enumerate(mine):
            idx, tgt = batch
            if i + 1 < len(mine):
                batch = self.sampler.batch(step, mine[i + 1], a.micro_batch, a.device)
            loss = self.loss(idx, tgt)
            loss.backward()
            losses.append(loss.detach())
            total += losses[-1].double()  # one by one, in order, as a float sum on the host
        if a.world > 1:
            dist.all_reduce(total)
        total = total.item()
        if not math.isfinite(total):
            return next((v for v in (x.item() for x in losses) if not math.isfinite(v)), total)
        if a.world > 1:
            self.reduce_grads()
        if a.accum > 1:  # the sum of the gradients, then their mean, as the engine
            for p in self.params:
                if p.grad is not None:
                    p.grad.mul_(1 / a.accum)
        if self.decay is not None and self.sf:
            for g in self.opt.param_groups:
                g["lr"], g["warmup_steps"] = self.decay(step), 0
        self.opt.step()
        return total / a.accum

    def reduce_grads(self):
        """Sums the ranks' gradients, in one all-reduce of them all: every rank then holds the
        step's, and makes the same update to the same parameters."""
        grads = [p.grad for p in self.params if p.grad is not None]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        off = 0
        for g in grads:
            g.copy_(flat[off:off + g.numel()].view_as(g))
            off += g.numel()

    def lr(self):
        """The learning rate of the last step: gamma_t for SF-AdamW."""
        return self.opt.param_groups[0]["last_lr"] if self.sf else self.opt.last_lr

    def schedule_lr(self, step):
        """The learning rate the run's schedule gives step step."""
        if self.sf:
            return sf.warmup_lr(self.a.lr, self.opt.param_groups[0]["warmup_steps"], step)
        return self.opt.schedule.at(step)

    @torch.no_grad()
    def evaluate(self, evalset):
        """The mean loss over evalset; SF-AdamW's parameters are x meanwhile, and y is
        restored from a copy after, since x -> y in floating point does not give back y's
        bits, and a run must not depend on when it was evaluated."""
        saved = [p.detach().clone() for p in self.params] if self.sf else None
        if self.sf:
            self.opt.eval()
        self.model.eval()
        a = self.a
        total, n = torch.zeros((), dtype=torch.float64, device=a.device), 0
        for i, (idx, tgt) in enumerate(evalset.batches(a.device)):
            if i % a.world == a.rank:  # under torchrun, the ranks share the batches
                total += self.loss(idx, tgt).double()
            n += 1
        if a.world > 1:
            dist.all_reduce(total)
        self.model.train()
        if self.sf:
            self.opt.train()
            for p, s in zip(self.params, saved):
                p.copy_(s)
        return total.item() / n

    def line(self, step, train_loss, val=True, test=False):
        """The metrics line of step step."""
        out = {"step": step, "tokens": step * self.a.batch_tokens, "lr": self.lr()}
        if train_loss is not None:  # None: a run resumed at its end, whose step is not redone
            out["train_loss"] = train_loss
        if val:
            out["val_loss"] = self.evaluate(self.val)
        if test and self.test is not None:
            out["test_loss"] = self.evaluate(self.test)
        return out

    def state(self, step):
        """What a checkpoint holds: enough to go on from step bit for bit."""
        np_state = np.random.get_state()
        rng = {"torch": torch.get_rng_state(),
               "numpy": [np_state[0], torch.from_numpy(np_state[1].astype("int64")), *np_state[2:]]}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        return {"step": step, "run": self.identity(), "model": self.model.state_dict(), "optimizer": self.opt.state_dict(), "rng": rng,
                "sampler": {"kind": "counter", "seed": self.a.seed}}

    def identity(self):
        """What a checkpoint must agree on to be this run's: the optimizer and the model."""
        return {"optimizer": self.a.optimizer, "decay_params": self.a.decay_params,
                "card": {k: v for k, v in self.a.card.items() if k != "batch"}}

    def restore(self, state):
        """Makes the trainer what it was when state was taken."""
        if state.get("run") != self.identity():
            raise SystemExit(f"checkpoint of step {state['step']} is of another run: {state.get('run')}, "
                             f"this run is {self.identity()}")
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        rng = state["rng"]
        torch.set_rng_state(rng["torch"].cpu())
        kind, keys, *rest = rng["numpy"]
        np.random.set_state((kind, keys.cpu().numpy().astype("uint32"), *rest))
        if "cuda" in rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([s.cpu() for s in rng["cuda"]])


def train(t, metrics):
    """The run: from the newest checkpoint, or step 0, to the end or to $SFSWEEP_UNTIL."""
    a = t.a
    start = 0
    if a.checkpoint_dir:
        state = checkpoints.newest(a.checkpoint_dir, a.device, a.steps)
        if state is not None:
            t.restore(state)
            start = state["step"]
            if a.rank == 0:
                print(f"resumed from {checkpoints.path(a.checkpoint_dir, start)}", file=sys.stderr, flush=True)
    if start == a.steps or 0 < a.until <= start:  # done but for its exit: its last line again
        metrics.write(t.line(start, None, test=start == a.steps))
        return
    for step in range(start + 1, a.steps + 1):
        loss = t.step(step)
        if not math.isfinite(loss):
            metrics.write({"step": step, "tokens": step * a.batch_tokens, "train_loss": loss})
        last, stop = step == a.steps, step == a.until
        if last or stop or (a.eval_every and step % a.eval_every == 0):
            metrics.write(t.line(step, loss, test=last))
        if a.rank == 0 and a.checkpoint_dir and (last or stop or (a.checkpoint_every and step % a.checkpoint_every == 0)):
            checkpoints.save(a.checkpoint_dir, step, t.state(step), a.keep_checkpoints)
        if stop:
            return


def probe(t, metrics, spec):
    """The decay probe from the checkpoint of spec["step"]; see the module's doc."""
    a = t.a
    s, k, shape = spec["step"], spec["steps"], spec.get("shape") or "linear"
    file = checkpoints.path(a.checkpoint_dir, s)
    if not os.path.exists(file):
        raise SystemExit(f"probe: no checkpoint of step {s}: {file} does not exist")
    t.restore(checkpoints.load(file, a.device))
    peak = t.schedule_lr(s)
    t.decay = lambda step: decay_lr(peak, (step - s) / k, shape)
    if not t.sf:
        t.opt.schedule = DecaySchedule(t.decay)
    for step in range(s + 1, s + k + 1):
        loss = t.step(step)
        last = step == s + k
        evaluate = math.isfinite(loss) and (last or (a.eval_every and step % a.eval_every == 0))
        metrics.write(t.line(step, loss, val=evaluate))


def decay_lr(peak, progress, shape):
    """lr_S (1 - p) or lr_S (1 - sqrt p) at progress p = t/K of the decay."""
    return peak * (1 - (math.sqrt(progress) if shape == "sqrt" else progress))


class DecaySchedule:
    """The probe's decay as sf.AdamW reads its schedule: at(step)."""

    def __init__(self, at):
        self.at = at


def probe_spec(refuse):
    """$SFSWEEP_PROBE, checked: an LR-decay probe of a checkpoint step S ≥ 1 over K ≥ 1 steps."""
    try:
        spec = json.loads(os.environ.get("SFSWEEP_PROBE", ""))
    except json.JSONDecodeError as e:
        refuse(f"SFSWEEP_PROBE = {os.environ.get('SFSWEEP_PROBE', '')!r}: not JSON: {e}")
    if not isinstance(spec, dict) or spec.get("kind") != "lr_decay":
        refuse(f"SFSWEEP_PROBE = {json.dumps(spec)}: kind must be \"lr_decay\", the only probe this trainer implements")
    for key in ("step", "steps"):
        if not isinstance(spec.get(key), int) or spec[key] < 1:
            refuse(f"SFSWEEP_PROBE.{key} = {spec.get(key)}: must be an integer ≥ 1")
    if spec.get("shape", "linear") not in ("", "linear", "sqrt"):
        refuse(f"SFSWEEP_PROBE.shape = {spec['shape']}: must be \"linear\" or \"sqrt\"")
    return spec


def init_ranks(a):
    """Joins the job's process group under torchrun: NCCL on GPUs, each rank on the GPU of
    its LOCAL_RANK (sfsweep's CUDA_VISIBLE_DEVICES lists the trial's), gloo on the CPU."""
    if torch.device(a.device).type == "cuda":
        local = env_int("LOCAL_RANK", 0)
        torch.cuda.set_device(local)
        a.device = f"cuda:{local}"
        dist.init_process_group("nccl")
    else:
        dist.init_process_group("gloo")


def invalid(msg):
    print(f"train.py: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(EXIT_INVALID)


def main(argv):
    a = parse_args(argv)
    mode = os.environ.get("SFSWEEP_MODE") or "train"
    if mode not in ("train", "probe"):
        invalid(f"SFSWEEP_MODE = {mode}: must be train or probe")
    spec = probe_spec(invalid) if mode == "probe" else None
    if spec and not a.checkpoint_dir:
        invalid("probe: no checkpoint directory ($SFSWEEP_CHECKPOINT_DIR or --checkpoint_dir)")
    if a.world > 1:
        init_ranks(a)
    try:
        t = Trainer(a)
    except (tk.ConfigError, ValueError) as e:
        invalid(str(e))
    metrics = Metrics(a.rank)
    try:
        if spec:
            probe(t, metrics, spec)
        else:
            train(t, metrics)
    except Diverged as e:
        print(f"diverged: {e}", file=sys.stderr, flush=True)
        return EXIT_DIVERGED
    if a.world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
