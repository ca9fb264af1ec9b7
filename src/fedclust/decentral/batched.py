"""M independent copies of the thesis network trained in lockstep (vectorised over runs).

Approaches that train the same client with the same batch schedule (same rows, same shuffling
seed, same number of steps) can share every batch: their parameters are stacked along a leading
axis and one batched matmul replaces M small ones. Each copy keeps its own weights, BN statistics
and Adam state; the maths of every copy is that of :class:`~.model.HeartNet` + :class:`KerasAdam`
(tested against them). Each copy draws its dropout masks from its own generator per client
(:func:`~.training.client_generator` of the copy's ``dropout_seed``), exactly as the single-model
:class:`~.training.Trainer` with the same ``dropout_seed``: a copy's numbers do not depend on which
other copies share its group.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fedclust.seeds import derive_seed

from .model import HIDDEN, dropout_noise
from .training import OPTIMIZER_STATES, EvalResult, client_generator

#: the flat Adam buffer's length is a multiple of this (floats): no scalar tail in its kernels
PAD = 64


class BatchedHeartNet(nn.Module):
    def __init__(self, m: int, n_features: int = 20, hidden=HIDDEN, dropout: float = 0.5,
                 l1: float = 0.01, l2: float = 0.01, momentum: float = 0.99,
                 eps: float = 1e-3):  # fmt: skip
        super().__init__()
        self.m, self.l1, self.l2, self.p = m, l1, l2, dropout
        self.momentum, self.eps = momentum, eps
        dims = [n_features, *hidden, 1]
        self.W = nn.ParameterList(
            [nn.Parameter(torch.zeros(m, o, i)) for i, o in zip(dims, dims[1:], strict=False)]
        )
        self.b = nn.ParameterList([nn.Parameter(torch.zeros(m, o)) for o in dims[1:]])
        self.g = nn.ParameterList([nn.Parameter(torch.ones(m, h)) for h in hidden])
        self.be = nn.ParameterList([nn.Parameter(torch.zeros(m, h)) for h in hidden])
        for j, h in enumerate(hidden):
            self.register_buffer(f"rm{j}", torch.zeros(m, h))
            self.register_buffer(f"rv{j}", torch.ones(m, h))
        self.n_hidden, self.width = len(hidden), int(sum(hidden))

    def forward(self, x: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """``x`` (B, F) shared by all copies, or (M, B, F); returns logits (M, B). In training,
        ``noise`` (M, B, sum(hidden)) holds each copy's dropout masks (:func:`dropout_noise`);
        without it the masks come from torch's global generator."""
        off = 0
        h = self._dense(0, x)
        for j in range(self.n_hidden):
            if j > 0:
                h = self._dense(j, h)
            h = torch.relu(h)
            rm, rv = getattr(self, f"rm{j}"), getattr(self, f"rv{j}")
            if self.training:
                var, mean = torch.var_mean(h, dim=1, correction=0)
                with torch.no_grad():
                    rm.lerp_(mean, 1.0 - self.momentum)
                    rv.lerp_(var, 1.0 - self.momentum)
            else:
                mean, var = rm, rv
            h = (h - mean.unsqueeze(1)) * (torch.rsqrt(var + self.eps) * self.g[j]).unsqueeze(1)
            h = h + self.be[j].unsqueeze(1)
            if noise is not None and self.training:
                w = h.shape[-1]
                h = h * noise[:, :, off : off + w]
                off += w
            else:
                h = F.dropout(h, self.p, self.training)
        return self._dense(self.n_hidden, h).squeeze(-1)

    def _dense(self, j: int, h: torch.Tensor) -> torch.Tensor:
        """Dense layer ``j`` of every copy, one 2-D ``addmm`` per copy: a batched matmul
        (``bmm``/``baddbmm``) picks its BLAS kernel by the number of copies, so a copy's
        rounding would depend on how many copies share the group."""
        W, b = self.W[j], self.b[j]
        return torch.stack([
            torch.addmm(b[k], h if h.dim() == 2 else h[k], W[k].t()) for k in range(self.m)
        ])  # fmt: skip

    def penalty(self) -> torch.Tensor:
        """Per copy: L1 + L2 on the first kernel, shape (M,)."""
        w = self.W[0]
        return self.l1 * w.abs().sum((1, 2)) + self.l2 * w.square().sum((1, 2))

    def _tensors(self, k: int) -> list[torch.Tensor]:
        out: list[torch.Tensor] = []
        for j in range(self.n_hidden):
            out += [self.W[j][k], self.b[j][k], self.g[j][k], self.be[j][k],
                    getattr(self, f"rm{j}")[k], getattr(self, f"rv{j}")[k]]  # fmt: skip
        return out + [self.W[-1][k], self.b[-1][k]]

    def get_weights(self, k: int) -> list[np.ndarray]:
        return [
            (t.detach().T if t.dim() == 2 else t.detach()).numpy().copy() for t in self._tensors(k)
        ]

    @torch.no_grad()
    def set_weights(self, k: int, weights: list[np.ndarray]) -> None:
        for t, w in zip(self._tensors(k), weights, strict=True):
            w = torch.as_tensor(np.asarray(w, dtype=np.float32))
            t.copy_(w.T if t.dim() == 2 else w)


