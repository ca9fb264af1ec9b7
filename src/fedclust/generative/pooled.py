"""Pooled (centralised) baselines: the very trainers the centres run, on the pooled rows, with
one scaler fitted on them. There is no field library for these models; the one-centre
invariant (a single centre equals this, exactly) ties the federated code to it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import data as D
from .centre import DgdCentre, SavaeCentre


def savae(
    table: D.Tabular, mask: np.ndarray, build: Callable, train: dict, seed: int, epochs: int
) -> tuple[SavaeCentre, list[float]]:
    """SAVAE trained for ``epochs`` on the pooled rows (a centre object that never sends)."""
    node = SavaeCentre("pooled", table, mask, build, train, seed, min_samples=1)
    node.standardise_locally()
    return node, node.train_local(epochs)


def dgd(
    x: np.ndarray, mask: np.ndarray, spec, build: Callable, train, seed: int, epochs: int
) -> tuple[DgdCentre, list[float]]:
    """DGD MAP-fitted for ``epochs`` on the pooled rows."""
    node = DgdCentre("pooled", x, mask, spec, build, train, seed, min_samples=1)
    node.standardise_locally()
    return node, node.train_local(epochs)
