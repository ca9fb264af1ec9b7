"""The thesis' network in torch with Keras 2.11 semantics (spec §3.1, §8.2).

Dense 256-256-256-128-32-1 (ReLU, sigmoid output), each hidden Dense followed by BatchNormalization
and Dropout(0.5); L1 = L2 = 0.01 on the first kernel. Keras defaults reproduced: Glorot-uniform
kernels and zero biases; BN momentum 0.99 / epsilon 1e-3 with the *biased* batch variance for the
moving variance (torch's BatchNorm uses the unbiased one and rejects batches of one row, which the
thesis' last partial batch of client "stat" is); Adam with the epsilon-hat form
(``lr·√(1-β2ᵗ)/(1-β1ᵗ)``, ε = 1e-7). ``get_weights`` / ``set_weights`` use the Keras order of 32
arrays (kernel (in, out), bias; γ, β, moving mean, moving variance), which is what is exchanged,
averaged and compared by the weight divergence.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

HIDDEN = (256, 256, 256, 128, 32)
N_PARAMETERS = 177_729  # spec §3.1: 175,873 trainable + 1,856 BN moving statistics


class KerasBatchNorm(nn.Module):
    """BatchNormalization as Keras: momentum 0.99, epsilon 1e-3, biased variance everywhere."""

    def __init__(self, n: int, momentum: float = 0.99, eps: float = 1e-3):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n))
        self.register_buffer("running_mean", torch.zeros(n))
        self.register_buffer("running_var", torch.ones(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            var, mean = torch.var_mean(x, dim=0, correction=0)
            with torch.no_grad():
                self.running_mean.lerp_(mean, 1.0 - self.momentum)
                self.running_var.lerp_(var, 1.0 - self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) * (torch.rsqrt(var + self.eps) * self.weight) + self.bias


def dropout_noise(gen: torch.Generator, batch: int, width: int, p: float) -> torch.Tensor:
    """One training step's dropout masks of one model copy, drawn from that copy's own
    generator: a (batch, width) keep-mask scaled by ``1/(1-p)`` (inverted dropout, as Keras and
    ``F.dropout``); columns are the hidden layers side by side (``sum(HIDDEN)``). Drawn the same
    way by :class:`HeartNet` and the lockstep :class:`~.batched.BatchedHeartNet`, so a copy's
    masks do not depend on which other copies train beside it."""
    if p <= 0.0:
        return torch.ones(batch, width)
    if p >= 1.0:
        return torch.zeros(batch, width)
    return torch.empty(batch, width).bernoulli_(1.0 - p, generator=gen).div_(1.0 - p)


class HeartNet(nn.Module):
    """The thesis' MLP; ``forward`` returns logits (the sigmoid is applied in the loss)."""

    def __init__(
        self,
        n_features: int = 20,
        hidden: tuple[int, ...] = HIDDEN,
        dropout: float = 0.5,
        l1: float = 0.01,
        l2: float = 0.01,
    ):
        super().__init__()
        self.l1, self.l2, self.p = l1, l2, dropout
        self.width = int(sum(hidden))
        self.dense = nn.ModuleList()
        self.bn = nn.ModuleList()
        d = n_features
        for h in hidden:
            self.dense.append(nn.Linear(d, h))
            self.bn.append(KerasBatchNorm(h))
            d = h
        self.out = nn.Linear(d, 1)
        self.drop = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Keras defaults: Glorot-uniform kernels, zero biases, fresh BN."""
        for lin in [*self.dense, self.out]:
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)
        for bn in self.bn:
            nn.init.ones_(bn.weight)
            nn.init.zeros_(bn.bias)
            bn.running_mean.zero_()
            bn.running_var.fill_(1.0)

    def forward(self, x: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """Logits. In training, ``noise`` (:func:`dropout_noise`, shape (batch, sum(hidden)))
        gives the dropout masks; without it dropout draws from torch's global generator."""
        off = 0
        for lin, bn in zip(self.dense, self.bn, strict=True):
            x = bn(torch.relu(lin(x)))
            if noise is not None and self.training:
                h = x.shape[-1]
                x = x * noise[:, off : off + h]
                off += h
            else:
                x = self.drop(x)
        return self.out(x).squeeze(-1)

    def penalty(self) -> torch.Tensor:
        """Keras ``l1_l2(0.01)`` on the first kernel: the part of the reported loss beyond BCE."""
        w = self.dense[0].weight
        return self.l1 * w.abs().sum() + self.l2 * w.square().sum()

    def keras_tensors(self) -> list[torch.Tensor]:
        """The 32 tensors in Keras ``get_weights`` order (kernels still torch (out, in))."""
        out: list[torch.Tensor] = []
        for lin, bn in zip(self.dense, self.bn, strict=True):
            out += [lin.weight, lin.bias, bn.weight, bn.bias, bn.running_mean, bn.running_var]
        return out + [self.out.weight, self.out.bias]

    def get_weights(self) -> list[np.ndarray]:
        """Keras-ordered list of 32 float32 arrays (kernels as (in, out))."""
        return [
            (t.detach().T if t.dim() == 2 else t.detach()).numpy().copy()
            for t in self.keras_tensors()
        ]

    @torch.no_grad()
    def set_weights(self, weights: list[np.ndarray]) -> None:
        tensors = self.keras_tensors()
        if len(weights) != len(tensors):
            raise ValueError(f"expected {len(tensors)} arrays, got {len(weights)}")
        for t, w in zip(tensors, weights, strict=True):
            w = torch.as_tensor(np.asarray(w, dtype=np.float32))
            t.copy_(w.T if t.dim() == 2 else w)


