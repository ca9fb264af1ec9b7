"""A centre of federated HAC on the transport seam (:func:`fedclust.federation.federate`).

:class:`HacCentre` holds one centre's block of samples and nothing else, with the settings of
its own configuration: its disclosure policy (``disclosure``: default the configured one, or a
site's own file on a deployment), the floor it raises ``n_min`` to, its release log (issue 22)
and the secret material of its leaf relabelling (``seed``, ``index``). The server reaches it only
through ``proxy.call``; every answer leaves under the protocol the centre itself declares
(``protocols``), checked by the guard against its policy with its true sample count.

Simultaneous sharing (spec §5.1, thesis §3.3.2): ``cut`` answers the server's request with the
recursive cut's centroids, sizes and partial dendrogram (:func:`.simultaneous.center_simultaneous`),
leaves relabelled by a permutation that never leaves the centre; :meth:`HacCentre.leaf_order`
maps the relabelled leaves of the global tree back to the centre's own rows (a centre-side step).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from ..errors import ConfigError
from ..federation import Abstain
from ..federation.disclosure import DisclosurePolicy
from ..federation.guard import centre_policy
from ..privacy.release_log import ReleaseLog
from ..seeds import rng as seeded_rng
from .boundary import (
    PERTURBED,
    SKETCH,
    floor_of,
    genewise_protocol,
    gradual_protocols,
    simultaneous_protocol,
)
from .gradual_centre import GradualSide
from .pooled import EUCLIDEAN_ONLY, centred_rows
from .projection import normalise_rows, orthogonal_transform, project_own, run_seed, sketch_kind

#: why a centre sends nothing (no numbers: a count below a floor is itself a disclosure)
NO_CUT = "fewer samples than the centre's floor, or every cut refused by its release log"
TOO_FEW = "fewer samples than the centre's floor"


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


def sketch_rows(x_k: np.ndarray, metric: str) -> np.ndarray:
    """Center-side preprocessing of Algorithm 5: cosine / correlation sketches project locally
    normalised (and, for correlation, row-centred) samples."""
    x_k = np.asarray(x_k, dtype=float)
    if metric in ("cosine", "correlation"):
        x_k = normalise_rows(x_k, centre=metric == "correlation")
    return x_k


def center_sketch(
    x_k: np.ndarray,
    metric: str,
    k: int,
    seed: int,
    d: int,
    kind: str | None = None,
    dtype: str = "float32",
    density: float | None = None,
    threads: int = 1,
) -> dict:
    """Center-side (Alg. 5): normalise locally if needed, project with the shared-seed Q the
    centre draws itself (streamed in row blocks, kept per process:
    :func:`~fedclust.hac.projection.project_own`)."""
    x_k = sketch_rows(x_k, metric)
    if x_k.shape[1] != d:
        raise ValueError(f"center holds {x_k.shape[1]} features, the shared matrix has d={d}")
    law = sketch_kind(metric, kind)
    return {"y": project_own(x_k, k, law, seed, dtype, density, threads)}


def center_perturb(x_k: np.ndarray, seed: int, p: int | None = None) -> dict:
    """Center-side (Alg. 2): ``X Q`` with a shared exactly orthogonal Q (``p ≥ d`` hides d),
    applied as random signs × orthonormal DCT × permutation rounds, never formed densely."""
    return {"y": orthogonal_transform(x_k, seed, p)}


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


class HacCentre(GradualSide):
    """One centre of federated HAC (module docstring). ``n_min``, ``method`` and ``metric``:
    the run's settings (the floor is ``n_min`` raised to the centre's own ``nfilter_subset``;
    genewise: ``metric`` is the gene metric, ``method`` unused); ``log``: the centre's release
    log of this data matrix (kept across runs by the caller); ``seed`` / ``index``: draw the
    centre's leaf relabelling."""

    def __init__(
        self,
        cid: str,
        x: Any,
        *,
        n_min: int,
        method: str = "average",
        metric: str = "euclidean",
        index: int = 0,
        seed: int = 0,
        disclosure: DisclosurePolicy | None = None,
        log: ReleaseLog | None = None,
        d_min: float = 0.0,
        average_delta: str = "stored",
        threads: int = 1,
    ):
        self.cid = str(cid)
        self.x = np.asarray(x, dtype=float)
        self.n_min, self.method, self.metric = int(n_min), str(method), str(metric)
        self.index, self.seed, self.log = int(index), int(seed), log
        self.d_min, self.average_delta = float(d_min), str(average_delta)
        self.threads = int(threads)
        if disclosure is not None:
            self.disclosure = disclosure
        genewise = genewise_protocol(self.n_min)
        self.protocols = {"cut": simultaneous_protocol(self.n_min), "gene_moments": genewise,
                          "gene_stats": genewise, "gene_distances": genewise}  # fmt: skip
        self.protocols["perturbed"] = PERTURBED
        self.protocols["sketch"] = SKETCH
        gradual = gradual_protocols(self.n_min)
        self.protocols.update({
            "gradual_setup": gradual["setup"], "gradual_samples": gradual["samples"],
            "gradual_candidate": gradual["candidate"], "gradual_publish": gradual["centroid"],
            "gradual_absorb": gradual["distances"], "gradual_row": gradual["distances"],
            "gradual_correction": gradual["distances"], "gradual_view": gradual["distances"],
            "gradual_finish": gradual["finish"],
        })  # fmt: skip

    @property
    def n_samples(self) -> int:
        return int(self.x.shape[0])

    @property
    def floor(self) -> int:
        """The fewest samples one released centroid summarises: n_min raised to the centre's
        own floor."""
        return floor_of(centre_policy(self), self.n_min)

    def _relabel(self) -> np.ndarray:
        """The centre's fresh leaf relabelling of this run (never sent)."""
        label = ("hac simultaneous relabel", self.method, self.n_min, self.index)
        return seeded_rng(self.seed, *label).permutation(self.n_samples)

    def cut(self, parameters: Any, config: dict) -> dict | Abstain:
        """Simultaneous sharing's one message: the recursive cut at the centre's floor
        (coarsened while its release log refuses a cluster's sum), or an abstention."""
        floor = self.floor
        if self.n_samples < floor:
            return Abstain(NO_CUT)
        x, metric = centred_rows(self.x, self.metric)
        msg = center_simultaneous(x, self.method, metric, max(self.n_min, floor), self.log,
                                  self._relabel())  # fmt: skip
        return Abstain(NO_CUT) if msg is None else msg

    def leaf_order(self) -> np.ndarray:
        """Centre-side: the centre's own row of each relabelled leaf id it sent (``back[v]``)."""
        return np.argsort(self._relabel())

    # ---- orthogonal perturbation (Algorithm 2): its rows times the centres' shared Q
    def perturbed(self, parameters: Any, config: dict) -> dict:
        """``X Q`` with the exactly orthogonal Q of the centres' shared ``seed`` (never sent;
        ``p`` in the request: Q's padded width)."""
        p = config.get("p")
        return center_perturb(self.x, self.seed, None if p is None else int(p))

    # ---- random projections (Algorithm 5): its rows times the public Q of the shared seed
    def sketch(self, parameters: Any, config: dict) -> dict:
        """``X Q`` (:func:`center_sketch`) with the Q the centre draws itself: the request names
        the sketch (``k``, ``kind``, ``density``, ``dtype``) and the ``run``; the seed is
        :func:`~fedclust.hac.projection.run_seed` of the sites' shared ``seed`` (the centre's
        own ``seed`` itself when the request names no run)."""
        k, run = int(config["k"]), config.get("run")
        seed = self.seed if run is None else run_seed(self.seed, self.metric, k, int(run))
        density = config.get("density")
        return center_sketch(self.x, self.metric, k, seed, self.x.shape[1], config.get("kind"),
                             str(config.get("dtype", "float32")),
                             None if density is None else float(density), self.threads)  # fmt: skip

    # ---- genewise clustering (Algorithm 3): the centre's moments and distance share
    def gene_moments(self, parameters: Any, config: dict) -> dict | Abstain:
        """The gene selection's per-gene count, mean and centred sum of squares (issue 23)."""
        if self.n_samples < self.floor:
            return Abstain(TOO_FEW)
        stats = center_gene_stats(self.x)
        return {key: stats[key] for key in ("n", "mean", "m2")}

    def gene_stats(self, parameters: Any, config: dict) -> dict | Abstain:
        """Round 0 (cosine / correlation): :func:`center_gene_stats`."""
        return Abstain(TOO_FEW) if self.n_samples < self.floor else center_gene_stats(self.x)

    def gene_distances(self, parameters: Any, config: dict) -> dict | Abstain:
        """Round 1: the centre's additive share of the gene × gene distances; the request
        carries the global gene statistics for cosine / correlation."""
        if self.n_samples < self.floor:
            return Abstain(TOO_FEW)
        stats = dict(config) if self.metric in ("cosine", "correlation") else None
        return center_gene_distances(self.x, self.metric, stats)
