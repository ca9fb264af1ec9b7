"""The centres of the bayes stage: each holds only its own images (``cid``, ``n_samples``) and
answers the server's ``fit(parameters, config)`` with a message or :class:`Abstain`.

- :class:`PVICentre` — PVI with a mean-field Gaussian BNN (seed 003 §3.4 pseudocode): keeps its
  factor t (natural parameters), forms the cavity η_q − t, maximises the local ELBO (4.27) by
  BBB with the cavity as prior, returns Δη = ε(η(q_new) − η_q) and sets t ← t + Δη. Optional
  private weights φ (VIRTUAL's ``hierarchical``) stay here.
- :class:`ConjugateCentre` — the same protocol for Bayesian linear regression, whose local step
  is exact (the conjugate check: PVI must reach the pooled posterior).
- :class:`FedAvgCentre` — a deterministic network trained locally from the global weights.

Disclosure floor: ``min_samples`` is the centre's own setting; below it the centre abstains.
The FedAvg centre also applies it per hidden unit (:mod:`fedclust.federation.unit_floor`): a
unit that fewer images reached keeps the weights the centre received.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from fedclust.federation import Abstain, unit_floor
from fedclust.federation.guard import centre_policy

from . import bbb
from . import pvi as P


def _floor(cid: str, n: int, min_samples: int) -> Abstain | None:
    if n < min_samples:
        return Abstain(f"{cid} holds {n} training image(s), fewer than min_samples={min_samples}")
    return None


@dataclass
class _Images:
    """A centre's own images on the training device."""

    x: torch.Tensor
    y: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    @classmethod
    def of(cls, x, y, x_test, y_test, device) -> _Images:
        t = lambda a, d: torch.as_tensor(np.asarray(a), dtype=d, device=device)  # noqa: E731
        return cls(
            t(x, torch.float32), t(y, torch.int64), t(x_test, torch.float32), t(y_test, torch.int64)
        )


def _metrics(
    index: int, n_test: int, min_samples: int, loss: float, train_acc: float, test_acc: float
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "loss": float(loss),
        "train_accuracy": float(train_acc),
        "client": int(index),
    }
    if n_test >= min_samples:  # an accuracy over fewer test images than the floor stays here
        out.update(test_accuracy=float(test_acc), n_test=int(n_test))
    return out


@dataclass
class PVICentre:
    """One centre of PVI / VIRTUAL-style federated BBB (mean-field Gaussian over the shared
    weights θ)."""

    cid: str
    index: int
    x: np.ndarray
    y: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    layout: bbb.Layout
    settings: bbb.TrainSettings
    seed: int  # the centre's training streams (minibatches, ε)
    init: tuple[np.ndarray, np.ndarray]  # (μ₀, ρ₀): the start of its first local fit
    prior: list[np.ndarray]  # the server's prior g₀ (natural parameters): a cavity's floor
    min_samples: int = 3
    var_max: float = 1e3
    private_sigma: float | None = None  # hierarchical: prior sd of the private weights φ
    device: str = "cpu"
    factor: list[np.ndarray] | None = None  # t (natural parameters), float64
    mu: torch.Tensor | None = field(default=None, repr=False)  # the local q after its last fit
    sigma: torch.Tensor | None = field(default=None, repr=False)
    private: bbb.Private | None = field(default=None, repr=False)
    cavity_clipped: int = 0
    # the local ELBO fit (bbb.fit_variational's signature); the privacy–utility stage's DP-SGD
    # centre installs its own (fedclust.privacy_utility.bayes_dpsgd)
    fitter: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.n_train = len(self.y)
        # every image the centre holds: the guard checks each released count against it
        self.n_samples = self.n_train + len(self.y_test)
        self.data = _Images.of(self.x, self.y, self.x_test, self.y_test, self.device)
        self.gens = bbb.Generators.from_seed(self.seed, self.device)
        if self.private_sigma is not None:
            n = self.layout.n_params
            prior = bbb.GaussianPrior(*bbb.gaussian_natural(n, self.private_sigma), self.device)
            self.private = bbb.Private(
                torch.zeros(n, device=self.device),
                torch.as_tensor(self.init[1], device=self.device).clone(),
                prior,
            )

    def fit(self, parameters: list[np.ndarray], config: dict[str, Any]):
        """One PVI step from the global η_q (``parameters``); ``config``: ``damping`` ε,
        ``warm_start`` (start from q rather than the seeded initial point)."""
        if (a := _floor(self.cid, self.n_train, self.min_samples)) is not None:
            return a
        eta_q = [np.asarray(p, dtype=np.float64) for p in parameters]
        if self.factor is None:
            self.factor = P.zeros_like(eta_q)
        cavity, k = P.reset_wide(P.sub(eta_q, self.factor), self.prior, self.var_max)
        self.cavity_clipped += k
        prior = bbb.GaussianPrior(*cavity, device=self.device)
        if config.get("warm_start"):
            m, v = P.from_natural(eta_q)
            mu0, rho0 = m.astype(np.float32), bbb.softplus_inv(np.sqrt(v)).astype(np.float32)
        else:
            mu0, rho0 = self.init
        mu = torch.as_tensor(mu0, device=self.device).clone()
        rho = torch.as_tensor(rho0, device=self.device).clone()
        d = self.data
        recs = (self.fitter or bbb.fit_variational)(
            mu,
            rho,
            d.x,
            d.y,
            self.layout,
            prior,
            self.settings,
            self.gens,
            epochs=int(config.get("epochs", self.settings.epochs)),
            private=self.private,
        )
        sigma = F.softplus(rho)
        self.mu, self.sigma = mu, sigma
        eta_new = P.to_natural(mu.double().cpu().numpy(), (sigma.double() ** 2).cpu().numpy())
        eps = float(config.get("damping", 1.0))
        delta = [eps * (a - b) for a, b in zip(eta_new, eta_q, strict=True)]
        self.factor = P.add(self.factor, delta)
        test_acc = 1.0 - self.local_error()
        return (
            delta,
            self.n_train,
            _metrics(
                self.index,
                len(self.y_test),
                self.min_samples,
                recs[-1]["loss"],
                recs[-1]["train_accuracy"],
                test_acc,
            ),
        )

    def local_error(self) -> float:
        """Test error of the centre's own posterior (θ [+ φ]) on its own test images."""
        if len(self.y_test) == 0 or self.mu is None:
            return float("nan")
        mu, sigma = self.mu, self.sigma
        if self.private is not None:  # θ + φ: means add, variances add
            mu = mu + self.private.mu
            sigma = torch.sqrt(sigma**2 + F.softplus(self.private.rho) ** 2)
        p = bbb.predict_proba(
            self.data.x_test, self.layout, mu, sigma, self.settings.mc_test, self.gens.eval
        )
        return bbb.error_rate(p, self.data.y_test)