def count_parameters(model: HeartNet) -> int:
    return int(sum(w.size for w in model.get_weights()))


class KerasAdam:
    """Adam exactly as Keras 2.11 (epsilon-hat form), one step counter for all parameters.

    For speed the parameters are re-homed as views of one flat buffer, so a step is a handful of
    vector operations on 176k floats instead of a loop over 22 tensors. A plain class (with
    ``torch.optim``'s ``param_groups`` shape): a ``torch.optim.Optimizer`` subclass imports
    ``torch._dynamo`` in its constructor, ≈1 CPU-s per job (issue 15).
    """

    def __init__(self, params, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-7):  # fmt: skip
        params = list(params)
        self.param_groups = [dict(params=params, lr=lr, beta1=beta1, beta2=beta2, eps=eps)]
        self.params = params
        with torch.no_grad():
            self.flat = torch.cat([p.detach().reshape(-1) for p in params])
            off = 0
            for p in params:
                p.data = self.flat[off : off + p.numel()].view_as(p)
                off += p.numel()
        self._denom = torch.empty_like(self.flat)
        self.reset_state()

    def reset_state(self) -> None:
        self.t = 0
        self.m = torch.zeros_like(self.flat)
        self.v = torch.zeros_like(self.flat)

    def get_state(self) -> tuple[int, torch.Tensor, torch.Tensor]:
        return self.t, self.m.clone(), self.v.clone()

    def set_state(self, state: tuple[int, torch.Tensor, torch.Tensor]) -> None:
        self.t = state[0]
        self.m.copy_(state[1])
        self.v.copy_(state[2])

    @torch.no_grad()
    def step(self, closure=None):
        g = self.param_groups[0]
        grad = torch.cat(
            [
                (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                for p in self.params
            ]
        )
        self.t += 1
        b1, b2 = g["beta1"], g["beta2"]
        alpha = g["lr"] * math.sqrt(1.0 - b2**self.t) / (1.0 - b1**self.t)
        self.m.lerp_(grad, 1.0 - b1)
        self.v.mul_(b2).addcmul_(grad, grad, value=1.0 - b2)
        torch.sqrt(self.v, out=self._denom).add_(g["eps"])
        self.flat.addcdiv_(self.m, self._denom, value=-alpha)
