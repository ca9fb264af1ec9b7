"""Per-cluster autoencoder (seed 002 §2.2, §6): d−100−64−32 mirrored, ReLU, sigmoid output,
Adam 1e-3, MSE, batch 32, 20 epochs with early stop on the training loss (patience 4).
Per-sample error e_k = mean over features of (x̂ − x)² (eq. 1).

FedCRef trains hundreds of tiny MLPs per iteration, where per-step Python/optimizer overhead
dominates. The AE therefore keeps all its weights in one flat tensor (layer weights and biases
are views, in ``nn.Sequential`` state_dict order) and :func:`train_ae` applies Adam to that flat
vector in five tensor ops. The update is torch.optim.Adam's (same bias correction and ε
placement); ``tests/test_fedcref.py`` checks it against ``torch.optim.Adam`` on ``nn.Linear``
layers step for step. :func:`as_sequential` gives the equivalent ``nn.Sequential``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from fedclust.dec.train import batches, shuffle_generator
from fedclust.seeds import derive_seed

NDArrays = list[np.ndarray]


class FlatAE:
    """Fully connected AE d−h1−…−hk−…−h1−d on one flat parameter vector."""

    def __init__(self, d: int, hidden: Sequence[int], seed: int | None = 0) -> None:
        dims = [int(d), *[int(h) for h in hidden]]
        rev = dims[::-1]
        self.layers = list(zip(dims[:-1], dims[1:], strict=False)) + list(
            zip(rev[:-1], rev[1:], strict=False)
        )
        self.shapes: list[tuple[int, ...]] = []
        for i, o in self.layers:
            self.shapes += [(o, i), (o,)]
        self.sizes = [math.prod(s) for s in self.shapes]
        self.flat = torch.empty(sum(self.sizes))
        if seed is not None:  # nn.Linear's default init: U(±1/√fan_in) for weights and biases
            gen = torch.Generator().manual_seed(derive_seed(seed, "fedcref", "ae_init"))
            off = 0
            for (i, _o), sw, sb in zip(self.layers, self.sizes[::2], self.sizes[1::2], strict=True):
                bound = 1.0 / math.sqrt(i)
                self.flat[off : off + sw + sb].uniform_(-bound, bound, generator=gen)
                off += sw + sb

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        out, off = [], 0
        for shape, size in zip(self.shapes, self.sizes, strict=True):
            out.append(flat[off : off + size].view(shape))
            off += size
        return out

    def forward(self, x: torch.Tensor, flat: torch.Tensor | None = None) -> torch.Tensor:
        v = self.views(self.flat if flat is None else flat)
        h = x
        last = len(self.layers) - 1
        for k in range(len(self.layers)):
            h = F.linear(h, v[2 * k], v[2 * k + 1])
            h = torch.sigmoid(h) if k == last else F.relu(h)
        return h

    __call__ = forward


def make_ae(d: int, hidden: Sequence[int], seed: int | None = 0) -> FlatAE:
    """A fresh AE, initialised from ``seed`` (no global RNG state is touched)."""
    return FlatAE(d, hidden, seed)


def get_parameters(model: FlatAE) -> NDArrays:
    """Weights as a list of arrays (``nn.Sequential`` state_dict order: W0, b0, W1, b1, …)."""
    return [t.detach().cpu().numpy().copy() for t in model.views(model.flat)]


def set_parameters(model: FlatAE, parameters: Sequence[np.ndarray]) -> None:
    if [tuple(np.shape(p)) for p in parameters] != model.shapes:
        raise ValueError("parameter shapes do not match the autoencoder")
    model.flat = torch.cat(
        [torch.as_tensor(np.asarray(p, np.float32)).reshape(-1) for p in parameters]
    )


def as_sequential(model: FlatAE) -> nn.Sequential:
    """The same network as ``nn.Linear`` layers (for checks and export)."""
    mods: list[nn.Module] = []
    last = len(model.layers) - 1
    for k, (i, o) in enumerate(model.layers):
        mods += [nn.Linear(i, o), nn.Sigmoid() if k == last else nn.ReLU()]
    seq = nn.Sequential(*mods)
    keys = list(seq.state_dict())
    seq.load_state_dict({k: v.clone() for k, v in zip(keys, model.views(model.flat), strict=True)})
    return seq


def train_ae(
    model: FlatAE,
    x: torch.Tensor,
    epochs: int,
    batch_size: int,
    lr: float,
    gen: torch.Generator,
    patience: int | None = None,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> list[float]:
    """Adam (fresh state) + MSE, minibatches reshuffled every epoch from ``gen``; early stop
    when the epoch loss has not improved for ``patience`` epochs (Keras EarlyStopping('loss'))."""
    b1, b2 = betas
    p = model.flat.clone().requires_grad_(True)
    m = torch.zeros_like(p)
    v = torch.zeros_like(p)
    step = 0
    losses: list[float] = []
    best, wait = np.inf, 0
    for _ in range(int(epochs)):
        total = 0.0
        for idx in batches(len(x), batch_size, True, gen):
            xb = x[idx]
            loss = F.mse_loss(model.forward(xb, p), xb)
            (g,) = torch.autograd.grad(loss, p)
            step += 1
            with torch.no_grad():
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (v.sqrt() / math.sqrt(1 - b2**step)).add_(eps)
                p.addcdiv_(m, denom, value=-lr / (1 - b1**step))
            total += loss.item() * len(idx)
        losses.append(total / max(len(x), 1))
        if patience is not None:
            if losses[-1] < best:
                best, wait = losses[-1], 0
            else:
                wait += 1
                if wait >= patience:
                    break
    model.flat = p.detach()
    return losses


@torch.no_grad()
def sample_errors(model: FlatAE, x: torch.Tensor, chunk: int = 8192) -> np.ndarray:
    """Per-sample reconstruction MSE (mean over features) of ``model`` on ``x``."""
    out = [
        ((model(x[i : i + chunk]) - x[i : i + chunk]) ** 2).mean(1) for i in range(0, len(x), chunk)
    ]
    return torch.cat(out).cpu().numpy().astype(np.float64) if out else np.zeros(0)


def generator(seed: int, *labels: object) -> torch.Generator:
    return shuffle_generator(derive_seed(seed, *labels))
