"""The centres of the stage's own protocols (:mod:`.protocols`): each holds only its rows (and,
for Kaplan–Meier, its patients' follow-up), its public clipping bounds, and its own noise level
for the releases it privatises itself. Their privacy settings require secure aggregation for
the summing protocols (``privacy``), so a per-centre sum never reaches the server in clear.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.cluster.hierarchy import linkage

from fedclust.federation import Abstain, PrivacySettings
from fedclust.federation.dp import clip_rows, cluster_stats
from fedclust.seeds import rng

from . import protocols as P

#: the centres' own settings: summing protocols only under secure aggregation
SECURE_ONLY = PrivacySettings(secure_aggregation=True)


def cut_clusters(x: np.ndarray, n_min: int, method: str = "ward") -> np.ndarray:
    """Local HAC and the recursive cut of simultaneous sharing (seed 001 §3.3.2; as
    :func:`fedclust.hac.simultaneous.recursive_cut`): from the root, descend while both
    children hold ≥ ``n_min`` samples. Returns each sample's cut cluster (0 … m−1)."""
    n = x.shape[0]
    if n < 2:
        return np.zeros(n, dtype=int)
    z = linkage(x, method=method)
    size = np.concatenate([np.ones(n), z[:, 3]])
    labels = np.zeros(n, dtype=int)
    stack, nxt = [2 * n - 2], 0
    while stack:
        node = stack.pop()
        if node >= n:
            a, b = int(z[node - n, 0]), int(z[node - n, 1])
            if size[a] >= n_min and size[b] >= n_min:
                stack += [a, b]
                continue
        leaves, todo = [], [node]
        while todo:
            v = todo.pop()
            if v < n:
                leaves.append(v)
            else:
                todo += [int(z[v - n, 0]), int(z[v - n, 1])]
        labels[leaves] = nxt
        nxt += 1
    return labels


class Centre:
    """One centre (module docstring). ``bound``: L2 bound of a (centred) row in a release;
    ``raw_bound``: of a raw row (the centring mean); ``noise``: the noise multiplier of the
    releases the centre privatises itself (0: none); ``seed``: its own noise generator."""

    protocols = {
        "mean_stats": P.MEAN_STATS,
        "lloyd_stats": P.LLOYD_STATS,
        "cluster_release": P.CLUSTER_RELEASE,
        "km_counts": P.KM_COUNTS,
    }

    def __init__(
        self,
        cid: str,
        x: np.ndarray | None = None,
        t: np.ndarray | None = None,
        e: np.ndarray | None = None,
        bound: float = 1.0,
        raw_bound: float | None = None,
        noise: float = 0.0,
        seed: int = 0,
        linkage_method: str = "ward",
        privacy: PrivacySettings = SECURE_ONLY,
    ) -> None:
        self.cid = str(cid)
        self._x = None if x is None else np.asarray(x, dtype=np.float64)
        self._t = None if t is None else np.asarray(t, dtype=np.float64)
        self._e = None if e is None else np.asarray(e).astype(bool)
        self.bound, self.raw_bound = float(bound), float(raw_bound or bound)
        self.noise = float(noise)
        self.linkage_method = linkage_method
        self.privacy = privacy
        self._rng = rng(seed, "privacy_utility", "centre", self.cid)
        self.local_labels: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return int(len(self._x) if self._x is not None else len(self._t))

    def mean_stats(self, parameters: Any, config: dict) -> dict:
        """Σ of the rows clipped to ``raw_bound`` (one row) and the count."""
        return {"sum": clip_rows(self._x, self.raw_bound).sum(0)[None, :], "n": self.n_samples}

    def lloyd_stats(self, parameters: Any, config: dict) -> dict:
        """Per cluster of the broadcast centroids: count and sum of the clipped rows."""
        counts, sums = cluster_stats(clip_rows(self._x, self.bound), np.asarray(parameters[0]))
        return {"sums": sums, "counts": counts[None, :], "n": self.n_samples}

    def cluster_release(self, parameters: Any, config: dict) -> dict | Abstain:
        """Simultaneous sharing's centroids, privatised at the centre: rows centred by the
        broadcast mean and clipped to ``bound``, the local cut (≥ n_min per cluster), per
        cluster the sum (+ N(0, (z·bound)²) per entry) and the count (+ N(0, z²)). The partial
        dendrograms (per-sample merge heights) are not released."""
        from fedclust.federation.guard import centre_policy

        # the request's n_min may only raise the centre's own floor (issue 30 C: a curious
        # server asking n_min = 1 got one-patient clusters)
        n_min = centre_policy(self).floor(int(config["n_min"]))
        if self.n_samples < n_min:
            return Abstain(f"{self.n_samples} samples < n_min")
        xc = clip_rows(self._x - np.asarray(parameters[0])[None, :], self.bound)
        lab = cut_clusters(xc, n_min, self.linkage_method)
        m = int(lab.max()) + 1
        counts = np.bincount(lab, minlength=m).astype(np.float64)
        sums = np.zeros((m, xc.shape[1]))
        np.add.at(sums, lab, xc)
        if self.noise > 0:
            sums = sums + self._rng.normal(0.0, self.noise * self.bound, sums.shape)
            counts = counts + self._rng.normal(0.0, self.noise, counts.shape)
        self.local_labels = lab
        return {"sums": sums, "counts": counts[None, :], "n": self.n_samples}

    def sample_labels(self, cluster_labels: np.ndarray) -> np.ndarray:
        """Evaluation only (never a message): the global label of each of the centre's samples
        from the labels of its released clusters."""
        return np.asarray(cluster_labels)[self.local_labels]

    def km_counts(self, parameters: Any, config: dict) -> dict:
        """Events and censorings per interval of the public grid (edges ``parameters[0]``;
        the last interval is open), one row each."""
        edges = np.asarray(parameters[0], dtype=np.float64)
        pos = np.clip(np.searchsorted(edges, self._t, side="right") - 1, 0, len(edges) - 1)
        g = len(edges)
        ev = np.bincount(pos[self._e], minlength=g).astype(np.float64)
        ce = np.bincount(pos[~self._e], minlength=g).astype(np.float64)
        return {"events": ev[None, :], "censored": ce[None, :], "n": self.n_samples}