class BatchedTrainer:
    """Lockstep fit / evaluate of M copies; Adam (Keras form) on one flat buffer of all copies."""

    def __init__(self, m: int, n_features: int, lr: float, optimizer_state: str, seed: int,
                 dropout_seeds: list[int] | None = None):  # fmt: skip
        """``seed``: the shared shuffling; ``dropout_seeds``: one identity seed per copy (default:
        derived from ``seed`` and the copy's index)."""
        if dropout_seeds is None:
            dropout_seeds = [derive_seed(seed, "dropout", k) for k in range(m)]
        if len(dropout_seeds) != m:
            raise ValueError(f"{len(dropout_seeds)} dropout seeds for {m} copies")
        self.dropout_seeds = [int(s) for s in dropout_seeds]
        self._drop_gens: dict[str, list[torch.Generator]] = {}
        if optimizer_state not in OPTIMIZER_STATES:
            raise ValueError(f"optimizer_state must be one of {OPTIMIZER_STATES}")
        self.model = BatchedHeartNet(m, n_features)
        self.params = list(self.model.parameters())
        with torch.no_grad():
            # padded to a multiple of 64 floats: every element takes the vectorised path of the
            # Adam kernels (their scalar tail rounds differently, e.g. lerp without FMA), so a
            # copy's update does not depend on the number of copies
            total = sum(p.numel() for p in self.params)
            self._pad = torch.zeros(-total % PAD)
            self.flat = torch.cat([p.detach().reshape(-1) for p in self.params] + [self._pad])
            off = 0
            for p in self.params:
                p.data = self.flat[off : off + p.numel()].view_as(p)
                off += p.numel()
        self.lr, self.policy = lr, optimizer_state
        self._denom = torch.empty_like(self.flat)
        self._states: dict[str, tuple] = {}
        self._reset()
        self.gen = torch.Generator().manual_seed(int(seed))
        self.steps = 0

    def _reset(self) -> None:
        self.t, self.mom, self.vel = 0, torch.zeros_like(self.flat), torch.zeros_like(self.flat)

    @torch.no_grad()
    def _adam(self) -> None:
        grad = torch.cat([p.grad.reshape(-1) for p in self.params] + [self._pad])
        self.t += 1
        alpha = self.lr * math.sqrt(1.0 - 0.999**self.t) / (1.0 - 0.9**self.t)
        self.mom.lerp_(grad, 0.1)
        self.vel.mul_(0.999).addcmul_(grad, grad, value=0.001)
        torch.sqrt(self.vel, out=self._denom).add_(1e-7)
        self.flat.addcdiv_(self.mom, self._denom, value=-alpha)

    def fit(self, weights: list[list[np.ndarray]], X: torch.Tensor, y: torch.Tensor, epochs: int,
            batch_size: int, owner: str) -> list[list[np.ndarray]]:  # fmt: skip
        m = self.model
        for k, w in enumerate(weights):
            m.set_weights(k, w)
        if self.policy == "fresh_each_fit":
            self._reset()
        elif self.policy == "per_client":
            if owner in self._states:
                self.t, mom, vel = self._states[owner]
                self.mom.copy_(mom)
                self.vel.copy_(vel)
            else:
                self._reset()
        m.train()
        n = X.shape[0]
        gens = self._drop_gens.get(owner)
        if gens is None:
            gens = self._drop_gens[owner] = [client_generator(s, owner)
                                             for s in self.dropout_seeds]  # fmt: skip
        for _ in range(epochs):
            perm = torch.randperm(n, generator=self.gen)
            for start in range(0, n, batch_size):
                idx = perm[start : start + batch_size]
                noise = torch.stack([dropout_noise(g, len(idx), m.width, m.p) for g in gens])
                logits = m(X[idx], noise)
                yb = y[idx]
                # one loss call per copy (the sigmoid's vectorised and scalar paths round
                # differently, so a stacked call would depend on the number of copies)
                bce = torch.stack([F.binary_cross_entropy_with_logits(z, yb) for z in logits])
                loss = (bce + m.penalty()).sum()  # copies are independent: sum = per-copy grads
                for p in self.params:
                    p.grad = None
                loss.backward()
                self._adam()
                self.steps += 1
        if self.policy == "per_client":
            self._states[owner] = (self.t, self.mom.clone(), self.vel.clone())
        return [m.get_weights(k) for k in range(m.m)]

    @torch.no_grad()
    def evaluate(self, weights: list[list[np.ndarray]], X: torch.Tensor, y: torch.Tensor):
        from sklearn.metrics import roc_auc_score

        from .metrics import keras_auc

        m = self.model
        for k, w in enumerate(weights):
            m.set_weights(k, w)
        m.eval()
        logits = m(X)
        pen = m.penalty()
        yn = y.numpy()
        out = []
        for k in range(len(weights)):
            z = logits[k]
            bce = float(F.binary_cross_entropy_with_logits(z, y))
            auc = float(roc_auc_score(yn, z.numpy())) if 0 < yn.sum() < len(yn) else float("nan")
            acc = float(((z > 0).numpy() == (yn > 0.5)).mean())
            kauc = keras_auc(yn, torch.sigmoid(z).numpy())
            out.append(EvalResult(bce + float(pen[k]), bce, acc, auc, kauc))
        return out
