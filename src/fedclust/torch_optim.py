"""``torch.optim.Adam`` / ``SGD`` / ``lr_scheduler.ReduceLROnPlateau`` numbers without the
``torch.optim.Optimizer`` wrapper.

The wrapper's constructor (``add_param_group`` is ``torch._disable_dynamo``-decorated) imports
``torch._dynamo``: about 1 CPU-second per Python process, paid by every one-core
Snakemake job that trains a small model (measured with ``python -X importtime``). These classes
keep the state exactly as ``torch.optim.Adam._init_group`` / ``SGD._init_group`` build it and
call torch's own functional kernels (``torch.optim.adam.adam``, ``torch.optim.sgd.sgd``) with
the wrapper's default ``foreach=None, fused=None`` (the kernels then pick what ``torch.optim``
picks: the single-tensor loop on CPU, ``foreach`` on CUDA), so every step is bit-identical to
``torch.optim`` (``tests/test_torch_optim.py``); ``zero_grad`` sets gradients to ``None`` as
``torch.optim``'s default ``set_to_none=True`` does.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch.optim.adam import adam as _adam
from torch.optim.optimizer import _get_scalar_dtype
from torch.optim.sgd import sgd as _sgd


class Adam:
    """``torch.optim.Adam(params, lr, betas, eps, weight_decay)`` (no amsgrad/fused/foreach)."""

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        if lr < 0 or eps < 0 or weight_decay < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"invalid Adam settings lr={lr}, betas={betas}, eps={eps}")
        self.params = list(params)
        self.lr, self.betas, self.eps, self.weight_decay = float(lr), betas, eps, weight_decay
        self.state: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        ps, grads, m, v, steps = [], [], [], [], []
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            if i not in self.state:
                self.state[i] = (
                    torch.tensor(0.0, dtype=_get_scalar_dtype(), device="cpu"),
                    torch.zeros_like(p, memory_format=torch.preserve_format),
                    torch.zeros_like(p, memory_format=torch.preserve_format),
                )
            step, exp_avg, exp_avg_sq = self.state[i]
            ps.append(p), grads.append(p.grad), m.append(exp_avg), v.append(exp_avg_sq)
            steps.append(step)
        _adam(
            ps,
            grads,
            m,
            v,
            [],
            steps,
            foreach=None,  # torch's default: foreach on CUDA, the single-tensor loop on CPU
            fused=None,
            has_complex=any(torch.is_complex(p) for p in ps),
            amsgrad=False,
            beta1=self.betas[0],
            beta2=self.betas[1],
            lr=self.lr,
            weight_decay=self.weight_decay,
            eps=self.eps,
            maximize=False,
        )


class SGD:
    """``torch.optim.SGD(params, lr, momentum, weight_decay)`` (no nesterov/dampening)."""

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-3,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
    ):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"invalid SGD settings lr={lr}, momentum={momentum}")
        self.params = list(params)
        # ``lr`` may be changed between steps (:class:`ReduceLROnPlateau`)
        self.lr, self.momentum, self.weight_decay = float(lr), momentum, weight_decay
        self.buffers: dict[int, torch.Tensor | None] = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        idx = [i for i, p in enumerate(self.params) if p.grad is not None]
        ps = [self.params[i] for i in idx]
        bufs = [self.buffers.get(i) for i in idx] if self.momentum != 0 else []
        _sgd(
            ps,
            [p.grad for p in ps],
            bufs,
            foreach=None,  # torch's default: foreach on CUDA, the single-tensor loop on CPU
            fused=None,
            weight_decay=self.weight_decay,
            momentum=self.momentum,
            lr=self.lr,
            dampening=0.0,
            nesterov=False,
            maximize=False,
        )
        if self.momentum != 0:  # the kernel creates the buffers of the first step in place
            self.buffers.update(zip(idx, bufs, strict=True))


class ReduceLROnPlateau:
    """``torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor, patience)`` with
    torch's defaults (relative threshold 1e-4, cooldown 0, min_lr 0, eps 1e-8) for an optimizer
    of this module (or any object with a float ``lr``); same float arithmetic as torch's."""

    def __init__(self, opt: Adam | SGD, factor: float = 0.1, patience: int = 10):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.opt, self.factor, self.patience = opt, factor, patience
        self.threshold, self.eps = 1e-4, 1e-8
        self.best, self.num_bad_epochs = float("inf"), 0

    def step(self, metric: float) -> None:
        current = float(metric)
        if current < self.best * (1.0 - self.threshold):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            old_lr = float(self.opt.lr)
            new_lr = max(old_lr * self.factor, 0)
            if old_lr - new_lr > self.eps:
                self.opt.lr = new_lr
            self.num_bad_epochs = 0
