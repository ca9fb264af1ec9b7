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

from ..errors import ConfigError, InputDataError
from ..federation import Ledger
from ..stats import combine_moments
from .boundary import (
    Policies,
    abstain,
    centre_send,
    floor_of,
    genewise_protocol,
    policy_of,
    server_send,
)
from .pooled import check_method

GENE_METRICS = ("euclidean", "cityblock", "cosine", "correlation")


def center_gene_stats(x_k: np.ndarray) -> dict:
    """Center-side round 1: per-gene count, mean, *centred* sum of squares and constancy.

    Two-pass local statistics (mean first, then ``Σ (x − mean)²``), never ``Σx² − n·mean²``
    (catastrophic cancellation for genes with large means, spec §4). ``sumsq`` (uncentred) is
    kept for the cosine norm. ``constant`` is 1 where every local value is identical; the mean
    of such a gene is then the value itself (exact, no rounding from ``sum / n``).
    """
    x_k = np.asarray(x_k, dtype=float)
    mean = x_k.mean(axis=0)
    const = np.all(x_k == x_k[:1], axis=0)
    mean = np.where(const, x_k[0], mean)
    m2 = ((x_k - mean) ** 2).sum(axis=0)
    m2[const] = 0.0
    return {
        "n": int(x_k.shape[0]),
        "mean": mean,
        "m2": m2,
        "sumsq": (x_k**2).sum(axis=0),
        "constant": const.astype(float),
    }


def server_gene_stats(messages: list[dict]) -> dict:
    """Server-side round 1: global gene means, norms and centred norms (Chan et al. merge).

    A gene is constant iff it is constant in every center *and* every center reports the same
    value (exact comparison): its centred norm is then exactly 0.
    """
    n, mean, m2 = float(messages[0]["n"]), messages[0]["mean"], messages[0]["m2"]
    for m in messages[1:]:
        n, mean, m2 = combine_moments(n, mean, m2, float(m["n"]), m["mean"], m["m2"])
    const = np.all([m["constant"] > 0 for m in messages], axis=0)
    const &= np.all([m["mean"] == messages[0]["mean"] for m in messages], axis=0)
    mean = np.where(const, messages[0]["mean"], mean)
    cnorm = np.where(const, 0.0, np.sqrt(np.maximum(m2, 0.0)))
    ss = np.sum([m["sumsq"] for m in messages], axis=0)
    return {"mean": mean, "norm": np.sqrt(ss), "cnorm": cnorm, "constant": const.astype(float)}


def gene_variances(blocks: list[np.ndarray], n_min: int = 1, ledger: Ledger | None = None,
                   policy: Policies = None) -> np.ndarray:  # fmt: skip
    """Per-gene variance (ddof 0) of the union of the centers' samples from their round-1
    moments (:func:`center_gene_stats` through the ledger, Chan et al. merge): the gene
    selection of the genewise and perturbation baselines (issue 23), equal to the pooled
    ``var`` up to rounding. Centers below their floor (``n_min`` raised to their own
    ``nfilter_subset``, issue 22) abstain."""
    led = ledger if ledger is not None else Ledger()
    proto = genewise_protocol(n_min)
    msgs = []
    for k, b in enumerate(blocks):
        nm = f"center{k}"
        pol = policy_of(policy, nm, k)
        if b.shape[0] < floor_of(pol, n_min):
            abstain(led, nm, 0, proto, "fewer samples than the centre's floor")
            continue
        stats = center_gene_stats(b)
        msg = {key: stats[key] for key in ("n", "mean", "m2")}
        msgs.append(centre_send(led, pol, nm, b.shape[0], msg, 0, "gene selection moments", proto))
    if not msgs:
        raise InputDataError(
            f"every center holds fewer samples than its floor (n_min = {n_min} or the centres' "
            "nfilter_subset): no gene variances",
            where="hac genewise gene selection",
            fix="lower n_min below the size of the largest center",
        )
    n, _, m2 = float(msgs[0]["n"]), msgs[0]["mean"], msgs[0]["m2"]
    mean = msgs[0]["mean"]
    for m in msgs[1:]:
        n, mean, m2 = combine_moments(n, mean, m2, float(m["n"]), m["mean"], m["m2"])
    return np.maximum(m2, 0.0) / n


