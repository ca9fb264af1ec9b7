"""Centralized baseline (spec §2.7, §3.2): global 75/25 split, MinMax on the training rows,
grid search over batch size × epochs with 3-fold CV (accuracy), refit of the best, test metrics."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import KFold, train_test_split
from sklearn.preprocessing import MinMaxScaler

from fedclust.seeds import derive_seed, seed_torch

from .model import HeartNet
from .training import Trainer

log = logging.getLogger(__name__)


def _fit_eval(Xtr, ytr, Xte, yte, batch, epochs, lr, seed, label):
    seed_torch(seed, "decentral", "central", *label)
    w0 = HeartNet(Xtr.shape[1]).get_weights()
    tr = Trainer(Xtr.shape[1], lr, "shared", derive_seed(seed, "decentral", "central", *label))
    w, _ = tr.fit(w0, torch.from_numpy(Xtr), torch.from_numpy(ytr), epochs, batch, "central")
    return tr.evaluate(w, torch.from_numpy(Xte), torch.from_numpy(yte))


def _train_test(features: pd.DataFrame, y: np.ndarray, random_state: int):
    """Global 75/25 split and a MinMaxScaler fitted on the training rows (spec §2.7)."""
    X = features.to_numpy(np.float64)
    Xtr, Xte, ytr, yte = train_test_split(X, np.asarray(y), test_size=0.25,
                                          random_state=random_state)  # fmt: skip
    sc = MinMaxScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr).astype(np.float32), sc.transform(Xte).astype(np.float32)
    return Xtr, Xte, ytr.astype(np.float32), yte.astype(np.float32)


def _cell(Xtr, ytr, b: int, e: int, folds: int, lr: float, seed: int) -> dict:
    accs = []
    for f, (a, v) in enumerate(KFold(folds).split(Xtr)):
        r = _fit_eval(Xtr[a], ytr[a], Xtr[v], ytr[v], b, e, lr, seed, ("cv", b, e, f))
        accs.append(r.accuracy)
    row = {"batch_size": b, "epochs": e, "cv_accuracy": float(np.mean(accs))}
    log.info("grid batch %d epochs %d: cv accuracy %.4f", b, e, row["cv_accuracy"])
    return row


def grid_cell(
    features: pd.DataFrame,
    y: np.ndarray,
    batch_size: int,
    epochs: int,
    folds: int = 3,
    lr: float = 1e-3,
    seed: int = 0,
    random_state: int = 0,
) -> dict:
    """One cell of the grid search (its own job in the thesis DAG): the mean CV accuracy of
    ``folds``-fold unshuffled KFold on the training rows, seeded by the cell's identity, so a
    cell computed alone equals the same cell inside :func:`centralized_baseline`."""
    Xtr, _, ytr, _ = _train_test(features, y, random_state)
    return _cell(Xtr, ytr, int(batch_size), int(epochs), folds, lr, seed)


def centralized_baseline(
    features: pd.DataFrame,
    y: np.ndarray,
    batch_sizes: Sequence[int],
    epochs: Sequence[int],
    grid: bool,
    best: tuple[int, int] = (14, 38),
    folds: int = 3,
    lr: float = 1e-3,
    seed: int = 0,
    random_state: int = 0,
    grid_rows: Sequence[dict] | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Returns (grid table: batch_size, epochs, cv_accuracy per fold mean; result dict).

    CV: unshuffled ``KFold(folds)`` (what sklearn uses for the thesis' Keras wrapper, spec §3.2).
    With ``grid=False`` the published best (batch 14, 38 epochs) is refit directly.
    ``grid_rows``: the cells already computed by :func:`grid_cell` (batch sizes outer, epochs
    inner, as here), e.g. by one job each; else they are computed here.
    """
    Xtr, Xte, ytr, yte = _train_test(features, y, random_state)
    if grid:
        if grid_rows is None:
            grid_rows = [_cell(Xtr, ytr, b, e, folds, lr, seed)
                         for b in batch_sizes for e in epochs]  # fmt: skip
        table = pd.DataFrame(list(grid_rows), columns=["batch_size", "epochs", "cv_accuracy"])
        top = table.loc[table["cv_accuracy"].idxmax()]
        best = (int(top["batch_size"]), int(top["epochs"]))
        best_cv = float(top["cv_accuracy"])
    else:
        table = pd.DataFrame(columns=["batch_size", "epochs", "cv_accuracy"])
        best_cv = float("nan")
    r = _fit_eval(Xtr, ytr, Xte, yte, best[0], best[1], lr, seed, ("refit",))
    res = {
        "grid_search": grid,
        "batch_size": best[0],
        "epochs": best[1],
        "cv_accuracy": best_cv,
        "n_train": len(ytr),
        "n_test": len(yte),
        "test_loss_total": r.loss_total,
        "test_loss_bce": r.loss_bce,
        "test_accuracy": r.accuracy,
        "test_auc": r.auc,
    }
    return table, res
