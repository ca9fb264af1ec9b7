"""Federated genewise clustering — Algorithm 3 with the spec's corrections (spec §4, §0.4).

Genes are the objects, samples (spread over centers) the features. Each center sends an additive
contribution to the gene × gene distance matrix; the server sums and clusters. For cosine and
correlation an extra aggregation round provides the *global* gene norms (and means); for ℓp the
server takes the p-th root of the summed contributions. The result equals pooled ``pdist``.
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist, squareform

from ..errors import ConfigError
from ..ledger import Ledger
from .pooled import check_method

SERVER = "server"
GENE_METRICS = ("euclidean", "cityblock", "cosine", "correlation")


def center_gene_stats(x_k: np.ndarray) -> dict:
    """Center-side round 1: per-gene sums, sums of squares and the sample count."""
    return {"sum": x_k.sum(axis=0), "sumsq": (x_k**2).sum(axis=0), "n": int(x_k.shape[0])}


def server_gene_stats(messages: list[dict]) -> dict:
    """Server-side round 1: global gene means and global (centred) norms."""
    n = sum(m["n"] for m in messages)
    s = np.sum([m["sum"] for m in messages], axis=0)
    ss = np.sum([m["sumsq"] for m in messages], axis=0)
    mean = s / n
    return {"mean": mean, "norm": np.sqrt(ss), "cnorm": np.sqrt(np.maximum(ss - n * mean**2, 0))}


def center_gene_distances(x_k: np.ndarray, metric: str, stats: dict | None) -> dict:
    """Center-side round 2: the center's additive contribution ``D^(k)`` (condensed)."""
    if metric == "euclidean":
        return {"d": pdist(x_k.T, "sqeuclidean")}
    if metric == "cityblock":
        return {"d": pdist(x_k.T, "cityblock")}
    if metric == "cosine":
        y = x_k / stats["norm"]
    elif metric == "correlation":
        y = (x_k - stats["mean"]) / stats["cnorm"]
    else:
        raise ConfigError(f"unknown genewise metric {metric!r}", fix=f"use one of {GENE_METRICS}")
    return {"d": 0.5 * pdist(y.T, "sqeuclidean")}


def server_gene_distances(messages: list[dict], metric: str) -> np.ndarray:
    """Server-side: sum the contributions (and take the square root for Euclidean)."""
    d = np.sum([m["d"] for m in messages], axis=0)
    return np.sqrt(d) if metric == "euclidean" else d


def genewise_clustering(
    blocks: list[np.ndarray], method: str, metric: str, ledger: Ledger | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Run Algorithm 3 on per-center sample blocks (same genes in every block).

    Returns ``(Z, condensed gene distances)``.
    """
    check_method(method, metric, where="hac.genewise")
    led = ledger if ledger is not None else Ledger()
    names = [f"center{k}" for k in range(len(blocks))]
    stats = None
    if metric in ("cosine", "correlation"):
        msgs = [
            led.send(nm, SERVER, center_gene_stats(b), 0, "gene stats")
            for nm, b in zip(names, blocks, strict=True)
        ]
        stats = server_gene_stats(msgs)
        if np.any(stats["norm" if metric == "cosine" else "cnorm"] == 0):
            raise ConfigError(
                f"a gene is constant (zero {'norm' if metric == 'cosine' else 'variance'})",
                where="hac.genewise",
                fix="drop constant genes before genewise cosine/correlation clustering",
            )
        for nm in names:
            led.send(SERVER, nm, stats, 0, "gene stats broadcast")
    msgs = [
        led.send(nm, SERVER, center_gene_distances(b, metric, stats), 1, "gene distances")
        for nm, b in zip(names, blocks, strict=True)
    ]
    d = server_gene_distances(msgs, metric)
    if method in ("centroid", "ward"):
        return linkage(d, method=method), d
    return linkage(d, method=method), d


def pooled_gene_distances(x: np.ndarray, metric: str) -> np.ndarray:
    """Pooled reference: ``pdist`` over genes (columns) of all samples."""
    return pdist(np.asarray(x, dtype=float).T, metric)


__all__ = ["genewise_clustering", "pooled_gene_distances", "squareform"]
