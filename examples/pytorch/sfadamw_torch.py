"""SF-AdamW, refined SF-AdamW and scheduled AdamW as PyTorch optimizers.

The optimizers of "Through the River: Understanding the Benefit of Schedule-Free Methods for
Language Model Training", written to match sfsweep's Go package sfadamw definition for
definition, so that a PyTorch program and sfsweep's own engine train the same way:

  - SFAdamW: SF-AdamW exactly as Algorithm 1 of the paper, and refined SF-AdamW
    (Algorithm 2) when c > 0;
  - AdamW: torch.optim.AdamW with the learning-rate schedules of sfadamw (constant, cosine,
    linear, warmup-stable-decay, all with linear warmup) and global gradient clipping;
  - Schedule: those schedules, and canonical_c, which maps C = 1/(1-beta1) to vanilla.

Algorithm 1 (Algorithm 2 differs only in c_{t+1}), with z_1 = x_1 and v_0 = 0:

    y_t     = (1-beta1) z_t + beta1 x_t                  gradients are taken here
    v_t     = beta2 v_{t-1} + (1-beta2) g_t^2
    vhat_t  = v_t / (1 - beta2^t)
    gamma_t = gamma min(1, t/T_warmup)
    z_{t+1} = z_t - gamma_t g_t/(sqrt(vhat_t) + eps) - gamma_t lambda y_t
    c_{t+1} = gamma_t^2 / sum_{i<=t} gamma_i^2           Algorithm 2: min{that (1-beta1) C, 1}
    x_{t+1} = (1 - c_{t+1}) x_t + c_{t+1} z_{t+1}

Memory layout (as sfadamw and Defazio et al.'s schedulefree): the parameters hold y, the
state is z and v, so SF-AdamW keeps the memory of AdamW. Substituting
x_t = (y_t - (1-beta1) z_t)/beta1 gives the update executed,

    z_{t+1} = z_t - gamma_t D_t,   D_t = g_t/(sqrt(vhat_t) + eps) + lambda y_t
    y_{t+1} = (1-c_{t+1}) y_t + c_{t+1} z_t + gamma_t (beta1 (1-c_{t+1}) - 1) D_t

and x is recovered on demand: eval() turns the parameters into x, where the paper evaluates
the model, and train() turns them back into y. Where beta1 = 0, y = z and x cannot be
recovered, so x is stored too (keep_x stores it for any beta1).

Floating-point conventions follow sfadamw: eps is added outside the square root, the bias
correction of v enters as sqrt(v) / sqrt(1 - beta2^t), weight decay applies at y (inside
D_t), and clipping scales the gradients by min(1, max_norm/(norm + 1e-6)) as
torch.nn.utils.clip_grad_norm_.
"""
import math

import torch

# How close (1-beta1) C must be to 1 for C to be treated as vanilla SF-AdamW (as sfadamw).
VANILLA_TOL = 1e-9


def canonical_c(beta1, c):
    """Returns the C that identifies a run: C = 1/(1-beta1) is vanilla SF-AdamW, that is 0."""
    if c == 0 or abs((1 - beta1) * c - 1) <= VANILLA_TOL:
        return 0.0
    return c


def warmup_lr(lr, warmup_steps, t):
    """gamma_t = gamma min(1, t/T_warmup) of Algorithms 1 and 2; 0 warmup steps is none."""
    if warmup_steps > 0 and t < warmup_steps:
        return lr * t / warmup_steps
    return lr


def clip_grads_(params, max_norm):
    """Scales the gradients of params in place to a global norm of at most max_norm (0 is
    off) and returns the norm before clipping, or None when off."""
    if max_norm <= 0:
        return None
    grads = [p for p in params if p.grad is not None]
    if not grads:
        return None
    return torch.nn.utils.clip_grad_norm_(grads, max_norm)


def _lerp_(xs, ends, w):
    """xs[i].lerp_(ends[i], w) for each i: at once where torch has _foreach_lerp_ (2.1 on),
    one tensor at a time before; the same elementwise lerp either way."""
    if hasattr(torch, "_foreach_lerp_"):
        torch._foreach_lerp_(xs, ends, w)
        return
    for x, e in zip(xs, ends):
        x.lerp_(e, w)


class _Shared:
    """What both optimizers share: the closure, global gradient clipping before the step,
    and the attributes named in _saved, kept in the state dict for resuming."""

    _saved = ()

    def _begin(self, closure):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.last_grad_norm = clip_grads_(
            [p for g in self.param_groups for p in g["params"]], self.grad_clip)
        return loss

    def state_dict(self):
        sd = super().state_dict()
        for name in self._saved:
            sd[name] = getattr(self, name)
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        for name in self._saved:
            if name in state_dict:
                setattr(self, name, state_dict.pop(name))
        super().load_state_dict(state_dict)


