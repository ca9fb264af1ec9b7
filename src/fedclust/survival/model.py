"""DeepCox (Faraggi & Simon; D6.2 §8.3.1, seed 003 §7.5): MLP p → 8 → 4 → 1 with a linear risk
output and L1 + L2 penalties on the first layer's weights."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from fedclust.errors import ConfigError

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "selu": nn.SELU, "elu": nn.ELU}


class DeepCox(nn.Module):
    """``hidden=()`` gives the linear Cox model f(x) = xᵀβ (+ a bias the loss ignores)."""

    def __init__(self, n_in: int, hidden: tuple[int, ...] = (8, 4), activation: str = "relu"):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ConfigError(
                f"unknown activation {activation!r}",
                where="survival.model.activation",
                fix=f"one of {', '.join(ACTIVATIONS)}",
            )
        layers: list[nn.Module] = []
        d = n_in
        for h in hidden:
            layers += [nn.Linear(d, h), ACTIVATIONS[activation]()]
            d = h
        layers.append(nn.Linear(d, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)

    def first_layer_penalty(self, l1: float, l2: float) -> torch.Tensor:
        w = self.net[0].weight
        return l1 * w.abs().sum() + l2 * (w * w).sum()


def _tensors(model: nn.Module) -> list[torch.Tensor]:
    """The model's state tensors in ``state_dict`` order (a DeepCox has parameters only)."""
    return list(model.state_dict(keep_vars=True).values())


def get_parameters(model: nn.Module) -> list[np.ndarray]:
    return [p.detach().cpu().numpy().copy() for p in _tensors(model)]


@torch.no_grad()
def set_parameters(model: nn.Module, params: list[np.ndarray]) -> None:
    """``load_state_dict``'s in-place copy (dtype cast included) without its per-call
    bookkeeping, which dominated the short federated rounds."""
    for t, v in zip(_tensors(model), params, strict=True):
        src = torch.as_tensor(np.asarray(v))
        if src.shape != t.shape:
            raise ValueError(f"parameter shape {tuple(src.shape)} != model's {tuple(t.shape)}")
        t.copy_(src)
