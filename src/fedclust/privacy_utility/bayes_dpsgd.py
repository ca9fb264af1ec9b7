"""DP-PVI by DP-SGD inside the local ELBO fit (Heikkilä et al. 2022, "Differentially private
partitioned variational inference", TMLR, §4 "DP optimisation"; Abadi et al. 2016).

A PVI centre maximises its local ELBO (seed 003 eq. 4.27) by BBB: the minibatch loss is
π_i β KL(q ‖ cavity) − Σ_{n∈batch} log p(y_n | x_n, w), w = μ + σ ⊙ ε (σ = softplus ρ). Here
every step of that fit is a DP-SGD step (:func:`fit_variational_dp`):

- Poisson sampling: each of the centre's n training images joins the step's batch with
  probability q = batch_size / n (an empty batch is a step too); ⌈n / batch_size⌉ steps per
  epoch, as the non-private fit;
- the data term's gradient per image n with respect to (μ, ρ): g_n = (∂ℓ_n/∂w,
  ∂ℓ_n/∂w ⊙ ε ⊙ sigmoid(ρ)) (the reparametrisation; ``torch.func`` ``vmap`` of ``grad``), the
  two parts together clipped to L2 norm C, summed, plus N(0, (z·C)²) per coordinate;
- the KL term (a function of (μ, ρ), the public cavity and ε only: no image) by autograd,
  added unclipped and noiseless; the sum goes to the centre's own optimizer (Adam / SGD).

One image added or removed changes the step's noisy sum by at most C (add/remove neighbours,
the subsampled Gaussian mechanism): the centre's ε is the RDP accountant of the Poisson-
subsampled Gaussian (Opacus' ``compute_rdp``, Mironov, Talwar, Zhang 2019, via
:meth:`fedclust.federation.dp.Accountant.sampled_gaussian`) composed over every step of every
round it is asked (epochs × ⌈n / batch⌉ per round). The cavity, the seeded start and the
server's global are public or post-processing of the DP outputs (the other centres' and its own
released Δη), so the released Δη_m = ε_damp (η(q_new) − η_q) is post-processing: no noise on
the message. Not privatised: the counts and the local metrics (ELBO estimate, accuracies) of
the message, as for the update-noise mechanism (:mod:`.bayes`).

With ``clip`` = ∞, ``noise`` = 0 and ``sampling="shuffle"`` (the non-private fit's fixed-size
shuffled batches) the fit is :func:`fedclust.bayes.bbb.fit_variational` (to float rounding:
per-image gradients summed instead of the batch's; tested).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from fedclust.bayes import bbb
from fedclust.errors import ConfigError
from fedclust.federation import Abstain
from fedclust.federation.dp import Accountant, calibrate_gaussian


def per_image_grads(
    w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, layout: bbb.Layout
) -> torch.Tensor:
    """∂ℓ_n/∂w per image (B × P), ℓ_n = cross-entropy of image n at weights ``w``."""
    from torch.func import grad, vmap

    def one(wv, xi, yi):
        return F.cross_entropy(bbb.forward(xi[None], wv, layout), yi[None], reduction="sum")

    return vmap(grad(one), in_dims=(None, 0, 0))(w.detach(), x, y)


def steps_per_epoch(n: int, batch_size: int) -> int:
    return max(1, math.ceil(n / batch_size))


def sample_rate(n: int, batch_size: int) -> float:
    return min(1.0, batch_size / max(n, 1))


def fit_variational_dp(
    mu: torch.Tensor,
    rho: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    layout: bbb.Layout,
    prior: bbb.Prior,
    s: bbb.TrainSettings,
    gens: bbb.Generators,
    clip: float,
    noise: float,
    noise_gen: torch.Generator,
    epochs: int | None = None,
    sampling: str = "poisson",
) -> list[dict[str, float]]:
    """BBB's local fit (in place on ``mu``, ``rho``) with every step a DP-SGD step (module
    docstring): per-image data gradients clipped to ``clip``, N(0, (noise·clip)²) added (drawn
    from ``noise_gen``), Poisson batches (``sampling="shuffle"``: the non-private fit's).
    Records as :func:`fedclust.bayes.bbb.fit_variational` (``loss``: the clean ELBO estimate)."""
    if sampling not in ("poisson", "shuffle"):
        raise ValueError(f"sampling {sampling!r}: poisson or shuffle")
    opt = bbb._optimizer([mu, rho], s)
    n = len(y)
    m = steps_per_epoch(n, s.batch_size)
    q = sample_rate(n, s.batch_size)
    pis = bbb.kl_weights(m, s.kl_weighting) * s.kl_weight
    records = []
    for epoch in range(1, (s.epochs if epochs is None else epochs) + 1):
        if sampling == "shuffle":
            order = torch.randperm(n, generator=gens.batches).to(x.device)
        tot, correct, kl_last, seen = 0.0, 0, 0.0, 0
        for i in range(m):
            if sampling == "shuffle":
                idx = order[i * s.batch_size : (i + 1) * s.batch_size]
            else:
                idx = torch.nonzero(torch.rand(n, generator=gens.batches) < q).flatten()
                idx = idx.to(x.device)
            xb, yb = x[idx], y[idx]
            g_mu = torch.zeros((len(idx), mu.numel()), device=mu.device)
            g_rho = torch.zeros_like(g_mu)
            mu.requires_grad_(True)
            rho.requires_grad_(True)
            kl, nll = 0.0, 0.0
            for _ in range(s.mc_train):
                eps = torch.randn(mu.shape, generator=gens.noise, device=mu.device)
                w = mu + F.softplus(rho) * eps
                kl = kl + bbb._kl(mu, rho, eps, w, prior, s)
                if len(idx):
                    g = per_image_grads(w, xb, yb, layout)  # ∂ℓ_n/∂w
                    g_mu += g
                    g_rho += g * (eps * torch.sigmoid(rho.detach()))
                    with torch.no_grad():
                        logits = bbb.forward(xb, w.detach(), layout)
                        nll += float(F.cross_entropy(logits, yb, reduction="sum"))
                        correct += int((logits.argmax(1) == yb).sum())
            kl_term = pis[i] * kl / s.mc_train
            opt.zero_grad(set_to_none=True)
            kl_term.backward()
            mu.requires_grad_(False)
            rho.requires_grad_(False)
            g_mu, g_rho = g_mu / s.mc_train, g_rho / s.mc_train
            if math.isfinite(clip):
                norms = torch.sqrt(g_mu.pow(2).sum(1) + g_rho.pow(2).sum(1))
                factor = torch.clamp(clip / (norms + 1e-12), max=1.0)[:, None]
                g_mu, g_rho = g_mu * factor, g_rho * factor
            s_mu, s_rho = g_mu.sum(0), g_rho.sum(0)
            if noise > 0:
                sd = noise * clip
                s_mu = s_mu + torch.normal(0.0, sd, s_mu.shape, generator=noise_gen).to(mu.device)
                s_rho = s_rho + torch.normal(0.0, sd, s_rho.shape, generator=noise_gen).to(
                    mu.device
                )
            mu.grad = mu.grad + s_mu if mu.grad is not None else s_mu
            rho.grad = rho.grad + s_rho if rho.grad is not None else s_rho
            opt.step()
            tot += float(kl_term.detach()) + nll / s.mc_train
            kl_last = float(kl.detach()) / s.mc_train
            seen += len(idx)
        bbb._check_finite(torch.tensor(tot), epoch, s)
        records.append(
            {
                "epoch": epoch,
                "loss": tot / n,
                "kl": kl_last,
                "train_accuracy": correct / max(seen * s.mc_train, 1),
            }
        )
    mu.grad = rho.grad = None
    return records


def calibrated_noise(eps: float, delta: float, q: float, steps: int) -> float:
    """The multiplier z with which ``steps`` Poisson-subsampled Gaussian steps at rate q spend
    ``eps`` at δ (0 at ε = ∞)."""
    return 0.0 if math.isinf(eps) else calibrate_gaussian(eps, delta, count=steps, q=q)


def spent(z: float, q: float, steps: int, delta: float) -> float:
    """ε of ``steps`` DP-SGD steps (0 without a step, ∞ without noise)."""
    if steps == 0:
        return 0.0
    return math.inf if z == 0 else Accountant().sampled_gaussian(z, q, steps).epsilon(delta)


class DPSGDPVICentre:
    """A PVI centre whose local ELBO fit is DP-SGD (module docstring): wraps a built
    :class:`fedclust.bayes.centre.PVICentre` (its images, factor and training streams) and
    installs :func:`fit_variational_dp` as its fitter; the released Δη is the stage's own.
    ``clip``: C of a per-image gradient; ``noise``: z (0 and clip = ∞: the plain fit);
    ``seed``: its own noise generator. ``steps`` counts the DP-SGD steps taken (accountant).
    ``max_steps``: the steps z was calibrated for, the centre's own budget: a request whose
    epochs would take it past them is refused (the server cannot spend more than ε by asking
    for more local epochs)."""

    def __init__(
        self, centre: Any, clip: float, noise: float, seed: int, sampling: str = "poisson",
        max_steps: int | None = None,
    ) -> None:  # fmt: skip
        if getattr(centre, "private_sigma", None) is not None:
            raise ConfigError(
                "DP-SGD PVI does not privatise the private weights φ of a hierarchical method",
                where="privacy_utility.bayes.method",
                fix="a PVI method without hierarchical, or mechanisms: [update_noise]",
            )
        self.centre = centre
        self.cid, self.n_samples, self.n_train = centre.cid, centre.n_samples, centre.n_train
        self.clip, self.noise, self.sampling = float(clip), float(noise), sampling
        self.q = sample_rate(self.n_train, centre.settings.batch_size)
        self._gen = torch.Generator()
        self._gen.manual_seed(int(seed) % 2**63)
        self.steps = 0
        self.max_steps = None if max_steps is None else int(max_steps)
        self.refused = 0
        self.releases = 0
        self.diverged = 0
        centre.fitter = self._fit

    @property
    def cavity_clipped(self) -> int:
        return int(self.centre.cavity_clipped)

    def _fit(self, mu, rho, x, y, layout, prior, s, gens, epochs=None, private=None):
        e = s.epochs if epochs is None else int(epochs)
        self.steps += e * steps_per_epoch(len(y), s.batch_size)  # spent even if it diverges
        return fit_variational_dp(
            mu, rho, x, y, layout, prior, s, gens, self.clip, self.noise, self._gen, e,
            self.sampling,
        )  # fmt: skip

    def fit(self, parameters: list[np.ndarray], config: dict[str, Any]):
        """The stage's PVI step with the DP-SGD fit; a fit that diverges releases Δη = 0 (the
        centre's factor unchanged); a request past the centre's step budget is refused."""
        if self.max_steps is not None:
            e = int(config.get("epochs", self.centre.settings.epochs))
            need = e * steps_per_epoch(self.n_train, self.centre.settings.batch_size)
            if self.steps + need > self.max_steps:
                self.refused += 1
                return Abstain("the request would spend more than the centre's privacy budget")
        try:
            out = self.centre.fit(parameters, config)
        except ConfigError as err:
            if "diverged" not in err.what:
                raise
            self.diverged += 1
            zero = [np.zeros_like(np.asarray(p, np.float64)) for p in parameters]
            out = (zero, self.centre.n_train, {"client": int(self.centre.index)})
        if not isinstance(out, Abstain):
            self.releases += 1
        return out
