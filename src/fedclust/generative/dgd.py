"""The Deep Generative Decoder (D6.2 ch. 9, seed 003 §8; Schuster & Krogh, arXiv 2110.06672).

No encoder: a Gaussian-mixture distribution over the representation space with learnable
mixture weights, means and (diagonal) precisions, a decoder from representation to the
per-feature distributions (:mod:`.likelihoods`), and one representation z_n per sample, all
fitted by MAP:

    max  Σ_n [ Σ_m mask_nm·log p_θ(x_nm | z_n) + log p_φ(z_n) ] + log p(φ)

with the hyper-priors of D6.2 §9.2: a soft-ball prior on the component means
(p(μ) ∝ sigmoid(−s(‖μ‖ − R)), uniform in a ball of radius R with soft edge s), a Dirichlet prior
on the mixture weights and a Gaussian prior on the log-precisions log(1/σ²). The likelihood is
over the observed entries only (§9.3), so missing values need no guess. New samples get their
representation by optimisation from every component mean, keeping the best (§9.2: the MAP search
for new samples). Training follows the DGD code: decoder and mixture take an Adam step per
minibatch, the representations one Adam step per epoch (their gradients accumulated over the
epoch's minibatches).
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from fedclust.federation import unit_floor

from . import likelihoods as L
from .nets import mlp


@dataclass(frozen=True)
class Prior:
    """GMM size and hyper-priors (config ``generative.dgd.prior``)."""

    components: int = 10
    dim: int = 2
    radius: float = 5.0
    sharpness: float = 5.0
    dirichlet_alpha: float = 2.0
    log_precision_mean: float = 2.0
    log_precision_sd: float = 1.0

    @staticmethod
    def from_config(cfg: dict, components: int) -> Prior:
        return Prior(
            int(components),
            int(cfg["dim"]),
            float(cfg["radius"]),
            float(cfg["sharpness"]),
            float(cfg["dirichlet_alpha"]),
            float(cfg["log_precision_mean"]),
            float(cfg["log_precision_sd"]),
        )


class GaussianMixture(nn.Module):
    """Mixture of K diagonal Gaussians with learnable weights (softmax of logits), means and
    log-precisions, and its hyper-priors."""

    def __init__(self, prior: Prior) -> None:
        super().__init__()
        self.prior = prior
        k, d = prior.components, prior.dim
        direction = torch.randn(k, d)
        direction = direction / direction.norm(dim=1, keepdim=True).clamp_min(1e-12)
        radius = prior.radius * torch.rand(k, 1) ** (1.0 / d)  # uniform in the ball
        self.logits = nn.Parameter(torch.zeros(k))
        self.means = nn.Parameter(direction * radius)
        self.log_precision = nn.Parameter(torch.full((k, d), float(prior.log_precision_mean)))

    @property
    def weights(self) -> torch.Tensor:
        return torch.softmax(self.logits, dim=0)

    def component_log_prob(self, z: torch.Tensor) -> torch.Tensor:
        """(n, K): log π_k + log N(z; μ_k, diag(exp(−log-precision_k)))."""
        lp = self.log_precision
        diff = z[:, None, :] - self.means[None, :, :]
        logn = 0.5 * (
            lp.sum(1)[None, :]
            - (diff**2 * torch.exp(lp)[None]).sum(2)
            - self.prior.dim * math.log(2 * math.pi)
        )
        return torch.log_softmax(self.logits, dim=0)[None, :] + logn

    def log_prob(self, z: torch.Tensor) -> torch.Tensor:
        """log p_φ(z) per sample."""
        return torch.logsumexp(self.component_log_prob(z), dim=1)

    def assign(self, z: torch.Tensor) -> torch.Tensor:
        """The most probable component of each representation."""
        return self.component_log_prob(z).argmax(dim=1)

    def log_hyperprior(self) -> torch.Tensor:
        """log p(φ): soft-ball on the means + Dirichlet on the weights + Gaussian on the
        log-precisions (normalised densities)."""
        p = self.prior
        d = p.dim
        log_ball = (d / 2) * math.log(math.pi) + d * math.log(p.radius) - math.lgamma(d / 2 + 1)
        norms = self.means.norm(dim=1)
        softball = (
            torch.nn.functional.logsigmoid(-p.sharpness * (norms - p.radius)) - log_ball
        ).sum()
        a, k = p.dirichlet_alpha, p.components
        dirichlet = (
            math.lgamma(k * a)
            - k * math.lgamma(a)
            + (a - 1.0) * torch.log_softmax(self.logits, 0).sum()
        )
        z = (self.log_precision - p.log_precision_mean) / p.log_precision_sd
        gauss = (-0.5 * z**2 - math.log(p.log_precision_sd * math.sqrt(2 * math.pi))).sum()
        return softball + dirichlet + gauss


class DGD(nn.Module):
    """Decoder + mixture prior: everything a DGD centre shares (never the representations)."""

    def __init__(
        self, spec: L.FeatureSpec, prior: Prior, hidden: tuple[int, ...], activation: str = "relu"
    ) -> None:
        super().__init__()
        self.spec = spec
        self.decoder = mlp(prior.dim, tuple(hidden), spec.n_params, activation)
        self.gmm = GaussianMixture(prior)

    def sample_nll(self, z: torch.Tensor, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Per-sample −[Σ_observed log p(x|z) + log p(z)]."""
        ll = L.loglik(self.decoder(z), x, mask, self.spec).sum(dim=1)
        return -(ll + self.gmm.log_prob(z))


