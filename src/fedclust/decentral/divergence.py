"""Weight divergence between clients (spec §5, thesis eq. 3.1)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

from fedclust.federation.strategy import NDArrays


def flatten(weights: NDArrays) -> np.ndarray:
    """All arrays (incl. BN moving statistics) flattened and concatenated, float64."""
    return np.concatenate([np.asarray(w, dtype=np.float64).ravel() for w in weights])


def weight_divergence(wm: NDArrays, wn: NDArrays) -> float:
    """``‖w_m − w_n‖ / (½(‖w_m‖ + ‖w_n‖))`` with the Euclidean norm of all parameters."""
    fm, fn = flatten(wm), flatten(wn)
    return float(np.linalg.norm(fm - fn) / (0.5 * (np.linalg.norm(fm) + np.linalg.norm(fn))))


def pairwise_divergence(states: Sequence[NDArrays]) -> dict[str, float]:
    """All pairs in ``itertools.combinations`` order, keys ``"1-2"`` (1-based clients)."""
    flats = [flatten(w) for w in states]
    norms = [np.linalg.norm(f) for f in flats]
    return {
        f"{i + 1}-{j + 1}": float(
            np.linalg.norm(flats[i] - flats[j]) / (0.5 * (norms[i] + norms[j]))
        )
        for i, j in combinations(range(len(states)), 2)
    }
