"""Centroid-based samplewise clustering with simultaneous sharing (spec §5.1, thesis §3.3.2).

1. each center clusters its samples locally (same linkage / metric, scipy);
2. the local tree is cut recursively: from the root, descend into a node's children only while
   both hold ≥ n_min samples — the smallest clusters of size ≥ n_min (Fig. 3.4 left);
3. the center sends their centroids, sizes and partial dendrograms (local merge heights);
4. the server agglomerates the centroids, each weighted by its size, and the partial dendrograms
   are re-inserted under them. Returns a scipy-format Z over all samples (stacked center order).

Disclosure (issue 22): every centroid summarises at least the centre's floor (``n_min``, raised
to the centre's ``nfilter_subset``); the partial dendrograms' heights are distances between the
centre's patients, sent only when the centre opts in (``hac.simultaneous`` in
``disclosure.default.allow_per_sample``). Leaf ids in the dendrograms are a fresh random
relabelling per run, so runs cannot be aligned sample by sample; with a :class:`ReleaseLog` the
centre also refuses cuts whose sums, together with what it released before (other linkages,
other n_min), would isolate a sample, and coarsens the cut (doubling its n_min) until they do not.
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import cdist, pdist

from ..errors import InputDataError
from ..federation import Ledger
from ..privacy.release_log import ReleaseLog
from ..seeds import rng as seeded_rng
from .boundary import (
    PER_SAMPLE,
    Policies,
    abstain,
    centre_send,
    floor_of,
    policy_of,
    require,
    simultaneous_protocol,
)
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


def _leaves(z: np.ndarray, n: int, node: int) -> list[int]:
    if node < n:
        return [node]
    return [int(v) for r in _subtree_rows(z, n, node) for v in z[r, :2] if v < n]


def center_simultaneous(
    x_k: np.ndarray,
    method: str,
    metric: str,
    n_min: int,
    log: ReleaseLog | None = None,
    relabel: np.ndarray | None = None,
) -> dict | None:
    """Center-side: local tree, recursive cut, centroids + sizes + partial dendrograms.

    Partial dendrogram rows are ``[a, b, height, size, node]`` in anonymous local ids (leaf ``v``
    is sent as ``relabel[v]``, a permutation of ``0 … n−1``; identity when None); ``roots`` is each
    cut cluster's local node id. ``log``: the centre's release log; the cut is coarsened (n_min
    doubled) until the log allows every cluster's sum; None when it never does (the centre
    abstains).
    """
    n = x_k.shape[0]
    if n >= 2:
        if method in EUCLIDEAN_ONLY:
            z = linkage(x_k, method=method)
        else:
            z = linkage(pdist(x_k, metric), method=method)
    else:
        z = np.zeros((0, 4))
    m = int(n_min)
    while True:
        nodes = recursive_cut(z, n, m) if n >= 2 else [0]
        sets = [_leaves(z, n, node) for node in nodes]
        if log is None or log.release_all(sets):
            break
        if m >= n:
            return None
        m = min(2 * m, n)
    cents, sizes, rows = [], [], []
    for node, leaves in zip(nodes, sets, strict=True):
        cents.append(x_k[leaves].mean(axis=0))
        sizes.append(len(leaves))
        rows += _subtree_rows(z, n, node)
    rows = sorted(rows)
    dend = (
        np.column_stack([z[rows], n + np.asarray(rows, dtype=float)]) if rows else np.zeros((0, 5))
    )
    if relabel is not None and len(dend):
        for c in (0, 1):
            leaf = dend[:, c] < n
            dend[leaf, c] = relabel[dend[leaf, c].astype(int)]
    roots = np.asarray(nodes, dtype=np.int64)
    if relabel is not None:
        roots = np.where(roots < n, relabel[np.minimum(roots, n - 1)], roots)
    return {
        "centroids": np.asarray(cents),
        "sizes": np.asarray(sizes, dtype=float),
        "dendrogram": dend,
        "roots": roots,
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
    policy: Policies = None,
    logs: dict[int, ReleaseLog] | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Run simultaneous sharing on per-center blocks.

    A center with fewer samples than its floor cannot form one cluster: it abstains (recorded)
    and its samples are left out of the tree. ``policy``: the centres' disclosure policies
    (default: configured); an ``n_min`` below a centre's floor, or a centre that has not opted in
    to the per-sample dendrogram heights, is refused (:class:`ConfigError`). ``logs``: release
    logs per centre index (module docstring); ``seed`` draws the per-run leaf relabelling.
    Returns ``(Z over the included stacked samples, included mask over all stacked samples)``.
    """
    check_method(method, metric, where="hac.simultaneous")
    if metric == "correlation":
        blocks = [b - b.mean(axis=1, keepdims=True) for b in blocks]
        metric = "cosine"
    names = [f"center{k}" for k in range(len(blocks))]
    pols = [policy_of(policy, nm, k) for k, nm in enumerate(names)]
    require(pols, n_min, PER_SAMPLE["simultaneous"], "hac.simultaneous.n_min")
    floors = [floor_of(p, n_min) for p in pols]
    if max(b.shape[0] - f for b, f in zip(blocks, floors, strict=True)) < 0:
        raise InputDataError(
            f"no center holds n_min = {n_min} samples", where="hac.simultaneous", fix="lower n_min"
        )
    led = ledger if ledger is not None else Ledger()
    proto = simultaneous_protocol(n_min)
    msgs, included, perms = [], [], []
    for k, b in enumerate(blocks):
        msg = None
        if b.shape[0] >= floors[k]:
            perm = seeded_rng(seed, "hac simultaneous relabel", method, n_min, k).permutation(
                b.shape[0]
            )
            msg = center_simultaneous(b, method, metric, max(n_min, floors[k]),
                                      None if logs is None else logs.get(k), perm)  # fmt: skip
        if msg is None:
            abstain(led, names[k], 0, proto, "fewer samples than the centre's floor, or "
                    "every cut refused by its release log")  # fmt: skip
            included.append(np.zeros(b.shape[0], dtype=bool))
            continue
        included.append(np.ones(b.shape[0], dtype=bool))
        msgs.append(centre_send(led, pols[k], names[k], b.shape[0], msg, 0, "cut", proto))
        perms.append(perm)
    z = server_simultaneous(msgs, method, metric)
    # each centre maps its relabelled leaves of the global tree back to its own order
    back = np.concatenate(
        [
            o + np.argsort(p)
            for o, p in zip(np.cumsum([0] + [len(p) for p in perms[:-1]]), perms, strict=True)
        ]
    )
    return _relabel_leaves(z, back), np.concatenate(included)


def _relabel_leaves(z: np.ndarray, back: np.ndarray) -> np.ndarray:
    """``z`` with leaf id ``v`` renamed ``back[v]`` (rows keep ``a < b``)."""
    z = np.array(z, dtype=float)
    n = len(back)
    for c in (0, 1):
        leaf = z[:, c] < n
        z[leaf, c] = back[z[leaf, c].astype(int)]
    z[:, :2] = np.sort(z[:, :2], axis=1)
    return z


def simultaneous_sharing(
    blocks: list[np.ndarray],
    n_min: int,
    method: str,
    metric: str = "euclidean",
    ledger: Ledger | None = None,
    policy: Policies = None,
) -> np.ndarray:
    """Simultaneous sharing; Z over the stacked samples of the centers that took part."""
    return simultaneous_run(blocks, n_min, method, metric, ledger, policy)[0]
