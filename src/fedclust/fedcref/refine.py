"""ClusterRefine (seed 002 Algorithm 2, §2.5) and the stopping rules (§2.6)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedclust.metrics.assignment import hungarian_accuracy


def cluster_refine(errors: np.ndarray, k: int) -> tuple[np.ndarray, list[int]]:
    """Greedy most-voted-lowest-error model selection.

    ``errors``: n × |M| per-sample reconstruction errors, columns = the candidate models M (the
    client's local models first, then the federated group models). For p = 1..k: each remaining
    sample votes for its argmin model among the remaining columns (ties → lowest column); the
    most-voted model (ties → lowest column) forms cluster p−1 with its voters; the model and
    those samples are removed. If no sample remains, the remaining clusters stay empty. Samples
    left after k passes go to the cluster of their best model among the selected ones.
    Returns (labels in 0..k−1, selected column per cluster).
    """
    e = np.asarray(errors, dtype=float)
    n, m = e.shape
    labels = np.full(n, -1, dtype=int)
    remaining = np.ones(m, dtype=bool)
    selected: list[int] = []
    for p in range(k):
        rows = np.flatnonzero(labels < 0)
        if len(rows) == 0 or not remaining.any():
            break
        cols = np.flatnonzero(remaining)
        best = cols[np.argmin(e[np.ix_(rows, cols)], axis=1)]
        counts = np.bincount(best, minlength=m)
        mmax = int(np.argmax(counts))  # lowest column among ties
        labels[rows[best == mmax]] = p
        selected.append(mmax)
        remaining[mmax] = False
    rows = np.flatnonzero(labels < 0)
    if len(rows):
        sel = np.asarray(selected)
        labels[rows] = np.argmin(e[np.ix_(rows, sel)], axis=1)
    return labels, selected


def align_labels(new: np.ndarray, prev: np.ndarray, k: int) -> np.ndarray:
    """``new`` relabelled so that its cluster ids overlap ``prev``'s most (Hungarian on the
    k × k contingency table; client-local bookkeeping). ClusterRefine numbers clusters in
    selection order, so without this cluster q of an inactive client - whose frozen model
    q was trained on its previous cluster q (§2.6) - could be another cluster altogether."""
    from scipy.optimize import linear_sum_assignment

    new, prev = np.asarray(new, dtype=int), np.asarray(prev, dtype=int)
    m = np.zeros((k, k), dtype=np.int64)
    np.add.at(m, (new, prev), 1)
    rows, cols = linear_sum_assignment(m, maximize=True)
    perm = np.empty(k, dtype=int)
    perm[rows] = cols
    return perm[new]


def client_stable(prev: np.ndarray, new: np.ndarray, tau: float) -> tuple[bool, float]:
    """§2.6: ACC(y', y) between consecutive partitions ≥ τ makes the client inactive."""
    acc = hungarian_accuracy(new, prev)
    return bool(acc >= tau), float(acc)


def series_stable(values: Sequence[float], max_pct: float, consecutive: int = 3) -> bool:
    """The last ``consecutive`` steps each change by ≤ ``max_pct`` % (relative to
    max(previous, 1)); needs ``consecutive`` + 1 values (authors' ``should_stop``)."""
    v = list(values)
    if len(v) < consecutive + 1:
        return False
    for a, b in zip(v[-consecutive - 1 : -1], v[-consecutive:], strict=True):
        if abs(b - a) / max(a, 1) * 100.0 > max_pct:
            return False
    return True
