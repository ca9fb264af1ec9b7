"""Gaussian natural-parameter algebra of partitioned variational inference (seed 003 §3.4;
Bui et al. 2018).

A Gaussian is η = (η₁, η₂): diagonal (mean field) η₁ = μ/σ², η₂ = −1/(2σ²), or full
η₁ = Λμ, η₂ = −½Λ (Λ the precision; the conjugate check). Products and quotients of Gaussians
are sums and differences of natural parameters:

- global q: η_q = η_prior + Σ_m t_m (t_m: centre m's factor, kept by the centre);
- cavity of centre m: η_q − t_m (eq. 4.25), the local prior of its ELBO (4.27);
- its update: Δ_m = ε (η(q_new) − η_q), t_m ← t_m + Δ_m; server: η_q ← η_q + Σ_{m∈B} Δ_m.

**Positive variance.** A valid Gaussian needs η₂ < 0 (diagonal) or −η₂ positive definite.
With damping ε and |B| centres in a round, η_q + Σ Δ_m = (1 − ε|B|) η_q + ε Σ_m η(q_m), a
convex combination of valid parameters whenever ε|B| ≤ 1 (sequential PVI with ε ≤ 1, or
synchronous PVI with ε ≤ 1/M): the precision stays positive by construction. When a config
sets ε|B| > 1 (VIRTUAL's 10 clients per round at server rate 0.6) or a cavity loses
precision, :func:`clip_precision` raises every precision to at least 1/var_max (variance ≤
var_max) and the number of clipped entries is recorded per round. A centre's cavity whose
variance exceeds var_max in some entries (the other factors remove information: precision
noise of unconverged fits) uses the prior there (:func:`reset_wide`, counted per centre).
var_max defaults to the prior variance.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Natural = list[np.ndarray]  # [η₁, η₂]


def to_natural(mean: np.ndarray, var: np.ndarray) -> Natural:
    """Diagonal (mean, var) → [η₁, η₂] in float64."""
    var = np.asarray(var, dtype=np.float64)
    return [np.asarray(mean, dtype=np.float64) / var, -0.5 / var]


def from_natural(eta: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """[η₁, η₂] (diagonal) → (mean, var)."""
    var = -0.5 / np.asarray(eta[1], dtype=np.float64)
    return np.asarray(eta[0]) * var, var


def full_to_moments(eta: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """[η₁ = Λμ, η₂ = −½Λ] → (μ, Σ)."""
    lam = -2.0 * np.asarray(eta[1], dtype=np.float64)
    cov = np.linalg.inv(lam)
    return cov @ eta[0], cov


def add(a: Sequence[np.ndarray], b: Sequence[np.ndarray], scale: float = 1.0) -> Natural:
    """a + scale·b, entry-wise (float64)."""
    return [
        np.asarray(x, dtype=np.float64) + scale * np.asarray(y, dtype=np.float64)
        for x, y in zip(a, b, strict=True)
    ]


def sub(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> Natural:
    return add(a, b, -1.0)


def zeros_like(a: Sequence[np.ndarray]) -> Natural:
    return [np.zeros_like(np.asarray(x, dtype=np.float64)) for x in a]


def is_valid(eta: Sequence[np.ndarray]) -> bool:
    """η₂ < 0 entry-wise (diagonal) or −η₂ symmetric positive definite (full)."""
    e2 = np.asarray(eta[1])
    if e2.ndim == 1:
        return bool(np.all(e2 < 0))
    return bool(np.all(np.linalg.eigvalsh(-0.5 * (e2 + e2.T)) > 0))


def clip_precision(eta: Sequence[np.ndarray], var_max: float) -> tuple[Natural, int]:
    """Raise every precision to ≥ 1/var_max (η₂ ≤ −1/(2 var_max)); returns the clipped
    parameters and how many entries (eigenvalues, for a full η₂) were changed. η₁ is kept, so
    the mean of a clipped entry moves towards 0 with its variance."""
    e1 = np.asarray(eta[0], dtype=np.float64)
    e2 = np.asarray(eta[1], dtype=np.float64)
    bound = -0.5 / float(var_max)
    if e2.ndim == 1:
        bad = e2 > bound
        return [e1.copy(), np.where(bad, bound, e2)], int(bad.sum())
    vals, vecs = np.linalg.eigh(0.5 * (e2 + e2.T))
    bad = vals > bound
    if not bad.any():
        return [e1.copy(), e2.copy()], 0
    vals = np.where(bad, bound, vals)
    return [e1.copy(), (vecs * vals) @ vecs.T], int(bad.sum())


def reset_wide(
    eta: Sequence[np.ndarray], ref: Sequence[np.ndarray], var_max: float
) -> tuple[Natural, int]:
    """Diagonal only: every entry whose variance exceeds var_max (precision < 1/var_max, or
    not positive) is replaced by ``ref``'s entry (the prior). Used on a cavity: with
    unconverged mean-field fits the factors carry precision noise of either sign, and a cavity
    precision near 0 divides a large η₁ into an exploding cavity mean."""
    e1 = np.asarray(eta[0], dtype=np.float64)
    e2 = np.asarray(eta[1], dtype=np.float64)
    bad = e2 > -0.5 / float(var_max)
    return [np.where(bad, ref[0], e1), np.where(bad, ref[1], e2)], int(bad.sum())


def relative_error(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """max over the parts of ‖a − b‖ / ‖b‖ (Frobenius)."""
    return max(
        float(np.linalg.norm(np.asarray(x) - np.asarray(y)) / max(np.linalg.norm(y), 1e-300))
        for x, y in zip(a, b, strict=True)
    )


# ------------------------------------------------------------------ Bayesian linear regression
def regression_likelihood(x: np.ndarray, y: np.ndarray, noise_var: float) -> Natural:
    """Natural parameters of the Gaussian likelihood Π_n N(y_n; x_nᵀw, s²) as a function of w:
    [Xᵀy/s², −½ XᵀX/s²] (exact: the conjugate local step of PVI)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return [x.T @ y / noise_var, -0.5 * (x.T @ x) / noise_var]


def isotropic_prior(d: int, sd: float) -> Natural:
    """Natural parameters of N(0, sd² I_d), full form."""
    return [np.zeros(d), -0.5 * np.eye(d) / sd**2]
