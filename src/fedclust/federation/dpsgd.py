"""DP-SGD at the centre: local, record-level differential privacy of a centre's training
(Abadi et al., "Deep Learning with Differential Privacy", CCS 2016), accounted by Opacus.

Every step: Poisson sampling (each row with probability q = batch_size / n; an empty batch is a
step too), the per-sample gradients, each clipped to L2 norm C over all trained parameters,
summed, plus N(0, (z C)²) per coordinate, divided by the expected batch size q·n — then the
centre's own optimizer step (any optimizer: SGD, Adam, the thesis' Yogi). The centre's ε for
the run is the sampled Gaussian mechanism composed over its steps
(:meth:`.dp.Accountant.sampled_gaussian`: Opacus' RDP analysis, Mironov et al. 2019).

Per-sample gradients: Opacus' ``GradSampleModule`` when it covers every trained parameter (its
layer-wise hooks: ``nn.Linear``, convolutions, ...), else ``torch.func`` (``vmap`` of ``grad``
over the rows) — e.g. the tied autoencoder of DEC, whose decoder uses the encoder's weights
transposed, which Opacus' hooks do not see. Both give the same gradients (tested).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from .dp import Accountant, calibrate_gaussian

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (output, target) -> per row


def _functorch_grads(
    model: torch.nn.Module, names: Sequence[str], loss: LossFn, xb: torch.Tensor, yb: torch.Tensor
) -> list[torch.Tensor]:
    from torch.func import functional_call, grad, vmap

    params = {n: p.detach() for n, p in model.named_parameters() if n in names}
    frozen = {n: p.detach() for n, p in model.named_parameters() if n not in names}
    buffers = dict(model.named_buffers())

    def one(p, x, y):
        out = functional_call(model, ({**p, **frozen}, buffers), (x[None],))
        return loss(out, y[None]).sum()

    g = vmap(grad(one), in_dims=(None, 0, 0), randomness="different")(params, xb, yb)
    return [g[n] for n in names]


def _opacus_grads(
    model: torch.nn.Module, names: Sequence[str], loss: LossFn, xb: torch.Tensor, yb: torch.Tensor
) -> list[torch.Tensor] | None:
    """Opacus' per-sample gradients, or ``None`` when its hooks miss a trained parameter."""
    from opacus import GradSampleModule

    gsm = GradSampleModule(model, loss_reduction="sum")
    try:
        named = dict(model.named_parameters())
        for n in names:
            named[n].grad = None
            named[n].grad_sample = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "full backward hook ... no inputs require grad"
            loss(gsm(xb), yb).sum().backward()
        out = [getattr(named[n], "grad_sample", None) for n in names]
        return None if any(g is None for g in out) else [g.detach() for g in out]
    finally:
        gsm._close()
        for p in model.parameters():
            p.grad = None
            if hasattr(p, "grad_sample"):
                del p.grad_sample


def per_sample_grads(
    model: torch.nn.Module,
    names: Sequence[str],
    loss: LossFn,
    xb: torch.Tensor,
    yb: torch.Tensor,
    backend: str = "auto",
) -> tuple[list[torch.Tensor], str]:
    """One gradient per row for each parameter in ``names`` (shape (B, *p.shape)) and the
    backend used (``opacus`` | ``functorch``; ``auto``: Opacus when it covers them all)."""
    if backend in ("auto", "opacus"):
        g = _opacus_grads(model, names, loss, xb, yb)
        if g is not None:
            return g, "opacus"
        if backend == "opacus":
            raise ValueError("Opacus' hooks do not cover every trained parameter of this model")
    return _functorch_grads(model, names, loss, xb, yb), "functorch"


@dataclass
class DPSGD:
    """A centre's DP-SGD (module docstring): ``clip`` C, ``noise_multiplier`` z, the expected
    ``batch_size``; ``accountant`` records every step (sample rate q = batch_size / n)."""

    clip: float
    noise_multiplier: float
    batch_size: int
    backend: str = "auto"
    accountant: Accountant = field(default_factory=Accountant)
    used: str = ""

    @staticmethod
    def calibrated(
        epsilon: float,
        delta: float,
        clip: float,
        batch_size: int,
        n: int,
        steps: int,
        backend: str = "auto",
    ) -> DPSGD:
        """The z with which ``steps`` steps at q = batch_size / n spend ``epsilon`` at δ."""
        q = min(1.0, batch_size / max(n, 1))
        z = calibrate_gaussian(epsilon, delta, count=steps, q=q)
        return DPSGD(clip, z, batch_size, backend)

    def epsilon(self, delta: float) -> float:
        return self.accountant.epsilon(delta)

    def epoch(
        self,
        model: torch.nn.Module,
        params: Sequence[torch.nn.Parameter],
        opt,
        x: torch.Tensor,
        y: torch.Tensor,
        loss: LossFn,
        gen: torch.Generator,
    ) -> float:
        """⌈n / batch_size⌉ DP-SGD steps on (x, y); returns the mean (clean) batch loss."""
        n = len(x)
        q = min(1.0, self.batch_size / max(n, 1))
        names = [nm for nm, p in model.named_parameters() if any(p is q_ for q_ in params)]
        plist = [dict(model.named_parameters())[nm] for nm in names]
        steps, total = math.ceil(n / self.batch_size), 0.0
        for _ in range(steps):
            idx = torch.nonzero(torch.rand(n, generator=gen) < q).flatten()
            summed = [torch.zeros_like(p) for p in plist]
            if len(idx):
                g, self.used = per_sample_grads(
                    model, names, loss, x[idx], y[idx], self.used or self.backend
                )
                norms = torch.sqrt(sum(gi.flatten(1).pow(2).sum(1) for gi in g))
                factor = torch.clamp(self.clip / (norms + 1e-12), max=1.0)
                summed = [torch.einsum("b,b...->...", factor, gi) for gi in g]
                with torch.no_grad():
                    total += float(loss(model(x[idx]), y[idx]).mean())
            for p, s in zip(plist, summed, strict=True):
                noise = torch.normal(0.0, self.noise_multiplier * self.clip, p.shape, generator=gen)
                p.grad = ((s + noise) / (q * n)).to(p.dtype)
            opt.step()
            for p in plist:
                p.grad = None
        self.accountant.sampled_gaussian(self.noise_multiplier, q, steps)
        return total / steps
