"""Local optimizers: SGD (momentum 0.9), Adam and Yogi (seed 000 §1.5)."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from fedclust import torch_optim
from fedclust.errors import ConfigError

OPTIMIZERS = ("sgd", "adam", "yogi")


class Yogi:
    """Yogi (Zaheer et al. 2018), in the torch-optimizer 0.3.0 form used by the thesis code.

    m_t = β1 m + (1−β1) g;  v_t = v − (1−β2) sign(v − g²) g²  (m, v start at the accumulator)
    w  ← w − lr/(1−β1^t) · m_t / (sqrt(v_t)/sqrt(1−β2^t) + eps)

    A plain class with :mod:`fedclust.torch_optim`'s interface (``zero_grad`` sets gradients to
    ``None``, ``step``, a mutable ``lr``): a ``torch.optim.Optimizer`` subclass would import
    ``torch._dynamo`` (≈1 CPU-s per job) in its constructor.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-2,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-3,
        initial_accumulator: float = 1e-6,
        weight_decay: float = 0.0,
    ) -> None:
        if lr <= 0 or eps < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError("Yogi: need lr > 0, eps >= 0 and betas in [0, 1)")
        self.params = list(params)
        self.lr, self.betas, self.eps = lr, betas, eps
        self.initial_accumulator, self.weight_decay = initial_accumulator, weight_decay
        self.state: dict[int, dict] = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        b1, b2 = self.betas
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            g = p.grad
            if self.weight_decay:
                g = g.add(p, alpha=self.weight_decay)
            state = self.state.setdefault(i, {})
            if not state:
                state["step"] = 0
                state["m"] = torch.full_like(p, self.initial_accumulator)
                state["v"] = torch.full_like(p, self.initial_accumulator)
            state["step"] += 1
            t = state["step"]
            m, v = state["m"], state["v"]
            m.mul_(b1).add_(g, alpha=1 - b1)
            g2 = g * g
            v.addcmul_(torch.sign(v - g2), g2, value=-(1 - b2))
            denom = v.sqrt() / (1 - b2**t) ** 0.5 + self.eps
            p.addcdiv_(m, denom, value=-self.lr / (1 - b1**t))


Optimizer = torch_optim.SGD | torch_optim.Adam | Yogi


def make_optimizer(name: str, params: Iterable, lr: float, **kw: float) -> Optimizer:
    """``sgd`` (momentum 0.9), ``adam`` (torch defaults) or ``yogi`` (:class:`Yogi`); SGD and
    Adam are :mod:`fedclust.torch_optim`'s (``torch.optim``'s numbers, bit for bit)."""
    if name == "sgd":
        return torch_optim.SGD(params, lr=lr, momentum=kw.get("momentum", 0.9))
    if name == "adam":
        return torch_optim.Adam(params, lr=lr)
    if name == "yogi":
        return Yogi(params, lr=lr, eps=kw.get("yogi_eps", 1e-3))
    raise ConfigError(
        f"unknown optimizer {name!r}", where="dec optimizer", fix=f"use one of {OPTIMIZERS}"
    )
