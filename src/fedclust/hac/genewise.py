"""Federated genewise clustering — Algorithm 3 with the spec's corrections (spec §4, §0.4).

Genes are the objects, samples (spread over centers) the features. Each center sends an additive
contribution to the gene × gene distance matrix; the server sums and clusters. For cosine and
correlation an extra aggregation round provides the *global* gene norms (and means); for ℓp the
server takes the p-th root of the summed contributions. The result equals pooled ``pdist``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist, squareform

from ..errors import ConfigError, InputDataError
from ..federation import INPROCESS, Ledger, Protocol, Transport, call_all, federate
from ..stats import combine_moments
from .boundary import Policies, genewise_protocol, policy_of
from .centre import (  # noqa: F401  (the centre side, re-exported: callers import it from here)
    GENE_METRICS,
    HacCentre,
    center_gene_distances,
    center_gene_stats,
)
from .pooled import check_method

#: the server's request of a round that carries nothing (the centre's settings are its own)
REQUEST = Protocol("hac.genewise.request", {})


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


def _genewise_centres(blocks: list[np.ndarray], n_min: int, policy: Policies, metric: str,
                      where: str) -> list[HacCentre]:  # fmt: skip
    """One :class:`HacCentre` per block (``center<k>``, its policy); refuses at once a run in
    which every centre is below its floor (nothing could be shared)."""
    centres = [HacCentre(f"center{k}", b, n_min=n_min, metric=metric, index=k,
                         disclosure=policy_of(policy, f"center{k}", k))
               for k, b in enumerate(blocks)]  # fmt: skip
    if all(c.n_samples < c.floor for c in centres):
        raise InputDataError(
            f"every center holds fewer samples than its floor (n_min = {n_min} or the centres' "
            f"nfilter_subset): {where}",
            where="hac genewise" + (" gene selection" if "variances" in where else ""),
            fix="lower n_min below the size of the largest center",
        )
    return centres


def _answers(msgs: list) -> list[dict]:
    got = [m for m in msgs if m is not None]
    if not got:
        raise InputDataError("every centre abstained", where="hac genewise",
                             fix="lower n_min below the size of the largest center")  # fmt: skip
    return got


def merged_variances(messages: list[dict]) -> np.ndarray:
    """Server-side: per-gene variance (ddof 0) of the union from the centres' moments."""
    n, mean, m2 = float(messages[0]["n"]), messages[0]["mean"], messages[0]["m2"]
    for m in messages[1:]:
        n, mean, m2 = combine_moments(n, mean, m2, float(m["n"]), m["mean"], m["m2"])
    return np.maximum(m2, 0.0) / n


def gene_variances(blocks: list[np.ndarray], n_min: int = 1, ledger: Ledger | None = None,
                   policy: Policies = None, transport: Transport = INPROCESS
                   ) -> np.ndarray:  # fmt: skip
    """Per-gene variance (ddof 0) of the union of the centers' samples from their round-1
    moments (``gene_moments`` of each :class:`HacCentre`, Chan et al. merge): the gene
    selection of the genewise and perturbation baselines (issue 23), equal to the pooled
    ``var`` up to rounding. Centers below their floor (``n_min`` raised to their own
    ``nfilter_subset``, issue 22) abstain."""
    centres = _genewise_centres(blocks, n_min, policy, "euclidean", "no gene variances")
    proto = genewise_protocol(n_min)

    def server(proxies: list[Any]) -> np.ndarray:
        return merged_variances(
            _answers(
                call_all(proxies, "gene_moments", {}, 0, "gene selection moments", proto, REQUEST)
            )
        )

    return federate(centres, server, ledger=ledger, transport=transport)


def server_gene_distances(messages: list[dict], metric: str) -> np.ndarray:
    """Server-side: sum the contributions (and take the square root for Euclidean)."""
    d = np.sum([m["d"] for m in messages], axis=0)
    return np.sqrt(d) if metric == "euclidean" else d


def genewise_server(metric: str, n_min: int = 1) -> Callable[[list[Any]], np.ndarray]:
    """The server function of Algorithm 3 over client proxies: for cosine / correlation round
    0 asks every centre for its gene statistics (:func:`server_gene_stats` merges them), round 1
    sends them back with the request for each centre's distance share and sums the shares
    (:func:`server_gene_distances`). Returns the condensed gene distances."""
    proto = genewise_protocol(n_min)

    def server(proxies: list[Any]) -> np.ndarray:
        stats = None
        if metric in ("cosine", "correlation"):
            stats = server_gene_stats(
                _answers(call_all(proxies, "gene_stats", {}, 0, "gene stats", proto, REQUEST))
            )
            bad = stats["norm"] == 0 if metric == "cosine" else stats["constant"] > 0
            if np.any(bad):
                raise ConfigError(
                    f"{int(bad.sum())} gene(s) constant (zero "
                    f"{'norm' if metric == 'cosine' else 'variance'}), e.g. gene column "
                    f"{int(np.flatnonzero(bad)[0])}",
                    where="hac.genewise",
                    fix="drop constant genes before genewise cosine/correlation clustering",
                )
        request, down = ({}, REQUEST) if stats is None else (stats, proto)
        msgs = call_all(proxies, "gene_distances", request, 1, "gene distances", proto, down)
        return server_gene_distances(_answers(msgs), metric)

    return server


def genewise_clustering(
    blocks: list[np.ndarray],
    method: str,
    metric: str,
    ledger: Ledger | None = None,
    n_min: int = 1,
    policy: Policies = None,
    transport: Transport = INPROCESS,
) -> tuple[np.ndarray, np.ndarray]:
    """Run Algorithm 3 on per-center sample blocks (same genes in every block): one
    :class:`HacCentre` per block, :func:`genewise_server` over ``transport``.

    A center with fewer samples than its floor — ``n_min`` raised to its own
    ``nfilter_subset`` (``policy``: the centres' disclosure policies, default the configured
    ones) — abstains from both rounds: with two samples, a centre's moments and distance share
    give back both profiles (:func:`fedclust.privacy.attacks.genewise_two_samples`). The result
    then covers the other centers' samples only. Returns ``(Z, condensed distances)``.
    """
    check_method(method, metric, where="hac.genewise")
    if metric not in GENE_METRICS:
        raise ConfigError(f"unknown genewise metric {metric!r}", fix=f"use one of {GENE_METRICS}")
    centres = _genewise_centres(blocks, n_min, policy, metric, "nothing can be shared")
    d = federate(centres, genewise_server(metric, n_min), ledger=ledger, transport=transport)
    return linkage(d, method=method), d


def pooled_gene_distances(x: np.ndarray, metric: str) -> np.ndarray:
    """Pooled reference: ``pdist`` over genes (columns) of all samples."""
    return pdist(np.asarray(x, dtype=float).T, metric)


__all__ = ["genewise_clustering", "pooled_gene_distances", "squareform"]
