"""SAVAE, the survival-analysis VAE of D6.2 §6.4.4 (seed 003 §5.2–5.4), and its trainer.

Three networks (Fig. 6.9): the encoder q_φ(z|x) (covariates only, D6.2), the covariate decoder
p_θ1(x|z) (per-feature distribution parameters, :mod:`.likelihoods`) and the time decoder
p_θ2(t|z) (Weibull log-shape and log-scale, :mod:`.weibull`). The per-sample ELBO (eq. 6.14,
L = 1 reparameterised draw):

    −KL(q(z|x) ‖ N(0, I)) + w·[d·log f(t|z) + (1−d)·log S(t|z)] + Σ_m mask_m·log p(x_m|z)

Without the time decoder (``time=False``) it is the heterogeneous (HI-VAE-style) VAE the MNIST
good/poor node test uses. A :class:`Trainer` owns the model's Adam state and a CPU generator
that draws every minibatch order and every ε, so a centre seeded like the pooled trainer runs
the very same steps (one centre = pooled, exactly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from . import likelihoods as L
from . import weibull
from .nets import mlp

LOGK_MIN, LOGK_MAX = -3.0, 3.0
LOGLAM_MIN, LOGLAM_MAX = -12.0, 12.0


@dataclass(frozen=True)
class Arch:
    """Network sizes (config ``generative.savae.model``)."""

    latent: int = 8
    hidden: tuple[int, ...] = (64,)
    time_hidden: tuple[int, ...] = (16,)
    activation: str = "relu"

    @staticmethod
    def from_config(cfg: dict) -> Arch:
        return Arch(
            int(cfg["latent"]),
            tuple(cfg["hidden"]),
            tuple(cfg["time_hidden"]),
            str(cfg["activation"]),
        )


class SAVAE(nn.Module):
    """Encoder, covariate decoder and (optional) Weibull time decoder."""

    def __init__(self, spec: L.FeatureSpec, arch: Arch, time: bool = True) -> None:
        super().__init__()
        self.spec, self.arch, self.has_time = spec, arch, bool(time)
        self.encoder = mlp(spec.n_inputs, arch.hidden, 2 * arch.latent, arch.activation)
        self.decoder = mlp(
            arch.latent, tuple(reversed(arch.hidden)), spec.n_params, arch.activation
        )
        self.time_decoder = (
            mlp(arch.latent, arch.time_hidden, 2, arch.activation) if self.has_time else None
        )

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(μ, log σ²) of q(z|x); ``x`` in data columns (categorical codes)."""
        h = self.encoder(L.one_hot(x, self.spec))
        mu, logvar = h.chunk(2, dim=1)
        return mu, logvar.clamp(-12.0, 8.0)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)

    def time_params(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(log k, log λ) of the Weibull time model at z."""
        if self.time_decoder is None:
            raise ValueError("this model has no time decoder")
        out = self.time_decoder(z)
        return out[:, 0].clamp(LOGK_MIN, LOGK_MAX), out[:, 1].clamp(LOGLAM_MIN, LOGLAM_MAX)

    def terms(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        t: torch.Tensor | None,
        d: torch.Tensor | None,
        eps: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-sample (KL, covariate log-likelihood, time log-likelihood); ``eps = None``: z = μ."""
        mu, logvar = self.encode(x)
        z = mu if eps is None else mu + torch.exp(0.5 * logvar) * eps
        kl = 0.5 * (mu**2 + torch.exp(logvar) - 1.0 - logvar).sum(dim=1)
        x_ll = L.loglik(self.decode(z), x, mask, self.spec).sum(dim=1)
        if self.has_time and t is not None:
            lk, ll = self.time_params(z)
            t_ll = weibull.censored_loglik(t, d, lk, ll)
        else:
            t_ll = torch.zeros_like(kl)
        return kl, x_ll, t_ll

    def loss(
        self, batch: dict[str, torch.Tensor], eps: torch.Tensor | None, w: float
    ) -> torch.Tensor:
        """−ELBO averaged over the batch (eq. 6.14 with time weight ``w``)."""
        kl, x_ll, t_ll = self.terms(batch["x"], batch["mask"], batch.get("t"), batch.get("d"), eps)
        return (kl - x_ll - w * t_ll).mean()


def tensors(
    x: np.ndarray, mask: np.ndarray, t: np.ndarray | None = None, d: np.ndarray | None = None
) -> dict[str, torch.Tensor]:
    """The trainer's data (float32 tensors)."""
    out = {
        "x": torch.as_tensor(np.asarray(x, dtype=np.float32)),
        "mask": torch.as_tensor(np.asarray(mask, dtype=np.float32)),
    }
    if t is not None:
        out["t"] = torch.as_tensor(np.asarray(t, dtype=np.float32))
        out["d"] = torch.as_tensor(np.asarray(d, dtype=np.float32))
    return out


def device_of(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _in(model: nn.Module, x: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float32)).to(device_of(model))


class Trainer:
    """Minibatch Adam on −ELBO; owns the optimizer state and the generator across calls (a CPU
    generator: the same draws on any device)."""

    def __init__(
        self,
        model: SAVAE,
        data: dict[str, torch.Tensor],
        *,
        lr: float,
        batch_size: int,
        w: float,
        generator: torch.Generator,
    ) -> None:
        dev = device_of(model)
        self.model, self.w = model, float(w)
        self.data = {k: v.to(dev) for k, v in data.items()}
        self.batch_size = int(batch_size)
        self.gen = generator
        self.opt = torch.optim.Adam(model.parameters(), lr=float(lr))

    @property
    def n(self) -> int:
        return int(self.data["x"].shape[0])

    def epochs(self, n_epochs: int) -> list[float]:
        """``n_epochs`` passes over the data; returns each epoch's mean loss."""
        self.model.train()
        out = []
        for _ in range(int(n_epochs)):
            perm = torch.randperm(self.n, generator=self.gen)
            dev = device_of(self.model)
            total = 0.0
            for s in range(0, self.n, self.batch_size):
                idx = perm[s : s + self.batch_size].to(dev)
                batch = {k: v[idx] for k, v in self.data.items()}
                eps = torch.randn(len(idx), self.model.arch.latent, generator=self.gen).to(dev)
                loss = self.model.loss(batch, eps, self.w)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                total += float(loss.detach()) * len(idx)
            out.append(total / self.n)
        return out


@torch.no_grad()
def embed(model: SAVAE, x: np.ndarray) -> np.ndarray:
    """Latent means μ(x)."""
    model.eval()
    return model.encode(_in(model, x))[0].cpu().numpy()


@torch.no_grad()
def reconstruct(model: SAVAE, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The "recovered" sample: observed entries kept, the others the decoder's point estimate at
    z = μ(x) (HI-VAE imputation, eq. 6.3)."""
    model.eval()
    est = L.expected(model.decode(model.encode(_in(model, x))[0]), model.spec).cpu().numpy()
    return np.where(np.asarray(mask) > 0, np.asarray(x, dtype=np.float32), est)


@torch.no_grad()
def decode_mean(model: SAVAE, x: np.ndarray) -> np.ndarray:
    """The decoder's point estimate of every entry at z = μ(x) (reconstruction)."""
    model.eval()
    return L.expected(model.decode(model.encode(_in(model, x))[0]), model.spec).cpu().numpy()


@torch.no_grad()
def time_params(model: SAVAE, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log k, log λ) at z = μ(x)."""
    model.eval()
    lk, ll = model.time_params(model.encode(_in(model, x))[0])
    return lk.cpu().numpy().astype(float), ll.cpu().numpy().astype(float)


@torch.no_grad()
def generate(
    model: SAVAE, n: int, generator: torch.Generator, draw: str = "mean"
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Virtual patients: z ~ N(0, I), x = the decoder's point estimate (``draw="mean"``) or a
    draw (``"sample"``); with a time decoder also t ~ Weibull(k(z), λ(z)). Returns (z, x, t)."""
    model.eval()
    z = torch.randn(int(n), model.arch.latent, generator=generator)
    params = model.decode(z.to(device_of(model))).cpu()
    x = (
        L.expected(params, model.spec)
        if draw == "mean"
        else L.sample(params, model.spec, generator)
    )
    t = None
    if model.has_time:
        lk, ll = model.time_params(z.to(device_of(model)))
        t = weibull.sample(lk.cpu(), ll.cpu(), generator).numpy()
    return z.numpy(), x.numpy(), t


def layer_sizes(model: nn.Module) -> Sequence[int]:
    return [int(p.numel()) for p in model.parameters()]
