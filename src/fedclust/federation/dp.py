"""Differential privacy: the mechanisms, the accountant and the noise calibration (issue 24).

Neighbouring datasets differ by one record (added or removed) unless a docstring says otherwise;
a federated release's unit is stated where it is made (:mod:`.privacy`: one centre).

- :func:`laplace` — ``value + Lap(Δ₁/ε)`` is ε-DP for L1 sensitivity Δ₁ (Dwork, McSherry,
  Nissim, Smith 2006). Its Rényi DP at order α > 1, with b = scale / Δ₁ (Mironov 2017,
  "Rényi Differential Privacy", Prop. 6):
  ε(α) = 1/(α−1) · log( α/(2α−1) · e^{(α−1)/b} + (α−1)/(2α−1) · e^{−α/b} ).
- :func:`gaussian` — ``value + N(0, (z Δ₂)²)`` for L2 sensitivity Δ₂ has RDP ε(α) = α / (2 z²)
  (Mironov 2017, Prop. 7); the Poisson-subsampled Gaussian of DP-SGD (rate q) is Opacus'
  ``compute_rdp`` (Mironov, Talwar, Zhang 2019).
- :class:`Accountant` — every release of a run as an event; RDP adds up over events at each
  order of :data:`ORDERS`; the (ε, δ) conversion is Opacus' ``get_privacy_spent`` (Balle et
  al. 2020, Thm 21; the same formula as ``dp_accounting``'s ``compute_epsilon``, tested to
  1e-6). When every event is a Laplace release, the basic composition Σ ε_i (pure, δ = 0) is
  also a bound: the smaller one is reported.
- :func:`calibrate_gaussian` — the smallest noise multiplier z with which ``count`` Gaussian
  releases (or ``steps`` sampled ones) spend at most ε at δ (bisection on the accountant).

Sensitivities of the cluster releases (:func:`clip_rows`, :func:`cluster_stats`): each record
lies in exactly one cluster, so the vector of per-cluster counts changes by 1 in one entry
(Δ₁ = Δ₂ = 1); with every row clipped to L2 norm B the matrix of per-cluster sums changes by
one row of norm ≤ B (Δ₂ = B, Δ₁ ≤ √d · B). Counts and sums are two releases (composed).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

#: RDP orders: Opacus' defaults (1.1 … 63) and a few large ones for small budgets
ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)]
    + list(range(12, 64))
    + [64, 80, 96, 128, 192, 256, 512, 1024]
)


# ---------------------------------------------------------------- mechanisms
def laplace(value, sensitivity: float, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """``value + Lap(sensitivity / epsilon)`` (float64), entry-wise: ε-DP for L1 sensitivity."""
    v = np.asarray(value, dtype=np.float64)
    return v + rng.laplace(0.0, sensitivity / epsilon, v.shape)


def gaussian(
    value, sensitivity: float, noise_multiplier: float, rng: np.random.Generator
) -> np.ndarray:
    """``value + N(0, (noise_multiplier · sensitivity)²)`` (float64), entry-wise."""
    v = np.asarray(value, dtype=np.float64)
    return v + rng.normal(0.0, noise_multiplier * sensitivity, v.shape)


def clip_rows(x: np.ndarray, bound: float) -> np.ndarray:
    """Every row scaled to L2 norm ≤ ``bound`` (rows already inside are unchanged)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x * np.minimum(1.0, bound / np.maximum(norms, 1e-300))


