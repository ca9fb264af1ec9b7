"""Known input-output attack on orthogonal projections (seed 001 §8.1, thesis §3.3.4.2.1, [47]).

The attacker holds all of ``Y = X Q`` (Q orthogonal) and the pairs ``(X_k, Y_k)``. Sampling an
orthogonal ``Q̂`` with ``X_k Q̂ = Y_k`` uniformly reconstructs ``x̂ = y Q̂ᵀ`` with
``P(‖x̂ − x‖ ≤ ε‖x‖) = (2/π) arcsin(‖x‖ε / (2 d(x, X_k)))`` (eq. 3.1), so the error is at most
``ε_x = 2 d(x, X_k) / ‖x‖`` (eq. 3.2), ``d`` = distance to the row space of ``X_k``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.linalg

from ..seeds import rng


def row_space_basis(xk: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis (d × r) of the row space of ``xk`` (pivoted QR of ``xkᵀ``; no d × d)."""
    if xk.shape[0] == 0:
        return np.zeros((xk.shape[1], 0))
    q, r, _ = scipy.linalg.qr(xk.T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int((diag > rtol * diag.max()).sum()) if diag.size and diag.max() > 0 else 0
    return q[:, :rank]


def distance_to_row_space(x: np.ndarray, xk: np.ndarray) -> np.ndarray:
    """``d(x, X_k)`` for every row of ``x``."""
    u = row_space_basis(xk)
    return np.linalg.norm(x - (x @ u) @ u.T, axis=1)


def max_relative_error(x: np.ndarray, xk: np.ndarray) -> np.ndarray:
    """Guaranteed maximum relative error ``ε_x = 2 d(x, X_k) / ‖x‖`` (eq. 3.2) per row of x."""
    return 2.0 * distance_to_row_space(x, xk) / np.linalg.norm(x, axis=1)


def breach_probability(x_norm: np.ndarray, dist: np.ndarray, eps: float) -> np.ndarray:
    """Eq. 3.1: probability that the reconstruction is within relative error ``eps``."""
    x_norm, dist = np.asarray(x_norm, float), np.asarray(dist, float)
    arg = np.divide(x_norm * eps, 2.0 * dist, out=np.full_like(dist, np.inf), where=dist > 0)
    return np.where(arg < 1.0, (2.0 / np.pi) * np.arcsin(np.minimum(arg, 1.0)), 1.0)


def sample_consistent_inverse(xk: np.ndarray, yk: np.ndarray, seed: int) -> np.ndarray:
    """The attacker's step: a random orthogonal ``Q̂`` (d × d) with ``X_k Q̂ = Y_k``.

    ``Q̂ = U (Uᵀ Q) + U⊥ R W⊥ᵀ``: ``UᵀQ`` is known from the pairs, the complement is mapped by a
    random orthogonal ``R`` (small d only; used in tests to check eq. 3.2 empirically).
    """
    d = xk.shape[1]
    u = row_space_basis(xk)
    utq = np.linalg.lstsq(xk @ u, yk, rcond=None)[0]  # X_k = (X_k U) Uᵀ  ⇒  Y_k = (X_k U) UᵀQ
    full_u = scipy.linalg.null_space(u.T) if u.shape[1] < d else np.zeros((d, 0))
    w = utq.T  # d × r, orthonormal columns: Qᵀ U
    full_w = scipy.linalg.null_space(w.T) if w.shape[1] < d else np.zeros((d, 0))
    m = full_u.shape[1]
    if m:
        a = rng(seed, "known-io-qhat").standard_normal((m, m))
        r, rr = np.linalg.qr(a)
        r = r * np.sign(np.diag(rr))
        return u @ utq + full_u @ r @ full_w.T
    return u @ utq


def known_io_curve(
    x: np.ndarray, fractions: list[float], n_seeds: int | range, seed: int, label: str = ""
) -> pd.DataFrame:
    """``ε_x`` of every unknown sample per known fraction and seed (thesis §4.4.1, 10 seeds).

    ``n_seeds``: a number of known sets, or the indices to compute (a fan-out block; each known
    set derives from its index alone)."""
    n = x.shape[0]
    seeds = range(n_seeds) if isinstance(n_seeds, int) else n_seeds
    rows = []
    for frac in fractions:
        n_known = int(round(frac * n))
        for s in seeds:
            perm = rng(seed, "known-io", label, frac, s).permutation(n)
            known, unknown = perm[:n_known], perm[n_known:]
            if len(unknown) == 0:
                continue
            eps = max_relative_error(x[unknown], x[known])
            rows.append(
                pd.DataFrame({"fraction": frac, "run": s, "sample": unknown, "max_rel_error": eps})
            )
    return pd.concat(rows, ignore_index=True)
