"""Attack networks (seed 001 §8.2–8.3, thesis §3.3.4.2.4) and torch projection sampling."""

from __future__ import annotations

import torch
from torch import nn


class SexClassifier(nn.Module):
    """4 × [Linear → ReLU → BatchNorm], widths doubling from ``d_nn``; final Linear → 1 logit.

    The sigmoid of the thesis is folded into ``BCEWithLogitsLoss`` (numerically stable).
    """

    def __init__(self, d_in: int, d_nn: int, n_blocks: int = 4):
        super().__init__()
        layers: list[nn.Module] = []
        width_in = d_in
        for b in range(n_blocks):
            width = d_nn * 2**b
            layers += [nn.Linear(width_in, width), nn.ReLU(), nn.BatchNorm1d(width)]
            width_in = width
        layers.append(nn.Linear(width_in, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class LinearDecoder(nn.Module):
    """Deprojection ``f(Y) = Y R``, ``R ∈ R^{k×d}``; init random or the pseudo-inverse of Q."""

    def __init__(self, k: int, d: int, init: str = "random", q: torch.Tensor | None = None):
        super().__init__()
        if init == "pinv":
            if q is None:
                raise ValueError("pinv init needs the projection matrix")
            r = torch.linalg.pinv(q)
        elif init == "random":
            r = torch.randn(k, d) / k**0.5
        else:
            raise ValueError(f"unknown decoder init {init!r}: use random or pinv")
        self.r = nn.Parameter(r.to(torch.get_default_dtype()).clone())

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y @ self.r


class MLPDecoder(nn.Module):
    """3 × [Linear → ReLU], widths doubling from ``d_nn``, then a final Linear to d (§3.3.4.2.4)."""

    def __init__(self, k: int, d: int, d_nn: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(k, d_nn),
            nn.ReLU(),
            nn.Linear(d_nn, 2 * d_nn),
            nn.ReLU(),
            nn.Linear(2 * d_nn, 4 * d_nn),
            nn.ReLU(),
            nn.Linear(4 * d_nn, d),
        )

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.net(y)


def random_projection(d: int, k: int, kind: str, gen: torch.Generator) -> torch.Tensor:
    """A fresh matrix of the projection family (same law as ``hac.projection``), in torch."""
    if kind == "gaussian":
        return torch.randn(d, k, generator=gen)
    if kind == "orthogonal":
        tall = d >= k
        a = torch.randn((d, k) if tall else (k, d), generator=gen)
        q, r = torch.linalg.qr(a)
        q = q * torch.sign(torch.diagonal(r))
        return q if tall else q.T
    raise ValueError(f"unknown projection kind {kind!r}: use gaussian or orthogonal")
