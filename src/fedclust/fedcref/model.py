"""Per-cluster autoencoder (seed 002 §2.2, §6): d−100−64−32 mirrored, ReLU, sigmoid output,
Adam 1e-3, MSE, batch 32, 20 epochs with early stop on the training loss (patience 4).
Per-sample error e_k = mean over features of (x̂ − x)² (eq. 1)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from fedclust.dec.model import get_parameters, set_parameters
from fedclust.dec.train import batches, shuffle_generator
from fedclust.seeds import derive_seed

NDArrays = list[np.ndarray]
__all__ = ["make_ae", "train_ae", "sample_errors", "get_parameters", "set_parameters"]


def make_ae(d: int, hidden: Sequence[int], seed: int) -> nn.Sequential:
    """Fresh AE d−h1−…−hk−…−h1−d (ReLU everywhere, sigmoid output), init seeded."""
    torch.manual_seed(derive_seed(seed, "fedcref", "ae_init"))
    dims = [int(d), *[int(h) for h in hidden]]
    layers: list[nn.Module] = []
    for a, b in zip(dims[:-1], dims[1:], strict=False):
        layers += [nn.Linear(a, b), nn.ReLU()]
    rev = dims[::-1]
    for i, (a, b) in enumerate(zip(rev[:-1], rev[1:], strict=False)):
        layers += [nn.Linear(a, b), nn.Sigmoid() if i == len(rev) - 2 else nn.ReLU()]
    return nn.Sequential(*layers)


def train_ae(
    model: nn.Module,
    x: torch.Tensor,
    epochs: int,
    batch_size: int,
    lr: float,
    gen: torch.Generator,
    patience: int | None = None,
) -> list[float]:
    """Adam + MSE, minibatches reshuffled every epoch from ``gen``; early stop when the epoch
    loss has not improved for ``patience`` epochs (Keras EarlyStopping(monitor='loss'))."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses: list[float] = []
    best, wait = np.inf, 0
    for _ in range(int(epochs)):
        total = 0.0
        for idx in batches(len(x), batch_size, True, gen):
            xb = x[idx]
            opt.zero_grad()
            loss = F.mse_loss(model(xb), xb)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / max(len(x), 1))
        if patience is not None:
            if losses[-1] < best:
                best, wait = losses[-1], 0
            else:
                wait += 1
                if wait >= patience:
                    break
    return losses


@torch.no_grad()
def sample_errors(model: nn.Module, x: torch.Tensor, chunk: int = 8192) -> np.ndarray:
    """Per-sample reconstruction MSE (mean over features) of ``model`` on ``x``."""
    model.eval()
    out = [
        ((model(x[i : i + chunk]) - x[i : i + chunk]) ** 2).mean(1) for i in range(0, len(x), chunk)
    ]
    return torch.cat(out).cpu().numpy().astype(np.float64) if out else np.zeros(0)


def generator(seed: int, *labels: object) -> torch.Generator:
    return shuffle_generator(derive_seed(seed, *labels))
