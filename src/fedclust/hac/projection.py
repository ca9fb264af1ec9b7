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
