"""Pooled reference clustering and the Lance–Williams machinery (seed 001 §2.2, spec §3).

The pooled tree is always scipy's :func:`scipy.cluster.hierarchy.linkage`; the federated
algorithms reuse :func:`lance_williams` (vectorised update of one row of the distance state).
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from ..errors import ConfigError, InputDataError

Arr = np.ndarray
LINKAGES = ("single", "complete", "average", "centroid", "ward")
METRICS = ("euclidean", "cityblock", "cosine", "correlation")
EUCLIDEAN_ONLY = ("centroid", "ward")


def check_method(method: str, metric: str, where: str = "hac") -> None:
    """Raise a clear :class:`ConfigError` for an unknown or impossible linkage/metric pair."""
    if method not in LINKAGES:
        raise ConfigError(
            f"unknown linkage {method!r}", where=where, fix=f"use one of {', '.join(LINKAGES)}"
        )
    if metric not in METRICS:
        raise ConfigError(
            f"unknown metric {metric!r}", where=where, fix=f"use one of {', '.join(METRICS)}"
        )
    if method in EUCLIDEAN_ONLY and metric != "euclidean":
        raise ConfigError(
            f"{method} linkage is defined only for the Euclidean metric, got {metric!r}",
            where=where,
            fix="use metric: euclidean with centroid/ward, or another linkage",
        )


def check_samples(x: np.ndarray, where: str = "samples") -> np.ndarray:
    """A finite 2-D float array with at least two rows, or a clear :class:`InputDataError`."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2:
        raise InputDataError(
            f"need a 2-D samples × features matrix with ≥ 2 samples, got shape {x.shape}",
            where=where,
        )
    if not np.isfinite(x).all():
        raise InputDataError(
            "the data contain NaN or infinite values", where=where, fix="impute or drop them"
        )
    return x


def pooled_linkage(x: np.ndarray, method: str, metric: str = "euclidean") -> np.ndarray:
    """The pooled reference tree: scipy ``linkage`` on all samples (rows of ``x``)."""
    check_method(method, metric)
    x = check_samples(x)
    if method in EUCLIDEAN_ONLY:
        return linkage(x, method=method, metric="euclidean")
    return linkage(pdist(x, metric), method=method)


def _single(d_il: Arr, d_jl: Arr, d_ij: float, n_i: float, n_j: float, n_l: Arr) -> Arr:
    return np.minimum(d_il, d_jl)


def _complete(d_il: Arr, d_jl: Arr, d_ij: float, n_i: float, n_j: float, n_l: Arr) -> Arr:
    return np.maximum(d_il, d_jl)


def _average(d_il: Arr, d_jl: Arr, d_ij: float, n_i: float, n_j: float, n_l: Arr) -> Arr:
    return (n_i * d_il + n_j * d_jl) / (n_i + n_j)


def _centroid_sq(d_il: Arr, d_jl: Arr, d_ij: float, n_i: float, n_j: float, n_l: Arr) -> Arr:
    n = n_i + n_j
    return (n_i * d_il**2 + n_j * d_jl**2) / n - n_i * n_j * d_ij**2 / n**2


def _ward_sq(d_il: Arr, d_jl: Arr, d_ij: float, n_i: float, n_j: float, n_l: Arr) -> Arr:
    n = n_i + n_j
    return ((n_i + n_l) * d_il**2 + (n_j + n_l) * d_jl**2 - n_l * d_ij**2) / (n + n_l)


#: Lance–Williams update d(I ∪ J, L) per linkage (spec §3 table); centroid and Ward give the
#: squared distance (``SQUARED``), whose square root is taken after clipping.
LANCE_WILLIAMS = {
    "single": _single,
    "complete": _complete,
    "average": _average,
    "centroid": _centroid_sq,
    "ward": _ward_sq,
}
SQUARED = frozenset({"centroid", "ward"})


def lance_williams(
    method: str,
    d_il: np.ndarray,
    d_jl: np.ndarray,
    d_ij: float,
    n_i: float,
    n_j: float,
    n_l: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Distances ``d(I ∪ J, L)`` for a vector of clusters L (spec §3 table).

    Returns the distances and the number of radicands below ``-1e-9`` (clipped to 0) for
    centroid/Ward: with approximate federated distances that must never happen (spec §5.2).
    """
    if method not in LANCE_WILLIAMS:
        raise ConfigError(f"unknown linkage {method!r}", fix=f"use one of {LINKAGES}")
    r = LANCE_WILLIAMS[method](d_il, d_jl, d_ij, n_i, n_j, n_l)
    if method not in SQUARED:
        return r, 0
    with np.errstate(invalid="ignore"):
        bad = int(np.sum(r < -1e-9 * np.maximum(1.0, np.abs(d_il) ** 2)))
    return np.sqrt(np.maximum(r, 0.0)), bad


def weighted_linkage(d: np.ndarray, sizes: np.ndarray, method: str) -> np.ndarray:
    """Agglomerate ``m`` weighted objects from a square distance matrix (generic algorithm).

    Each object of weight ``sizes[a]`` acts as that many identical points (spec §5.1, the server
    phase of simultaneous sharing). Returns a scipy-format ``(m−1) × 4`` matrix whose column 3
    holds the summed weights; ids ``< m`` are the objects.
    """
    d = np.array(d, dtype=float)
    m = d.shape[0]
    np.fill_diagonal(d, np.inf)
    size = np.asarray(sizes, dtype=float).copy()
    cid = np.arange(m)
    active = np.ones(m, dtype=bool)
    z = np.zeros((max(m - 1, 0), 4))
    for t in range(m - 1):
        flat = int(np.argmin(d))
        i, j = divmod(flat, m)
        if i > j:
            i, j = j, i
        h = d[i, j]
        z[t] = [min(cid[i], cid[j]), max(cid[i], cid[j]), h, size[i] + size[j]]
        others = active.copy()
        others[[i, j]] = False
        new, _ = lance_williams(
            method, d[i, others], d[j, others], h, size[i], size[j], size[others]
        )
        d[i, others] = d[others, i] = new
        d[j, :] = d[:, j] = np.inf
        active[j] = False
        size[i] += size[j]
        cid[i] = m + t
    return z


def centred_rows(x: np.ndarray, metric: str) -> tuple[np.ndarray, str]:
    """Correlation distance = cosine distance of row-centred samples (each centre centres its
    own rows): ``(rows, metric)`` as the linkage sees them."""
    if metric == "correlation":
        return x - x.mean(axis=1, keepdims=True), "cosine"
    return x, metric
