"""The Weibull time model of SAVAE (seed 003 §5.3, D6.2 eq. 6.10) and its censored likelihood.

Scale λ > 0 and shape k > 0 (D6.2 writes α for the shape):

    h(t) = (k/λ)(t/λ)^{k−1},   S(t) = exp(−(t/λ)^k),   f(t) = h(t)·S(t)

the parametrisation of lifelines' ``WeibullFitter`` (``lambda_``, ``rho_``) and of
``torch.distributions.Weibull(scale=λ, concentration=k)``. A right-censored observation (t, d)
contributes ``d·log f(t) + (1−d)·log S(t) = d·log h(t) + log S(t)`` (seed 003 §5.4).
Functions take torch tensors (the model's time decoder) or numpy arrays (evaluation).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import optimize


def log_hazard(t, log_k, log_lam):
    """log h(t) = log k − log λ + (k − 1)(log t − log λ)."""
    lib = torch if isinstance(t, torch.Tensor) else np
    k = lib.exp(log_k)
    return log_k - log_lam + (k - 1.0) * (lib.log(t) - log_lam)


def log_survival(t, log_k, log_lam):
    """log S(t) = −(t/λ)^k."""
    lib = torch if isinstance(t, torch.Tensor) else np
    return -lib.exp(lib.exp(log_k) * (lib.log(t) - log_lam))


def log_density(t, log_k, log_lam):
    """log f(t) = log h(t) + log S(t)."""
    return log_hazard(t, log_k, log_lam) + log_survival(t, log_k, log_lam)


def censored_loglik(t, d, log_k, log_lam):
    """Per-sample ``d·log f(t) + (1 − d)·log S(t)`` (d = 1: event, 0: censored)."""
    return d * log_hazard(t, log_k, log_lam) + log_survival(t, log_k, log_lam)


def mean_time(log_k, log_lam):
    """E[T] = λ·Γ(1 + 1/k)."""
    lib = torch if isinstance(log_k, torch.Tensor) else np
    k = lib.exp(log_k)
    lg = torch.lgamma(1.0 + 1.0 / k) if lib is torch else _lgamma(1.0 + 1.0 / k)
    return lib.exp(log_lam + lg)


def _lgamma(x):
    from scipy.special import gammaln

    return gammaln(x)


def survival_curves(times: np.ndarray, log_k: np.ndarray, log_lam: np.ndarray) -> np.ndarray:
    """S(t) of every sample (rows) on a grid of times (columns)."""
    t = np.asarray(times, dtype=float)[None, :]
    k = np.exp(np.asarray(log_k, dtype=float))[:, None]
    lam = np.exp(np.asarray(log_lam, dtype=float))[:, None]
    return np.exp(-((t / lam) ** k))


def sample(log_k: torch.Tensor, log_lam: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """T = λ·(−log U)^{1/k}, U ~ U(0, 1), from ``generator``."""
    u = torch.rand(log_k.shape, generator=generator, dtype=log_k.dtype).clamp_min(1e-12)
    return torch.exp(log_lam) * (-torch.log(u)) ** (1.0 / torch.exp(log_k))


def fit(t: np.ndarray, d: np.ndarray) -> tuple[float, float, float]:
    """Maximum-likelihood (λ, k, log-likelihood) of an intercept-only Weibull on censored data
    (the reference the tests compare with lifelines' ``WeibullFitter``)."""
    t = np.asarray(t, dtype=float)
    d = np.asarray(d, dtype=float)

    def nll(p):
        lk, ll = p
        return -float(np.sum(censored_loglik(t, d, lk, ll)))

    def grad(p):
        lk, ll = p
        k = math.exp(lk)
        u = np.exp(k * (np.log(t) - ll))  # (t/λ)^k
        r = np.log(t) - ll
        g_lk = np.sum(d * (1.0 + k * r) - u * k * r)
        g_ll = np.sum(-d * k + u * k)
        return -np.array([g_lk, g_ll])

    x0 = np.array([0.0, math.log(float(np.mean(t)))])
    res = optimize.minimize(nll, x0, jac=grad, method="BFGS", options={"gtol": 1e-10})
    lk, ll = res.x
    return math.exp(ll), math.exp(lk), -float(res.fun)
