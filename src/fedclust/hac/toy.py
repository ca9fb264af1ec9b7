"""Toy data sets of the thesis' experiments (spec §5.4, §6) and a BRCA-shaped simulation."""

from __future__ import annotations

import numpy as np

from ..seeds import rng


def bimodal(seed: int, n_per_mode: int = 50, sigma: float = 0.1, n_centers: int = 3):
    """Figs 4.1–4.2: two 2-D Gaussian modes at distance 1, split into centers balanced per mode.

    Returns ``(x, mode, center)``.
    """
    g = rng(seed, "toy", "bimodal")
    x = np.vstack(
        [g.normal(0, sigma, (n_per_mode, 2)), g.normal(0, sigma, (n_per_mode, 2)) + [1.0, 0.0]]
    )
    mode = np.repeat([0, 1], n_per_mode)
    center = np.empty(2 * n_per_mode, dtype=int)
    for md in (0, 1):
        idx = np.flatnonzero(mode == md)
        g.shuffle(idx)
        center[idx] = (np.arange(idx.size) + md) % n_centers
    return x, mode, center


def blobs(seed: int, n: int = 100, d: int = 500, k: int = 5, sigma: float = 0.1):
    """Fig 4.8: n points from k isotropic Gaussian blobs, centres uniform in [0, 1]^d."""
    g = rng(seed, "toy", "blobs", n, d, k, sigma)
    centres = g.uniform(0, 1, (k, d))
    lab = np.arange(n) % k
    return centres[lab] + g.normal(0, sigma, (n, d)), lab


def uniform(seed: int, n: int = 100, d: int = 500):
    """Fig 4.9: n points uniform in [0, 1]^d."""
    return rng(seed, "toy", "uniform", n, d).uniform(0, 1, (n, d))


def cohort_like(seed: int, n: int, d: int = 2000, n_centers: int = 7, n_clusters: int = 5):
    """A VST-like matrix (log2 scale) with a few subtypes, split into skewed center sizes
    (largest ≈ 40 %, smallest ≈ 2 %, as TCGA regions). Returns ``(x, center)``."""
    g = rng(seed, "toy", "cohort", n, d)
    means = g.normal(8, 2, d)
    shifts = g.normal(0, 1.0, (n_clusters, d)) * (g.random((n_clusters, d)) < 0.1)
    lab = g.integers(0, n_clusters, n)
    x = means + shifts[lab] + g.normal(0, 0.6, (n, d))
    w = np.array([0.40, 0.2, 0.15, 0.1, 0.08, 0.05, 0.02])[:n_centers]
    center = g.choice(n_centers, size=n, p=w / w.sum())
    return x, center
