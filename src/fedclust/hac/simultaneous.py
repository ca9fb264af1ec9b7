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

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from scipy.spatial.distance import cdist

from ..errors import InputDataError
from ..federation import INPROCESS, Ledger, Protocol, Transport, call_all, federate
from ..privacy.release_log import ReleaseLog
from .boundary import PER_SAMPLE, Policies, floor_of, policy_of, require, simultaneous_protocol
from .centre import (  # noqa: F401  (the centre side, re-exported: callers import it from here)
    HacCentre,
    center_simultaneous,
    centred_rows,
    recursive_cut,
)
from .pooled import EUCLIDEAN_ONLY, check_method, weighted_linkage

#: the server's request for a centre's cut: it carries nothing (the centre's settings are its own)
CUT_REQUEST = Protocol("hac.simultaneous.request", {})


class Federated(NamedTuple):
    """What the server of simultaneous sharing ends with: the global tree over the
    participating centres' relabelled leaves (stacked in centre order) and their ids."""

    z: np.ndarray
    centres: list[str]


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


def simultaneous_server(n_min: int, method: str, metric: str = "euclidean"
                        ) -> Callable[[list[Any]], Federated]:  # fmt: skip
    """The server function of simultaneous sharing over client proxies: one ``cut`` request
    to every centre (one round), the answers' centroids agglomerated
    (:func:`server_simultaneous`). Centres that abstain are left out; none left is an error."""
    proto = simultaneous_protocol(n_min)
    metric = "cosine" if metric == "correlation" else metric  # the centres centre their rows

    def server(proxies: list[Any]) -> Federated:
        msgs = call_all(proxies, "cut", {}, 0, "cut", proto, CUT_REQUEST)
        took = [(p.cid, m) for p, m in zip(proxies, msgs, strict=True) if m is not None]
        if not took:
            raise InputDataError("every centre abstained from simultaneous sharing",
                                 where="hac.simultaneous", fix="lower n_min")  # fmt: skip
        return Federated(server_simultaneous([m for _, m in took], method, metric),
                         [cid for cid, _ in took])  # fmt: skip

    return server


def simultaneous_run(
    blocks: list[np.ndarray],
    n_min: int,
    method: str,
    metric: str = "euclidean",
    ledger: Ledger | None = None,
    policy: Policies = None,
    logs: dict[int, ReleaseLog] | None = None,
    seed: int = 0,
    transport: Transport = INPROCESS,
) -> tuple[np.ndarray, np.ndarray]:
    """Run simultaneous sharing on per-center blocks: one :class:`HacCentre` per block, the
    server function :func:`simultaneous_server` over ``transport`` (:func:`federate`).

    A center with fewer samples than its floor cannot form one cluster: it abstains (recorded)
    and its samples are left out of the tree. ``policy``: the centres' disclosure policies
    (default: configured); an ``n_min`` below a centre's floor, or a centre that has not opted in
    to the per-sample dendrogram heights, is refused (:class:`ConfigError`). ``logs``: release
    logs per centre index (module docstring); ``seed`` draws the per-run leaf relabelling.
    Returns ``(Z over the included stacked samples, included mask over all stacked samples)``.
    """
    check_method(method, metric, where="hac.simultaneous")
    names = [f"center{k}" for k in range(len(blocks))]
    pols = [policy_of(policy, nm, k) for k, nm in enumerate(names)]
    require(pols, n_min, PER_SAMPLE["simultaneous"], "hac.simultaneous.n_min")
    floors = [floor_of(p, n_min) for p in pols]
    if max(b.shape[0] - f for b, f in zip(blocks, floors, strict=True)) < 0:
        raise InputDataError(
            f"no center holds n_min = {n_min} samples", where="hac.simultaneous", fix="lower n_min"
        )
    centres = [
        HacCentre(nm, b, n_min=n_min, method=method, metric=metric, index=k, seed=seed,
                  disclosure=pols[k], log=None if logs is None else logs.get(k))
        for k, (nm, b) in enumerate(zip(names, blocks, strict=True))
    ]  # fmt: skip
    res = federate(centres, simultaneous_server(n_min, method, metric), ledger=ledger,
                   transport=transport)  # fmt: skip
    took = set(res.centres)
    # each centre maps its relabelled leaves of the global tree back to its own order
    back, offset = [], 0
    for c in centres:
        if c.cid in took:
            back.append(offset + c.leaf_order())
            offset += c.n_samples
    included = [np.full(c.n_samples, c.cid in took) for c in centres]
    return _relabel_leaves(res.z, np.concatenate(back)), np.concatenate(included)


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
