"""Small statistics shared by the federated methods (no stage imports)."""

from __future__ import annotations

import numpy as np


def combine_moments(
    n_a: float, mean_a: np.ndarray, m2_a: np.ndarray, n_b: float, mean_b: np.ndarray, m2_b
) -> tuple[float, np.ndarray, np.ndarray]:
    """Parallel-variance update (Chan, Golub & LeVeque 1979): moments of the union of A and B."""
    n = n_a + n_b
    delta = mean_b - mean_a
    return n, mean_a + delta * (n_b / n), m2_a + m2_b + delta**2 * (n_a * n_b / n)
