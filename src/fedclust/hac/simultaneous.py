"""Centroid-based samplewise clustering with simultaneous sharing (spec §5.1, thesis §3.3.2).

1. each center clusters its samples locally (same linkage / metric, scipy);
2. the local tree is cut recursively: from the root, descend into a node's children only while
   both hold ≥ n_min samples — the smallest clusters of size ≥ n_min (Fig. 3.4 left);
3. the center sends their centroids, sizes and partial dendrograms (local merge heights);
4. the server agglomerates the centroids, each weighted by its size, and the partial dendrograms
   are re-inserted under them. Returns a scipy-format Z over all samples (stacked center order).
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import cdist, pdist

from ..errors import InputDataError
from ..federation import Ledger
from .boundary import SERVER, abstain, send, simultaneous_protocol
from .pooled import EUCLIDEAN_ONLY, check_method, weighted_linkage


def recursive_cut(z: np.ndarray, n: int, n_min: int) -> list[int]:
    """Node ids of the smallest clusters of size ≥ n_min found by descending from the root."""
    if n == 1:
        return [0]
    size = np.concatenate([np.ones(n), z[:, 3]])
    out, stack = [], [2 * n - 2]
    while stack:
        node = stack.pop()
        if node < n:
            out.append(node)
            continue
        a, b = int(z[node - n, 0]), int(z[node - n, 1])
        if size[a] >= n_min and size[b] >= n_min:
            stack += [a, b]
        else:
            out.append(node)
    return sorted(out)


def _subtree_rows(z: np.ndarray, n: int, node: int) -> list[int]:
    rows, stack = [], [node]
    while stack:
        v = stack.pop()
        if v >= n:
            rows.append(v - n)
            stack += [int(z[v - n, 0]), int(z[v - n, 1])]
    return sorted(rows)


def center_simultaneous(x_k: np.ndarray, method: str, metric: str, n_min: int) -> dict:
    """Center-side: local tree, recursive cut, centroids + sizes + partial dendrograms.

    Partial dendrogram rows are ``[a, b, height, size, node]`` in anonymous local ids; ``roots``
    is each cut cluster's local node id.
    """
    n = x_k.shape[0]
    if n >= 2:
        if method in EUCLIDEAN_ONLY:
            z = linkage(x_k, method=method)
        else:
            z = linkage(pdist(x_k, metric), method=method)
        nodes = recursive_cut(z, n, n_min)
    else:
        z, nodes = np.zeros((0, 4)), [0]
    cents, sizes, rows = [], [], []
    for node in nodes:
        sub = _subtree_rows(z, n, node)
        leaves = [node] if node < n else [int(v) for r in sub for v in z[r, :2] if v < n]
        cents.append(x_k[leaves].mean(axis=0))
        sizes.append(len(leaves))
        rows += sub
    rows = sorted(rows)
    dend = (
        np.column_stack([z[rows], n + np.asarray(rows, dtype=float)]) if rows else np.zeros((0, 5))
    )
    return {
        "centroids": np.asarray(cents),
        "sizes": np.asarray(sizes, dtype=float),
        "dendrogram": dend,
        "roots": np.asarray(nodes, dtype=float),
        "n": n,
    }


def server_simultaneous(messages: list[dict], method: str, metric: str) -> np.ndarray:
    """Server-side: weighted agglomeration of all centroids + re-inserted partial dendrograms.

    Centroid distances follow the linkage for |C| identical points at the centroid (Ward:
    ``sqrt(2|A||B|/(|A|+|B|)) ‖c_A − c_B‖``). Output rows: local merges, then global ones.
    """
    cents = np.vstack([m["centroids"] for m in messages])
    sizes = np.concatenate([m["sizes"] for m in messages])
    d = cdist(cents, cents, "euclidean" if method in EUCLIDEAN_ONLY else metric)
    if method == "ward":
        d = d * np.sqrt(2 * np.outer(sizes, sizes) / np.add.outer(sizes, sizes))
    zg = weighted_linkage(d, sizes, method)
    n_total = sum(int(m["n"]) for m in messages)
    rows, ids = [], []
    offset, next_id = 0, n_total
    for m in messages:
        n = int(m["n"])
        local = {v: offset + v for v in range(n)}
        for a, b, h, sz, node in m["dendrogram"]:
            ga, gb = local[int(a)], local[int(b)]
            rows.append([min(ga, gb), max(ga, gb), h, sz])
            local[int(node)] = next_id
            next_id += 1
        ids += [local[int(r)] for r in m["roots"]]
        offset += n
    for a, b, h, sz in zg:
        ga, gb = ids[int(a)], ids[int(b)]
        rows.append([min(ga, gb), max(ga, gb), h, sz])
        ids.append(next_id)
        next_id += 1
    return np.asarray(rows, dtype=float)


def simultaneous_run(
    blocks: list[np.ndarray],
    n_min: int,
    method: str,
    metric: str = "euclidean",
    ledger: Ledger | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Run simultaneous sharing on per-center blocks.

    A center with fewer than ``n_min`` samples cannot form one cluster of ``n_min`` samples: it
    abstains (recorded in the ledger) and its samples are left out of the tree; the ledger
    refuses any centroid over fewer than ``n_min`` samples (protocol ``hac.simultaneous``).
    Returns ``(Z over the included stacked samples, included mask over all stacked samples)``.
    """
    check_method(method, metric, where="hac.simultaneous")
    if metric == "correlation":
        blocks = [b - b.mean(axis=1, keepdims=True) for b in blocks]
        metric = "cosine"
    if max(b.shape[0] for b in blocks) < n_min:
        raise InputDataError(
            f"no center holds n_min = {n_min} samples", where="hac.simultaneous", fix="lower n_min"
        )
    led = ledger if ledger is not None else Ledger()
    proto = simultaneous_protocol(n_min)
    msgs, included = [], []
    for k, b in enumerate(blocks):
        ok = b.shape[0] >= n_min
        included.append(np.full(b.shape[0], ok))
        if not ok:
            abstain(led, f"center{k}", 0, proto, f"{b.shape[0]} sample(s) < n_min = {n_min}")
            continue
        msg = center_simultaneous(b, method, metric, n_min)
        msgs.append(send(led, f"center{k}", SERVER, msg, 0, "cut", proto))
    return server_simultaneous(msgs, method, metric), np.concatenate(included)


def simultaneous_sharing(
    blocks: list[np.ndarray],
    n_min: int,
    method: str,
    metric: str = "euclidean",
    ledger: Ledger | None = None,
) -> np.ndarray:
    """Simultaneous sharing; Z over the stacked samples of the centers that took part."""
    return simultaneous_run(blocks, n_min, method, metric, ledger)[0]
