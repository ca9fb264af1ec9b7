"""Sample-weighted averaging of Keras-ordered weight lists (spec §4.1) and the FL strategy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Weights = list[np.ndarray]


def aggregate(weights_list: Sequence[Weights], n_list: Sequence[float]) -> Weights:
    """``Σ_j (n_j / N) W_j`` layer-wise; lengths must match (the corrected ``ave_weights``)."""
    if len(weights_list) != len(n_list):
        raise ValueError(f"{len(weights_list)} weight sets but {len(n_list)} sample counts")
    n = np.asarray(n_list, dtype=np.float64)
    if len(n) == 0 or (n <= 0).any():
        raise ValueError("sample counts must be positive and non-empty")
    coef = n / n.sum()
    return [
        sum(
            c * np.asarray(w[i], dtype=np.float64) for c, w in zip(coef, weights_list, strict=True)
        ).astype(np.float32)
        for i in range(len(weights_list[0]))
    ]


def ave_weights_published(n_list: Sequence[float], weights_list: Sequence[Weights]) -> Weights:
    """The thesis' ``ave_weights`` (code block 3.3): silently uses only the first ``len(n_list)``
    entries of ``weights_list`` — the root of the published exchange bug (spec §4.9)."""
    if len(weights_list) < len(n_list):
        raise ValueError("ave_weights needs at least as many weight sets as sample counts")
    return aggregate(list(weights_list)[: len(n_list)], n_list)


class FedAvgStrategy:
    """Server side of FL, shaped like Flower's ``Strategy.aggregate_fit``.

    ``weighting``: ``weighted`` (WMA, the thesis: by train samples) or ``simple`` (SMA).
    """

    def __init__(self, weighting: str = "weighted"):
        if weighting not in ("weighted", "simple"):
            raise ValueError("weighting must be 'weighted' or 'simple'")
        self.weighting = weighting

    def aggregate_fit(self, server_round: int, results: Sequence[tuple[Weights, int, dict]]):
        """``results``: ``(parameters, num_examples, metrics)`` per client → (parameters, {})."""
        weights = [r[0] for r in results]
        n = [r[1] if self.weighting == "weighted" else 1 for r in results]
        return aggregate(weights, n), {"round": server_round, "clients": len(results)}
