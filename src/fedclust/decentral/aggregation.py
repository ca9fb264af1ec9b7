"""Sample-weighted averaging (spec §4.1) and the FL strategy: both live in the federation core
(:mod:`fedclust.federation.strategy`); these names stay importable from here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedclust.federation.strategy import FedAvg, aggregate, ave_weights_published

Weights = list[np.ndarray]


class FedAvgStrategy(FedAvg):
    """The core's :class:`~fedclust.federation.strategy.FedAvg` answering Flower's
    ``(parameters, metrics)`` pair. ``weighting``: ``weighted`` (WMA, the thesis) or ``simple``."""

    def aggregate_fit(  # type: ignore[override]
        self, server_round: int, results: Sequence[tuple], current: Weights | None = None
    ) -> tuple[Weights, dict]:
        w = super().aggregate_fit(server_round, results, current)
        return w, {"round": server_round, "clients": len(results)}


__all__ = ["FedAvgStrategy", "Weights", "aggregate", "ave_weights_published"]