def cluster_stats(x: np.ndarray, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster counts (k,) and sums (k, d) of ``x`` assigned to its nearest centroid
    (Euclidean; ties to the lower index, as ``argmin``)."""
    x = np.asarray(x, dtype=np.float64)
    c = np.asarray(centroids, dtype=np.float64)
    d2 = (x * x).sum(1)[:, None] - 2 * x @ c.T + (c * c).sum(1)[None, :]
    lab = np.argmin(d2, axis=1)
    k = len(c)
    counts = np.bincount(lab, minlength=k).astype(np.float64)
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, lab, x)
    return counts, sums


# ---------------------------------------------------------------- RDP of the mechanisms
def laplace_rdp(b: float, orders: Sequence[float] = ORDERS) -> np.ndarray:
    """RDP of the Laplace mechanism with scale/sensitivity ratio ``b`` (Mironov 2017, Prop. 6),
    computed in log space."""
    out = []
    for a in orders:
        t1 = math.log(a / (2 * a - 1)) + (a - 1) / b
        t2 = math.log((a - 1) / (2 * a - 1)) - a / b
        m = max(t1, t2)
        out.append((m + math.log(math.exp(t1 - m) + math.exp(t2 - m))) / (a - 1))
    return np.asarray(out)


def gaussian_rdp(
    noise_multiplier: float, q: float = 1.0, steps: int = 1, orders: Sequence[float] = ORDERS
) -> np.ndarray:
    """RDP of ``steps`` (Poisson-subsampled at rate ``q``) Gaussian releases: Opacus'
    ``compute_rdp`` (q = 1: exactly steps · α / (2 z²))."""
    from opacus.accountants.analysis.rdp import compute_rdp

    rdp = compute_rdp(
        q=float(q), noise_multiplier=float(noise_multiplier), steps=int(steps), orders=list(orders)
    )
    return np.asarray(rdp, dtype=np.float64)


def rdp_to_epsilon(
    rdp: np.ndarray, delta: float, orders: Sequence[float] = ORDERS
) -> tuple[float, float]:
    """(ε, best order) from RDP values: Opacus' ``get_privacy_spent``."""
    from opacus.accountants.analysis.rdp import get_privacy_spent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "optimal order is the largest alpha" for ε ≈ 0
        eps, best = get_privacy_spent(orders=list(orders), rdp=list(rdp), delta=float(delta))
    return max(float(eps), 0.0), float(best)


@dataclass
class Accountant:
    """The releases of one run (module docstring). ``events``: (kind, parameters, count)."""

    orders: tuple[float, ...] = ORDERS
    events: list[tuple[str, tuple[float, ...], int]] = field(default_factory=list)

    def gaussian(self, noise_multiplier: float, count: int = 1) -> Accountant:
        """``count`` Gaussian releases with noise multiplier z (noise sd = z · Δ₂)."""
        self.events.append(("gaussian", (float(noise_multiplier), 1.0), int(count)))
        return self

    def sampled_gaussian(self, noise_multiplier: float, q: float, steps: int) -> Accountant:
        """``steps`` DP-SGD steps: Poisson sampling at rate q, noise multiplier z."""
        self.events.append(("gaussian", (float(noise_multiplier), float(q)), int(steps)))
        return self

    def laplace(self, epsilon: float, count: int = 1) -> Accountant:
        """``count`` Laplace releases, each ε-DP (scale = Δ₁ / ε)."""
        self.events.append(("laplace", (float(epsilon),), int(count)))
        return self

    def extend(self, other: Accountant) -> Accountant:
        self.events.extend(other.events)
        return self

    def rdp(self) -> np.ndarray:
        total = np.zeros(len(self.orders))
        for kind, par, count in self.events:
            if kind == "gaussian":
                z, q = par
                total += gaussian_rdp(z, q, count, self.orders)
            else:
                total += count * laplace_rdp(1.0 / par[0], self.orders)
        return total

    def epsilon(self, delta: float) -> float:
        """ε of the whole run at δ (0 with no event; ∞ for a release without noise)."""
        if not self.events:
            return 0.0
        eps, _ = rdp_to_epsilon(self.rdp(), delta, self.orders)
        if all(kind == "laplace" for kind, _, _ in self.events):
            eps = min(eps, sum(par[0] * count for _, par, count in self.events))
        return eps


def calibrate_gaussian(
    epsilon: float, delta: float, count: int = 1, q: float = 1.0, tol: float = 1e-4
) -> float:
    """The smallest noise multiplier z (to relative ``tol``) with which ``count`` releases
    (rate ``q``) spend ≤ ``epsilon`` at ``delta``; 0 for ε = ∞."""
    if not math.isfinite(epsilon):
        return 0.0

    def eps(z: float) -> float:
        return rdp_to_epsilon(gaussian_rdp(z, q, count), delta)[0]

    lo, hi = 1e-2, 1.0
    while eps(hi) > epsilon:
        lo, hi = hi, hi * 2
        if hi > 1e6:
            raise ValueError(f"no noise multiplier reaches epsilon={epsilon}")
    if eps(lo) <= epsilon:
        return lo
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if eps(mid) <= epsilon else (mid, hi)
    return hi
