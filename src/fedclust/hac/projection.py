"""Shared-seed random projections (seed 001 §2.4, §3.3.4, Algorithms 2 and 5).

All centers draw the *same* matrix from the shared seed, so ``X^(k) @ Q`` rows are comparable
across centers. Used by the random-projection HAC variants and by the attacks.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..seeds import rng

Kind = Literal["gaussian", "cauchy", "orthogonal"]


def projection_matrix(d: int, k: int, kind: Kind, seed: int) -> np.ndarray:
    """A ``d × k`` projection matrix drawn from the shared ``seed``.

    - ``gaussian``: i.i.d. N(0, 1) entries (2-stable; JL for Euclidean distances,
      ``‖xQ − yQ‖² / k`` is unbiased for ``‖x − y‖²``).
    - ``cauchy``: i.i.d. standard Cauchy entries (1-stable; sketches for cityblock distance).
    - ``orthogonal``: Haar-distributed orthonormal columns (``k ≤ d``: ``QᵀQ = I_k``) or rows
      (``k ≥ d``: ``QQᵀ = I_d``, hides d; exact ℓ2 distances — orthogonal perturbation, Alg. 2).
      QR of a Gaussian matrix with the sign fix of Mezzadri (2007).
    """
    if d < 1 or k < 1:
        raise ValueError(f"projection needs d ≥ 1 and k ≥ 1, got d={d}, k={k}")
    g = rng(seed, "projection", kind, d, k)
    if kind == "gaussian":
        return g.standard_normal((d, k))
    if kind == "cauchy":
        return g.standard_cauchy((d, k))
    if kind == "orthogonal":
        tall = d >= k
        a = g.standard_normal((d, k) if tall else (k, d))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        return q if tall else q.T
    raise ValueError(f"unknown projection kind {kind!r}: use gaussian, cauchy or orthogonal")


def project(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Center-side: the only thing a center shares in Algorithms 2 and 5, ``X Q``."""
    return np.asarray(x, dtype=float) @ q


# ---- server-side distance estimators (Algorithm 5, spec §6) ----------------------------------


def gaussian_distances(y: np.ndarray, k: int | None = None) -> np.ndarray:
    """Euclidean estimate from a Gaussian sketch with N(0,1) entries: ``‖y_i − y_j‖ / √d′``.

    (The thesis prints 1/n; it is 1/d′ — spec §0.4.) Condensed vector.
    """
    from scipy.spatial.distance import pdist

    k = y.shape[1] if k is None else k
    return pdist(y, "euclidean") / np.sqrt(k)


def cauchy_distances(y: np.ndarray, estimator: str = "geometric") -> np.ndarray:
    """Cityblock estimate from a Cauchy sketch (spec §6), condensed vector.

    ``geometric``: ``exp(mean_t log|Δ_t|) · cos^{d′}(π / 2d′)`` (geometric-mean estimator, eq.
    2.2 for p = 1), computed in log space; ``median``: ``median_t |Δ_t|``. Pairs are processed one
    row at a time, never as an n × n × d′ array.
    """
    y = np.asarray(y, dtype=float)
    n, k = y.shape
    if estimator not in ("geometric", "median"):
        raise ValueError(f"unknown Cauchy estimator {estimator!r}: use geometric or median")
    out = np.empty(n * (n - 1) // 2)
    log_corr = k * np.log(np.cos(np.pi / (2 * k))) if k > 1 else 0.0
    pos = 0
    for i in range(n - 1):  # one row of differences at a time: O(n d′) memory
        diff = np.abs(y[i + 1 :] - y[i])
        if estimator == "geometric":
            with np.errstate(divide="ignore"):
                val = np.exp(np.log(diff).mean(axis=1) + log_corr)
        else:
            val = np.median(diff, axis=1)
        out[pos : pos + val.size] = val
        pos += val.size
    return out


def normalise_rows(x: np.ndarray, centre: bool = False) -> np.ndarray:
    """Center-side preprocessing for the cosine (and correlation, ``centre=True``) sketch."""
    x = np.asarray(x, dtype=float)
    if centre:
        x = x - x.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norm == 0, 1.0, norm)


def sketch_distances(y: np.ndarray, metric: str, estimator: str = "geometric") -> np.ndarray:
    """Server-side: condensed distance estimate for ``metric`` from the stacked sketches ``y``.

    ``euclidean``: Gaussian sketch; ``cityblock``: Cauchy sketch; ``cosine`` / ``correlation``:
    Gaussian sketch of locally normalised samples, ``½ ‖x̂ − ŷ‖²``.
    """
    if metric == "euclidean":
        return gaussian_distances(y)
    if metric == "cityblock":
        return cauchy_distances(y, estimator)
    if metric in ("cosine", "correlation"):
        return 0.5 * gaussian_distances(y) ** 2
    raise ValueError(f"no sketch for metric {metric!r}")


def sketch_kind(metric: str) -> Kind:
    """The stable law of the projection for ``metric`` (Cauchy for ℓ1, else Gaussian)."""
    return "cauchy" if metric == "cityblock" else "gaussian"