class SFAdamW(_Shared, torch.optim.Optimizer):
    """Schedule-Free AdamW: Algorithm 1 of the paper, or Algorithm 2 (refined SF-AdamW)
    when c > 0. The parameters hold y while training; see eval() and train().

    Defaults are the paper's best SF-AdamW setting (lr 2e-3, betas (0.95, 0.99), weight
    decay 0.1, no clipping); the paper warms up over 5% of the run's steps. c = 0 is vanilla,
    and so is c = 1/(1-beta1) up to rounding (canonical_c).
    """

    _saved = ("training",)

    def __init__(self, params, lr=2e-3, betas=(0.95, 0.99), eps=1e-8, weight_decay=0.1,
                 warmup_steps=0, c=0.0, grad_clip=0.0, keep_x=False):
        if not (math.isfinite(lr) and lr > 0):
            raise ValueError(f"lr = {lr}: must be a finite number > 0")
        for name, b in (("beta1", betas[0]), ("beta2", betas[1])):
            if not 0 <= b < 1:
                raise ValueError(f"{name} = {b}: must be in [0, 1)")
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"eps = {eps}: must be a finite number > 0")
        if not (math.isfinite(weight_decay) and weight_decay >= 0):
            raise ValueError(f"weight_decay = {weight_decay}: must be a finite number >= 0")
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps = {warmup_steps}: must be >= 0")
        if not (math.isfinite(c) and c >= 0):
            raise ValueError(f"c = {c}: must be > 0 (refined SF), or 0 for vanilla SF")
        if not (math.isfinite(grad_clip) and grad_clip >= 0):
            raise ValueError(f"grad_clip = {grad_clip}: must be a finite number >= 0")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        warmup_steps=warmup_steps, c=c, keep_x=keep_x,
                        step=0, sum_lr2=0.0, max_lr=0.0, last_lr=0.0, last_c=0.0)
        super().__init__(params, defaults)
        self.grad_clip = grad_clip
        self.training = True
        self.last_grad_norm = None

    def _state(self, p, group):
        """The state of p, made at its first use: z_1 = y_1 and v_0 = 0 (and x_1 = y_1)."""
        st = self.state[p]
        if not st:
            st["z"] = p.detach().clone()
            st["v"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            if group["keep_x"] or group["betas"][0] == 0:
                st["x"] = p.detach().clone()
        return st

    @staticmethod
    def _advance(group):
        """Moves the group to the next step t and returns gamma_t and c_{t+1}."""
        group["step"] += 1
        gamma = warmup_lr(group["lr"], group["warmup_steps"], group["step"])
        # upstream's weight: the largest lr so far, squared (weight_lr_power 2)
        group["max_lr"] = max(group["max_lr"], gamma)
        w = group["max_lr"] * group["max_lr"]
        group["sum_lr2"] += w
        c = w / group["sum_lr2"]
        if group["c"] > 0:
            c = min(c * (1 - group["betas"][0]) * group["c"], 1.0)
        group["last_lr"], group["last_c"] = gamma, c
        return gamma, c

    @torch.no_grad()
    def step(self, closure=None):
        """Takes one step with the gradients g_t = grad f(y_t) in the parameters' .grad."""
        if not self.training:
            raise RuntimeError("SFAdamW.step in eval mode: the parameters hold x; call train() first")
        loss = self._begin(closure)
        for group in self.param_groups:
            gamma, c = self._advance(group)
            beta1, beta2 = group["betas"]
            rs = 1 / math.sqrt(1 - beta2 ** group["step"])  # sqrt(vhat) = sqrt(v) rs
            coef = gamma * (beta1 * (1 - c) - 1)
            ps = [p for p in group["params"] if p.grad is not None]
            if not ps:
                continue
            sts = [self._state(p, group) for p in ps]
            gs, zs, vs = [p.grad for p in ps], [st["z"] for st in sts], [st["v"] for st in sts]
            # every tensor of the group at once (torch's _foreach kernels: a launch per
            # operation and group on a GPU, not per tensor), each element as the
            # per-tensor form computes it
            torch._foreach_mul_(vs, beta2)
            torch._foreach_addcmul_(vs, gs, gs, value=1 - beta2)
            den = torch._foreach_sqrt(vs)
            torch._foreach_mul_(den, rs)
            torch._foreach_add_(den, group["eps"])
            d = torch._foreach_div(gs, den)
            torch._foreach_add_(d, ps, alpha=group["weight_decay"])  # D_t, weight decay at y_t
            _lerp_(ps, zs, c)
            torch._foreach_add_(ps, d, alpha=coef)  # y_{t+1} from y_t and z_t
            torch._foreach_add_(zs, d, alpha=-gamma)  # z_{t+1}
            xs = [st["x"] for st in sts if "x" in st]
            if xs:
                _lerp_(xs, [st["z"] for st in sts if "x" in st], c)
        return loss

    @torch.no_grad()
    def eval(self):
        """Turns the parameters into x_t, the averaged iterate where the paper evaluates."""
        if not self.training:
            return
        for group in self.param_groups:
            beta1 = group["betas"][0]
            for p in group["params"]:
                st = self.state[p]
                if "x" in st:
                    p.copy_(st["x"])
                elif st:  # x = (y - (1-beta1) z)/beta1
                    p.lerp_(st["z"], 1 - 1 / beta1)
        self.training = False

    @torch.no_grad()
    def train(self):
        """Turns the parameters back into y_t = (1-beta1) z_t + beta1 x_t for training."""
        if self.training:
            return
        for group in self.param_groups:
            beta1 = group["betas"][0]
            for p in group["params"]:
                st = self.state[p]
                if st:
                    p.lerp_(st["z"], 1 - beta1)
        self.training = True


SCHEDULES = ("constant", "cosine", "linear", "wsd")


class Schedule:
    """The learning rate gamma_t of step t = 1, 2, ..., as sfadamw.Schedule. Every kind
    starts with the linear warmup gamma t/T_warmup for t < T_warmup, then:

      constant  the peak;
      cosine    cosine from the peak to final_frac x peak at total_steps;
      linear    linear from the peak to 0 at total_steps;
      wsd       the peak until decay_start (the last step at the peak), then a decay to 0
                over decay_steps, linear or, with decay_shape "sqrt", 1 - sqrt(progress).
    """

    def __init__(self, kind, peak, warmup_steps=0, total_steps=0, final_frac=0.0,
                 decay_start=0, decay_steps=0, decay_shape="linear"):
        self.kind, self.peak, self.warmup_steps = kind, peak, warmup_steps
        self.total_steps, self.final_frac = total_steps, final_frac
        self.decay_start, self.decay_steps = decay_start, decay_steps
        self.decay_shape = decay_shape or "linear"
        self.validate()

    def validate(self):
        if not (math.isfinite(self.peak) and self.peak > 0):
            raise ValueError(f"lr = {self.peak}: must be a finite number > 0")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps = {self.warmup_steps}: must be >= 0")
        if self.kind in ("cosine", "linear"):
            if self.total_steps <= self.warmup_steps:
                raise ValueError(f"total_steps = {self.total_steps}: must exceed warmup_steps "
                                 f"({self.warmup_steps}) for a {self.kind} schedule")
            if self.kind == "cosine" and not 0 <= self.final_frac <= 1:
                raise ValueError(f"final_frac = {self.final_frac}: must be in [0, 1]")
        elif self.kind == "wsd":
            if self.decay_start < self.warmup_steps:
                raise ValueError(f"decay_start = {self.decay_start}: must be >= warmup_steps "
                                 f"({self.warmup_steps})")
            if self.decay_steps <= 0:
                raise ValueError(f"decay_steps = {self.decay_steps}: must be > 0")
            if self.decay_shape not in ("linear", "sqrt"):
                raise ValueError(f'decay_shape = {self.decay_shape}: must be "linear" or "sqrt"')
        elif self.kind != "constant":
            raise ValueError(f"schedule = {self.kind}: must be one of {', '.join(SCHEDULES)}")

    def at(self, t):
        """Returns gamma_t for step t >= 1."""
        if self.warmup_steps > 0 and t < self.warmup_steps:
            return self.peak * t / self.warmup_steps
        if self.kind == "cosine":
            p = _progress(t - self.warmup_steps, self.total_steps - self.warmup_steps)
            final = self.final_frac * self.peak
            return final + (self.peak - final) * 0.5 * (1 + math.cos(math.pi * p))
        if self.kind == "linear":
            return self.peak * (1 - _progress(t - self.warmup_steps, self.total_steps - self.warmup_steps))
        if self.kind == "wsd":
            if t <= self.decay_start:
                return self.peak
            p = _progress(t - self.decay_start, self.decay_steps)
            if self.decay_shape == "sqrt":
                return self.peak * (1 - math.sqrt(p))
            return self.peak * (1 - p)
        return self.peak


def _progress(done, total):
    if total <= 0:
        return 1.0
    return min(max(done / total, 0.0), 1.0)


class AdamW(_Shared, torch.optim.AdamW):
    """torch.optim.AdamW (decoupled weight decay p <- p (1 - gamma_t lambda)) whose learning
    rate follows a Schedule, with optional global gradient clipping (the paper clips at 1.0).
    """

    _saved = ("steps", "last_lr")

    def __init__(self, params, schedule, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                 grad_clip=0.0, **kwargs):
        if not (math.isfinite(grad_clip) and grad_clip >= 0):
            raise ValueError(f"grad_clip = {grad_clip}: must be a finite number >= 0")
        kwargs.setdefault("foreach", True)  # every tensor at once, as SFAdamW
        super().__init__(params, lr=schedule.at(1), betas=betas, eps=eps,
                         weight_decay=weight_decay, **kwargs)
        self.schedule = schedule
        self.grad_clip = grad_clip
        self.steps = 0
        self.last_lr = 0.0
        self.last_grad_norm = None

    @torch.no_grad()
    def step(self, closure=None):
        """Takes one step at gamma_t of the schedule, with the gradients in .grad."""
        loss = self._begin(closure)
        self.steps += 1
        self.last_lr = self.schedule.at(self.steps)
        for group in self.param_groups:
            group["lr"] = self.last_lr
        super().step()
        return loss
