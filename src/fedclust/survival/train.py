"""Local DeepCox training with the D6.2 learning-rate rule (seed 003 §7.5) and the centralized
trainer (the upper bound of Table 8.1).

Training is organised as ``fe`` outer ("federated") epochs of ``ie`` internal epochs over
``batches`` minibatches. At the start of outer epoch k the Cox loss (mean over events) of the
current model is measured and the rule lr ← max(lr/√k, floor) is applied when it rose since
epoch k−1. A fresh optimizer is built for every outer epoch, exactly as a federated centre builds
one per round, so one centre trained by Sequential or Weights Averaging equals this trainer with
the same seed (tested).
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import torch

from fedclust import torch_optim
from fedclust.errors import ConfigError
from fedclust.federation import unit_floor

from .cox import RiskSets, cox_loss
from .model import DeepCox, get_parameters, set_parameters

OPTIMIZERS = ("adam", "sgd")


@dataclass(frozen=True)
class HyperParams:
    """One grid point (D6.2 grid: federated epochs, internal epochs, internal batches, lr)."""

    fe: int
    ie: int
    batches: int
    lr: float

    def label(self) -> str:
        return f"fe{self.fe}_ie{self.ie}_b{self.batches}_lr{self.lr:g}"


@dataclass(frozen=True)
class ModelConfig:
    """Fixed model / optimiser settings (config ``survival.model``)."""

    hidden: tuple[int, ...] = (8, 4)
    activation: str = "relu"
    l1: float = 1e-3
    l2: float = 1e-3
    optimizer: str = "adam"
    lr_floor: float = 1e-3

    def build(self, n_in: int) -> DeepCox:
        return DeepCox(n_in, tuple(self.hidden), self.activation)


class LrRule:
    """lr^(k) = max(lr^(k−1)/√k, floor) if Loss^(k) > Loss^(k−1) (D6.2 §8.3.2). The floor never
    raises an initial lr that is already below it."""

    def __init__(self, lr: float, floor: float):
        self.lr, self.floor, self.prev = float(lr), float(floor), None

    def update(self, loss: float, k: int) -> float:
        if self.prev is not None and loss > self.prev and k > 0:
            self.lr = max(self.lr / math.sqrt(k), min(self.lr, self.floor))
        self.prev = float(loss)
        return self.lr


def make_optimizer(name: str, params, lr: float):
    """torch.optim's Adam / SGD numbers via :mod:`fedclust.torch_optim` (no torch._dynamo
    import: ~1 CPU-s per job)."""
    if name == "adam":
        return torch_optim.Adam(params, lr=lr)
    if name == "sgd":
        return torch_optim.SGD(params, lr=lr)
    raise ConfigError(
        f"unknown optimizer {name!r}",
        where="survival.model.optimizer",
        fix=f"one of {', '.join(OPTIMIZERS)}",
    )


def local_train(
    model: DeepCox,
    x: torch.Tensor,
    t: torch.Tensor,
    e: torch.Tensor,
    epochs: int,
    batches: int,
    lr: float,
    gen: torch.Generator,
    mc: ModelConfig,
    touched: list[torch.Tensor] | None = None,
) -> None:
    """``epochs`` passes over ``batches`` minibatches (redrawn each epoch from ``gen`` when
    batches > 1); loss = Cox mean over the batch's events + L1/L2 on the first layer. A minibatch
    without an event has no partial likelihood and is skipped. ``touched``: the hidden units'
    sample counts of the centre's per-unit floor (:mod:`fedclust.federation.unit_floor`), filled
    from every step."""
    opt = make_optimizer(mc.optimizer, model.parameters(), lr)
    n = len(t)
    full = RiskSets(t, e) if batches == 1 else None  # fixed risk sets: sort once
    rec = unit_floor.Touched(model, touched) if touched is not None else None
    with rec if rec is not None else nullcontext():
        for _ in range(epochs):
            if full is not None:
                opt.zero_grad()
                loss = full.loss(model(x)) + model.first_layer_penalty(mc.l1, mc.l2)
                loss.backward()
                if rec is not None:
                    rec.step(slice(None))
                opt.step()
                continue
            idx = torch.randperm(n, generator=gen)
            for b in torch.tensor_split(idx, min(batches, n)):
                if not bool(e[b].any()):
                    continue
                opt.zero_grad()
                loss = cox_loss(model(x[b]), t[b], e[b]) + model.first_layer_penalty(mc.l1, mc.l2)
                loss.backward()
                if rec is not None:
                    rec.step(b)
                opt.step()


@torch.no_grad()
def loss_sum(
    model: DeepCox, x: torch.Tensor, t: torch.Tensor, e: torch.Tensor
) -> tuple[float, int]:
    """(Cox loss summed over events, number of events) of ``model`` on local data."""
    return float(cox_loss(model(x), t, e, reduction="sum")), int(e.sum())


@torch.no_grad()
def predict(model: DeepCox, params: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    set_parameters(model, params)
    return model(torch.as_tensor(x, dtype=torch.float32)).double().numpy()


def tensors(x: np.ndarray, t: np.ndarray, e: np.ndarray):
    return (
        torch.as_tensor(np.asarray(x), dtype=torch.float32),
        torch.as_tensor(np.asarray(t), dtype=torch.float32),
        torch.as_tensor(np.asarray(e), dtype=torch.bool),
    )


def train_centralized(
    x: np.ndarray,
    t: np.ndarray,
    e: np.ndarray,
    init: list[np.ndarray],
    hp: HyperParams,
    mc: ModelConfig,
    seed: int,
    touched: list[torch.Tensor] | None = None,
) -> tuple[list[np.ndarray], list[float]]:
    """Pooled training (Table 8.1 upper bound; also each isolated centre / ensemble member):
    returns the parameters and the loss at the start of every outer epoch. ``touched``: see
    :func:`local_train`."""
    xt, tt, et = tensors(x, t, e)
    model = mc.build(xt.shape[1])
    set_parameters(model, init)
    gen = torch.Generator().manual_seed(int(seed))
    rule = LrRule(hp.lr, mc.lr_floor)
    history = []
    for k in range(hp.fe):
        s, n_ev = loss_sum(model, xt, tt, et)
        history.append(s / n_ev)
        lr = rule.update(s / n_ev, k)
        local_train(model, xt, tt, et, hp.ie, hp.batches, lr, gen, mc, touched)
    return get_parameters(model), history
