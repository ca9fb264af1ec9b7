"""Cluster association (seed 002 §2.3, eq. 2), the association graph and its connected
components (§2.4, eq. 3), and the evaluation-only ideal graph / wrong associations (§5).

Nodes are keyed by (client index, local cluster id), never by a true class.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from fedclust.errors import ConfigError
from fedclust.metrics.assignment import hungarian_mapping

Node = tuple[int, int]
POLICIES = ("all", "first", "best")


def check_params(theta: float, alpha: float) -> None:
    if not 0.0 < float(theta) <= 1.0:
        raise ConfigError(
            f"association threshold θ = {theta} is outside (0, 1]",
            where="fedcref.association.theta",
            fix="θ compares a min-max normalised value: use 0 < θ ≤ 1 (paper 0.2) or 'calibrated'",
        )
    if not 0.0 < float(alpha) <= 100.0:
        raise ConfigError(
            f"percentile α = {alpha} is outside (0, 100]",
            where="fedcref.association.alpha",
            fix="use 0 < α ≤ 100 (paper 75)",
        )


def direction_statistic(e_own: np.ndarray, e_foreign: np.ndarray, alpha: float) -> float:
    """α-th percentile of Normalize_[0,1] |E_own − E_foreign| on one cluster (eq. 2, one side).

    A zero-range difference vector (identical errors, or one sample) normalises to all zeros:
    the foreign model reconstructs the cluster exactly as well as the own one, so the side
    passes (statistic 0). An empty cluster has no statistic (NaN: never associated).
    """
    e_own, e_foreign = np.asarray(e_own, float), np.asarray(e_foreign, float)
    if e_own.shape != e_foreign.shape:
        raise ValueError("error vectors differ in length")
    if len(e_own) == 0:
        return float("nan")
    d = np.abs(e_own - e_foreign)
    lo, hi = d.min(), d.max()
    if hi - lo <= 0:
        return 0.0
    return float(np.percentile((d - lo) / (hi - lo), alpha))


def passes(stat: float, theta: float, strict: bool = False) -> bool:
    """Pr{D_norm ≤ θ} ≥ α ⇔ pct_α(D_norm) ≤ θ (strict '<' as the authors' code)."""
    if not np.isfinite(stat):
        return False
    return bool(stat < theta) if strict else bool(stat <= theta)


def association_edges(
    nodes: Sequence[Node],
    stat: dict[tuple[Node, Node], float],
    theta: float,
    policy: str = "all",
    strict: bool = False,
) -> list[tuple[Node, Node]]:
    """Bidirectional links between clusters of different clients (Algorithm 1 lines 10–16).

    ``stat[(a, b)]`` is the statistic computed by a's client on a's cluster with b's model.
    A pair (a, b) qualifies when both directions pass. Policies for a cluster a of client i
    against the clusters of one other client j > i (in node order):
    ``all`` — every qualifying pair (paper); ``first`` — only the first qualifying b (authors'
    code); ``best`` — the qualifying b with the lowest max(stat_ab, stat_ba), ties → lowest b.
    """
    if policy not in POLICIES:
        raise ConfigError(
            f"unknown pair policy {policy!r}",
            where="fedcref.association.policy",
            fix=f"one of {POLICIES}",
        )
    nodes = sorted(nodes)
    by_client: dict[int, list[Node]] = {}
    for n in nodes:
        by_client.setdefault(n[0], []).append(n)
    cl = sorted(by_client)
    edges = []
    for ai, i in enumerate(cl):
        for j in cl[ai + 1 :]:
            for a in by_client[i]:
                ok = []
                for b in by_client[j]:
                    s1, s2 = stat.get((a, b), np.nan), stat.get((b, a), np.nan)
                    if passes(s1, theta, strict) and passes(s2, theta, strict):
                        ok.append((max(s1, s2), b))
                        if policy == "first":
                            break
                if not ok:
                    continue
                if policy == "best":
                    ok = [min(ok, key=lambda t: (t[0], t[1]))]
                edges += [(a, b) for _, b in ok]
    return edges


def components(
    nodes: Sequence[Node], edges: Sequence[tuple[Node, Node]]
) -> tuple[list[list[Node]], list[Node]]:
    """Connected components (scipy.sparse.csgraph): groups (≥ 2 nodes, eq. 3) ordered by their
    smallest node, and isolated nodes, sorted."""
    nodes = sorted(nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    if not nodes:
        return [], []
    r = [pos[a] for a, _ in edges]
    c = [pos[b] for _, b in edges]
    adj = coo_matrix((np.ones(len(r)), (r, c)), shape=(len(nodes), len(nodes)))
    _, lab = connected_components(adj, directed=False)
    comps: dict[int, list[Node]] = {}
    for n, lb in zip(nodes, lab, strict=True):
        comps.setdefault(int(lb), []).append(n)
    allc = sorted(comps.values(), key=lambda g: g[0])
    return [g for g in allc if len(g) >= 2], [g[0] for g in allc if len(g) == 1]


# ------------------------------------------------------------ evaluation only (uses labels)
def ideal_edges(nodes: Sequence[Node], node_class: dict[Node, int]) -> list[tuple[Node, Node]]:
    """The ideal graph: clusters of different clients linked iff their mapped classes match."""
    nodes = sorted(nodes)
    return [
        (a, b)
        for ia, a in enumerate(nodes)
        for b in nodes[ia + 1 :]
        if a[0] != b[0] and node_class.get(a, -1) == node_class.get(b, -2)
    ]


def wrong_links(edges: Sequence[tuple[Node, Node]], node_class: dict[Node, int]) -> int:
    """|W| (authors' code): links whose endpoints map to different true classes."""
    return int(sum(node_class.get(a, -1) != node_class.get(b, -2) for a, b in edges))


def wrong_clusters(groups: Sequence[Sequence[Node]], node_class: dict[Node, int]) -> int:
    """|W| (paper wording): clusters whose class differs from their group's majority class."""
    out = 0
    for g in groups:
        cls = [node_class.get(n, -1) for n in g]
        vals, cnt = np.unique(cls, return_counts=True)
        out += len(g) - int(cnt.max())
    return out


def node_classes(labels: list[np.ndarray], ys: list[np.ndarray]) -> dict[Node, int]:
    """Evaluation only: each local cluster's Hungarian-mapped true class."""
    out: dict[Node, int] = {}
    for i, (lab, y) in enumerate(zip(labels, ys, strict=True)):
        for q, c in hungarian_mapping(lab, y).items():
            out[(i, int(q))] = int(c)
    return out