@dataclass
class ConjugateCentre:
    """Bayesian linear regression y = Xw + e, e ~ N(0, s²): the exact local PVI step
    η(q_new) = cavity + [Xᵀy/s², −½XᵀX/s²] (full-covariance natural parameters)."""

    cid: str
    index: int
    x: np.ndarray
    y: np.ndarray
    noise_var: float
    min_samples: int = 3
    factor: list[np.ndarray] | None = None

    def __post_init__(self) -> None:
        self.n_train = self.n_samples = len(self.y)
        self._lik = P.regression_likelihood(self.x, self.y, self.noise_var)

    def fit(self, parameters: list[np.ndarray], config: dict[str, Any]):
        if (a := _floor(self.cid, self.n_train, self.min_samples)) is not None:
            return a
        eta_q = [np.asarray(p, dtype=np.float64) for p in parameters]
        if self.factor is None:
            self.factor = P.zeros_like(eta_q)
        eta_new = P.add(P.sub(eta_q, self.factor), self._lik)  # cavity × likelihood, exactly
        eps = float(config.get("damping", 1.0))
        delta = [eps * (a - b) for a, b in zip(eta_new, eta_q, strict=True)]
        self.factor = P.add(self.factor, delta)
        mean, _ = P.full_to_moments(eta_new)
        mse = float(np.mean((self.y - self.x @ mean) ** 2))
        return delta, self.n_train, {"loss": mse, "client": int(self.index)}


@dataclass
class FedAvgCentre:
    """A deterministic network (SGD on the summed cross-entropy) trained from the global
    weights for ``config['epochs']`` epochs (FedAvg's local step). A hidden unit that
    0 < m < floor of its images reached is withheld (:mod:`fedclust.federation.unit_floor`;
    floor = max(``min_samples``, its disclosure policy's ``nfilter_subset``)); the message then
    says how many (``units_withheld``)."""

    cid: str
    index: int
    x: np.ndarray
    y: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    layout: bbb.Layout
    settings: bbb.TrainSettings
    seed: int
    min_samples: int = 3
    device: str = "cpu"
    units_withheld: int = 0  # over all its rounds (fedclust.federation.unit_floor)

    def __post_init__(self) -> None:
        self.n_train = len(self.y)
        # every image the centre holds: the guard checks each released count against it
        self.n_samples = self.n_train + len(self.y_test)
        self.data = _Images.of(self.x, self.y, self.x_test, self.y_test, self.device)
        self.gens = bbb.Generators.from_seed(self.seed, self.device)

    def fit(self, parameters: list[np.ndarray], config: dict[str, Any]):
        if (a := _floor(self.cid, self.n_train, self.min_samples)) is not None:
            return a
        received = torch.as_tensor(np.asarray(parameters[0]), device=self.device)
        w = received.clone()
        d = self.data
        touched = unit_floor.hidden_units(self.layout.sizes[1:-1], self.n_train, d.x.device)
        recs = bbb.fit_deterministic(
            w,
            d.x,
            d.y,
            self.layout,
            self.settings,
            self.gens,
            epochs=int(config.get("epochs", self.settings.epochs)),
            touched=touched,
        )
        floor = centre_policy(self).floor(self.min_samples)
        withheld = unit_floor.withhold(
            self.layout.split(w), self.layout.split(received), touched, floor
        )
        self.units_withheld += withheld
        test_acc = float("nan")
        if len(self.y_test):
            p = bbb.predict_proba(d.x_test, self.layout, w)
            test_acc = 1.0 - bbb.error_rate(p, d.y_test)
        metrics = _metrics(
            self.index,
            len(self.y_test),
            self.min_samples,
            recs[-1]["loss"],
            recs[-1]["train_accuracy"],
            test_acc,
        )
        if withheld:  # a message with every unit released is the same as without the floor
            metrics["units_withheld"] = withheld
        return [w.cpu().numpy()], self.n_train, metrics