@dataclass(frozen=True)
class Training:
    """Optimiser settings (config ``generative.dgd.train``)."""

    lr: float = 1e-3
    rep_lr: float = 0.05
    batch_size: int = 64
    test_steps: int = 100
    init_sd: float = 0.1

    @staticmethod
    def from_config(cfg: dict) -> Training:
        return Training(
            float(cfg["lr"]),
            float(cfg["rep_lr"]),
            int(cfg["batch_size"]),
            int(cfg["test_steps"]),
            float(cfg.get("init_sd", 0.1)),
        )


class Trainer:
    """MAP training of one data set: the model (decoder + mixture, Adam per minibatch) and its
    own representations (Adam, one step per epoch). Owns both optimizers and the generator that
    draws the initial representations and every minibatch order."""

    def __init__(
        self,
        model: DGD,
        x: np.ndarray,
        mask: np.ndarray,
        train: Training,
        generator: torch.Generator,
    ) -> None:
        self.model, self.train, self.gen = model, train, generator
        dev = _device(model)
        self.x = torch.as_tensor(np.asarray(x, np.float32)).to(dev)
        self.mask = torch.as_tensor(np.asarray(mask, np.float32)).to(dev)
        # initial representations: small normal noise around the origin (the DGD code's
        # representation layer); the decoder and the mixture pull them apart
        z0 = float(train.init_sd) * torch.randn(self.n, model.gmm.prior.dim, generator=generator)
        self.z = nn.Parameter(z0.to(dev))
        self.opt = torch.optim.Adam(model.parameters(), lr=train.lr)
        self.rep_opt = torch.optim.Adam([self.z], lr=train.rep_lr)

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    def epochs(self, n_epochs: int, touched: list[torch.Tensor] | None = None) -> list[float]:
        """MAP epochs; returns each epoch's loss per sample (−log posterior / n). ``touched``:
        the decoder's hidden units' sample counts (:mod:`fedclust.federation.unit_floor`),
        filled from every step."""
        out = []
        bs = self.train.batch_size
        rec = unit_floor.Touched(self.model.decoder, touched) if touched is not None else None
        with rec if rec is not None else nullcontext():
            for _ in range(int(n_epochs)):
                perm = torch.randperm(self.n, generator=self.gen).to(self.x.device)
                self.rep_opt.zero_grad()
                total = 0.0
                for s in range(0, self.n, bs):
                    idx = perm[s : s + bs]
                    nll = self.model.sample_nll(self.z[idx], self.x[idx], self.mask[idx]).sum()
                    loss = (nll - (len(idx) / self.n) * self.model.gmm.log_hyperprior()) / self.n
                    self.opt.zero_grad()
                    loss.backward()
                    if rec is not None:
                        rec.step(idx)
                    self.opt.step()
                    total += float(loss.detach())
                self.rep_opt.step()
                out.append(total)
        return out

    def representations(self) -> np.ndarray:
        return self.z.detach().cpu().numpy().copy()


def find_representations(
    model: DGD, x: np.ndarray, mask: np.ndarray, steps: int, lr: float
) -> tuple[np.ndarray, np.ndarray]:
    """MAP representations of new samples with the model frozen: Adam from every component mean
    (all K starts optimised together for ``steps`` full-batch steps), the best per sample kept.
    Returns (z, per-sample −log p(x_obs, z))."""
    model.eval()
    dev = _device(model)
    xt = torch.as_tensor(np.asarray(x, np.float32)).to(dev)
    mt = torch.as_tensor(np.asarray(mask, np.float32)).to(dev)
    n, k = xt.shape[0], model.gmm.prior.components
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        z = nn.Parameter(model.gmm.means.detach().repeat(n, 1).clone())  # (n·K, d), sample-major
        xr, mr = xt.repeat_interleave(k, 0), mt.repeat_interleave(k, 0)
        opt = torch.optim.Adam([z], lr=float(lr))
        for _ in range(int(steps)):
            opt.zero_grad()
            model.sample_nll(z, xr, mr).sum().backward()
            opt.step()
        with torch.no_grad():
            nll = model.sample_nll(z, xr, mr).reshape(n, k)
            best = nll.argmin(dim=1)
            rows = torch.arange(n, device=dev)
            zb = z.detach().reshape(n, k, -1)[rows, best]
            return zb.cpu().numpy(), nll[rows, best].cpu().numpy().astype(float)
    finally:
        for p in model.parameters():
            p.requires_grad_(True)


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _in(model: nn.Module, a: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a, np.float32)).to(_device(model))


@torch.no_grad()
def impute(model: DGD, z: np.ndarray) -> np.ndarray:
    """The decoder's point estimate of every entry at the representations (§9.3)."""
    return L.expected(model.decoder(_in(model, z)), model.spec).cpu().numpy()


@torch.no_grad()
def assign(model: DGD, z: np.ndarray) -> np.ndarray:
    """The most probable mixture component of each representation."""
    return model.gmm.assign(_in(model, z)).cpu().numpy()