def center_gene_distances(x_k: np.ndarray, metric: str, stats: dict | None) -> dict:
    """Center-side round 2: the center's additive contribution ``D^(k)`` (condensed)."""
    if metric == "euclidean":
        return {"d": pdist(x_k.T, "sqeuclidean"), "n": int(x_k.shape[0])}
    if metric == "cityblock":
        return {"d": pdist(x_k.T, "cityblock"), "n": int(x_k.shape[0])}
    if metric == "cosine":
        y = x_k / stats["norm"]
    elif metric == "correlation":
        y = (x_k - stats["mean"]) / stats["cnorm"]
    else:
        raise ConfigError(f"unknown genewise metric {metric!r}", fix=f"use one of {GENE_METRICS}")
    return {"d": 0.5 * pdist(y.T, "sqeuclidean"), "n": int(x_k.shape[0])}


def server_gene_distances(messages: list[dict], metric: str) -> np.ndarray:
    """Server-side: sum the contributions (and take the square root for Euclidean)."""
    d = np.sum([m["d"] for m in messages], axis=0)
    return np.sqrt(d) if metric == "euclidean" else d


def genewise_clustering(
    blocks: list[np.ndarray],
    method: str,
    metric: str,
    ledger: Ledger | None = None,
    n_min: int = 1,
    policy: Policies = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Run Algorithm 3 on per-center sample blocks (same genes in every block).

    A center with fewer samples than its floor — ``n_min`` raised to its own
    ``nfilter_subset`` (``policy``: the centres' disclosure policies, default the configured
    ones) — abstains from both rounds: with two samples, a centre's moments and distance share
    give back both profiles (:func:`fedclust.privacy.attacks.genewise_two_samples`). The result
    then covers the other centers' samples only. Returns ``(Z, condensed distances)``.
    """
    check_method(method, metric, where="hac.genewise")
    led = ledger if ledger is not None else Ledger()
    proto = genewise_protocol(n_min)
    names = [f"center{k}" for k in range(len(blocks))]
    pols = {nm: policy_of(policy, nm, k) for k, nm in enumerate(names)}
    keep = []
    for nm, b in zip(names, blocks, strict=True):
        if b.shape[0] < floor_of(pols[nm], n_min):
            for r in (0, 1) if metric in ("cosine", "correlation") else (1,):
                abstain(led, nm, r, proto, "fewer samples than the centre's floor")
        else:
            keep.append((nm, b))
    if not keep:
        raise InputDataError(
            f"every center holds fewer samples than its floor (n_min = {n_min} or the centres' "
            "nfilter_subset): nothing can be shared",
            where="hac genewise",
            fix="lower n_min below the size of the largest center",
        )
    stats = None
    if metric in ("cosine", "correlation"):
        msgs = [centre_send(led, pols[nm], nm, len(b), center_gene_stats(b), 0, "gene stats",
                            proto) for nm, b in keep]  # fmt: skip
        stats = server_gene_stats(msgs)
        bad = stats["norm"] == 0 if metric == "cosine" else stats["constant"] > 0
        if np.any(bad):
            raise ConfigError(
                f"{int(bad.sum())} gene(s) constant (zero "
                f"{'norm' if metric == 'cosine' else 'variance'}), e.g. gene column "
                f"{int(np.flatnonzero(bad)[0])}",
                where="hac.genewise",
                fix="drop constant genes before genewise cosine/correlation clustering",
            )
        for nm, _ in keep:
            server_send(led, nm, stats, 0, "gene stats broadcast", proto)
    msgs = [
        centre_send(led, pols[nm], nm, len(b), center_gene_distances(b, metric, stats), 1,
                    "gene distances", proto)
        for nm, b in keep
    ]  # fmt: skip
    d = server_gene_distances(msgs, metric)
    return linkage(d, method=method), d


def pooled_gene_distances(x: np.ndarray, metric: str) -> np.ndarray:
    """Pooled reference: ``pdist`` over genes (columns) of all samples."""
    return pdist(np.asarray(x, dtype=float).T, metric)


__all__ = ["genewise_clustering", "pooled_gene_distances", "squareform"]
