"""Centroid-based samplewise clustering with gradual sharing — Algorithm 4 (spec §5.2).

Simulation of the protocol with the distance state held in vectorised numpy arrays:

- ``D`` (n × n slots): the distance the federation knows for every *communicating* pair of
  active clusters (two local clusters communicate only inside one center; a global cluster
  communicates with everything); ``inf`` otherwise. Row minima are cached so a merge step costs
  O(n) instead of a scan of the whole matrix.
- Merges use Lance–Williams (:func:`~fedclust.hac.pooled.lance_williams`). For a global +
  local merge the unknown distances from the local part to clusters of other centers are
  replaced by the global part's distance (thesis: ``d(C_L, C) := d(C_G, C)``).
- When a cluster's unshared part in center k reaches ``n_min`` points, center k publishes its
  centroid and size (a ledger message) and the distances of that cluster are corrected
  (spec §5.2 "Centroid sharing and distance correction"):

  * a cluster that was local: distances to clusters of other centers are computed by the
    linkage, treating it as |C| points at its centroid;
  * single / complete: ``min`` / ``max`` with the exact distances from the new centroid to the
    other clusters' unshared points outside center k;
  * average: the part of the average that involves the published points and the other
    cluster's unshared points outside center k (the approximated part δ) is replaced by the
    exact mean distance to the new centroid; [OURS] the δ part is taken as the current
    distance (the thesis stores it per center; this keeps the state O(n²));
  * centroid / Ward: recomputed from centroids and sizes; each party sees its own points
    exactly, the published centroids, and unshared points of other centers at the cluster's
    public centroid [OURS].

Invariants (tested): ``n_min = 1`` ⇒ the pooled tree for every linkage; one center ⇒ the pooled
tree for any ``n_min``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.distance import cdist, pdist, squareform

from ..errors import ConfigError, InputDataError
from ..ledger import Ledger
from .pooled import check_method, check_samples, lance_williams

SERVER = "server"


@dataclass
class GradualResult:
    """Output of :func:`gradual_sharing`."""

    Z: np.ndarray  # scipy format, merges in protocol order
    inversions: int  # merges lower than one of their children
    shares: int  # number of centroid publications
    bad_radicands: int  # centroid/Ward square roots of negative numbers (must be 0)
    ledger: Ledger = field(default_factory=Ledger)


def enforce_monotone(z: np.ndarray) -> np.ndarray:
    """Raise every merge height to at least its children's (cumulative max along the tree)."""
    z = np.array(z, dtype=float)
    n = z.shape[0] + 1
    h = np.zeros(2 * n - 1)
    for t in range(n - 1):
        a, b = int(z[t, 0]), int(z[t, 1])
        z[t, 2] = max(z[t, 2], h[a], h[b])
        h[n + t] = z[t, 2]
    return z


def count_inversions(z: np.ndarray) -> int:
    """Merges whose height is below one of their children's heights."""
    n = z.shape[0] + 1
    h = np.zeros(2 * n - 1)
    h[n:] = z[:, 2]
    kids = np.maximum(h[z[:, 0].astype(int)], h[z[:, 1].astype(int)])
    return int(np.sum(z[:, 2] < kids - 1e-12 * np.maximum(1.0, np.abs(kids))))


class _State:
    """Distance state and cluster bookkeeping of one gradual-sharing run."""

    def __init__(self, x, centers, n_min, method, metric, ledger):
        self.x, self.cen, self.n_min = x, centers, n_min
        self.method, self.metric, self.led = method, metric, ledger
        self.d_min = 0.0
        n = x.shape[0]
        self.n = n
        self.m = int(centers.max()) + 1
        self.names = [f"center{k}" for k in range(self.m)]
        self.size = np.ones(n)
        self.cid = np.arange(n)
        self.active = np.ones(n, dtype=bool)
        self.is_global = np.zeros(n, dtype=bool)
        self.point_slot = np.arange(n)
        self.members = [[i] for i in range(n)]
        self.private = np.ones(n, dtype=bool)
        self.priv = np.zeros((n, self.m), dtype=np.int64)  # unshared points per slot × center
        self.priv[np.arange(n), centers] = 1
        # published sums / counts per slot (public); used for centroid/ward and corrections
        # public sums per global slot (only centroid/Ward need them): O(n_G d), not O(n d)
        self.pub_sum: dict[int, np.ndarray] = {}
        self.pub_cnt = np.zeros(n)
        self.round = 0
        self.shares = 0
        self.bad = 0
        # initial distances: exact inside a center, unknown (inf) across centers
        d = np.full((n, n), np.inf)
        for k in range(self.m):
            idx = np.flatnonzero(centers == k)
            if idx.size > 1:
                d[np.ix_(idx, idx)] = squareform(pdist(x[idx], metric))
        np.fill_diagonal(d, np.inf)
        self.d = d
        self.rowmin = d.min(axis=1)
        self.rowarg = d.argmin(axis=1)

    # ---- row-minimum cache -------------------------------------------------------------------
    def _refresh(self, changed: int, old_targets: tuple[int, ...]) -> None:
        """Update cached row minima after column ``changed`` (and rows in old_targets) moved."""
        d = self.d
        stale = np.isin(self.rowarg, old_targets) & self.active
        stale[changed] = True
        col = d[:, changed]
        better = (col < self.rowmin) & self.active & ~stale
        self.rowmin[better] = col[better]
        self.rowarg[better] = changed
        rows = np.flatnonzero(stale)
        if rows.size:
            sub = d[rows]
            self.rowarg[rows] = sub.argmin(axis=1)
            self.rowmin[rows] = sub[np.arange(rows.size), self.rowarg[rows]]
        for k in old_targets:
            if not self.active[k]:
                self.rowmin[k] = np.inf

    # ---- protocol steps ------------------------------------------------------------------------
    def closest_pair(self) -> tuple[int, int, float, float]:
        """Global argmin = min over the centers' and the server's candidate minima.

        Returns ``(i, j, true distance, reported height)``. With the privacy option ``d_min``
        (thesis §4.2.1.3) a center reports ``max(d_min, d)`` for pairs involving one of its
        local clusters; the server selects and records the reported value (slow path, O(n²)).
        """
        if self.d_min > 0:
            act = np.flatnonzero(self.active)
            sub = self.d[np.ix_(act, act)]
            loc = ~self.is_global[act]
            rep = np.where(loc[:, None] | loc[None, :], np.maximum(sub, self.d_min), sub)
            rep[np.isinf(sub)] = np.inf
            flat = int(np.argmin(rep))
            a, b = (int(act[v]) for v in divmod(flat, act.size))
            h, true = float(rep.flat[flat]), float(self.d[a, b])
        else:
            a = int(np.argmin(np.where(self.active, self.rowmin, np.inf)))
            h = true = float(self.rowmin[a])
            b = int(self.rowarg[a])
        if not np.isfinite(h):
            raise InputDataError(
                "gradual sharing is stuck: no two clusters can communicate",
                where="hac gradual sharing",
                fix="n_min must not exceed the size of every center (Algorithm 4 'Ensure')",
            )
        return (a, b, true, h) if a < b else (b, a, true, h)

    def merge(self, i: int, j: int, h: float, t: int) -> None:
        d, s = self.d, self.size
        others = self.active.copy()
        others[[i, j]] = False
        d_il, d_jl = d[i, others], d[j, others]
        # thesis substitution: unknown d(C_L, C) := d(C_G, C)
        d_il = np.where(np.isinf(d_il), d_jl, d_il)
        d_jl = np.where(np.isinf(d_jl), d_il, d_jl)
        new, bad = lance_williams(self.method, d_il, d_jl, h, s[i], s[j], s[others])
        self.bad += bad
        d[i, others] = new
        d[others, i] = new
        d[j, :] = np.inf
        d[:, j] = np.inf
        self.active[j] = False
        self.is_global[i] |= self.is_global[j]
        s[i] += s[j]
        self.priv[i] += self.priv[j]
        self.priv[j] = 0
        if j in self.pub_sum:
            pj = self.pub_sum.pop(j)
            self.pub_sum[i] = self.pub_sum[i] + pj if i in self.pub_sum else pj
        self.pub_cnt[i] += self.pub_cnt[j]
        self.point_slot[self.members[j]] = i
        self.members[i].extend(self.members[j])
        self.members[j] = []
        self.cid[i] = self.n + t
        self._refresh(i, (i, j))
        # broadcast of the merge decision (pair + height) to every center
        for k in range(self.m):
            self.led.send(SERVER, self.names[k], {"pair": np.array([i, j]), "h": h}, t, "merge")
        for k in np.flatnonzero(self.priv[i] >= self.n_min):
            self.share(i, int(k), t)

    def share(self, a: int, k: int, t: int) -> None:
        """Center k publishes the centroid of cluster a's unshared part in k (≥ n_min points)."""
        mem = np.asarray(self.members[a])
        part = mem[(self.cen[mem] == k) & self.private[mem]]
        msg = self.led.send(
            self.names[k],
            SERVER,
            {"centroid": self.x[part].mean(axis=0), "size": int(part.size)},
            t,
            "centroid",
        )
        c, p = msg["centroid"], msg["size"]
        for r in range(self.m):
            if r != k:
                self.led.send(SERVER, self.names[r], msg, t, "centroid broadcast")
        was_global = bool(self.is_global[a])
        self.private[part] = False
        self.priv[a, k] = 0
        if self.method in ("centroid", "ward"):
            self.pub_sum[a] = self.pub_sum.get(a, 0.0) + p * c
        self.pub_cnt[a] += p
        self.is_global[a] = True
        self.shares += 1
        self._correct(a, k, c, p, was_global, t)

    def _point_aggregates(self, k: int, c: np.ndarray, t: int):
        """Per slot: min / max / sum / count of distances from unshared points outside center k
        to the published centroid c (each center computes its own, O(n_k d))."""
        n = self.n
        pts = np.flatnonzero(self.private & (self.cen != k))
        lo, hi, sm, ct = np.full(n, np.inf), np.full(n, -np.inf), np.zeros(n), np.zeros(n)
        if pts.size:
            dist = cdist(self.x[pts], c[None, :], self.metric)[:, 0]
            lab = self.point_slot[pts]
            np.minimum.at(lo, lab, dist)
            np.maximum.at(hi, lab, dist)
            np.add.at(sm, lab, dist)
            np.add.at(ct, lab, 1.0)
            for r in range(self.m):  # each center sends its clusters' aggregates
                if r != k:
                    sl = np.unique(lab[self.cen[pts] == r])
                    if sl.size:
                        agg = {"min": lo[sl], "max": hi[sl], "sum": sm[sl], "n": ct[sl]}
                        self.led.send(self.names[r], SERVER, agg, t, "correction")
        return lo, hi, sm, ct

    def _correct(self, a: int, k: int, c: np.ndarray, p: int, was_global: bool, t: int) -> None:
        d, s = self.d, self.size
        others = self.active.copy()
        others[a] = False
        idx = np.flatnonzero(others)
        if self.method in ("centroid", "ward"):
            new = self._centroid_distances(a, idx)
        else:
            lo, hi, sm, ct = self._point_aggregates(k, c, t)
            lo, hi, sm, ct = lo[idx], hi[idx], sm[idx], ct[idx]
            cur = d[a, idx].copy()
            has = ct > 0
            if self.method == "single":
                new = np.where(has, np.minimum(cur, lo), cur)
            elif self.method == "complete":
                new = np.where(has, np.where(np.isinf(cur), hi, np.maximum(cur, hi)), cur)
            else:  # average: replace the approximated part of the mean
                mean = np.where(has, sm / np.maximum(ct, 1), 0.0)
                w = p * ct / (s[a] * s[idx])
                base = np.where(np.isinf(cur), mean, cur)
                new = np.where(has, base + w * (mean - base), cur)
        d[a, idx] = new
        d[idx, a] = new
        self._refresh(a, (a,))

    def _view_centroids(self, a: int, k: int | None) -> np.ndarray:
        """Centroid of cluster a as party k sees it (k=None: the server)."""
        g = self.pub_sum.get(a, 0.0) / self.pub_cnt[a] if self.pub_cnt[a] > 0 else None
        mem = np.asarray(self.members[a])
        if k is None:
            return g
        own = mem[self.cen[mem] == k]
        own_pub = own[~self.private[own]]
        other_priv = self.size[a] - own.size - (self.pub_cnt[a] - own_pub.size)
        tot = self.x[own].sum(axis=0) + (self.pub_sum.get(a, 0.0) - self.x[own_pub].sum(axis=0))
        if other_priv > 0:
            tot = tot + other_priv * g
        return tot / self.size[a]

    def _centroid_distances(self, a: int, idx: np.ndarray) -> np.ndarray:
        """Recompute d(a, b) for centroid/Ward from what the computing party can see."""
        out = np.empty(idx.size)
        views: dict = {}
        for pos, b in enumerate(idx):
            if self.is_global[b]:
                both = self.priv[a] + self.priv[b]
                k = int(np.argmax(both)) if both.max() > 0 else None
            else:
                k = int(self.cen[self.members[b][0]])
            if k not in views:
                views[k] = self._view_centroids(a, k)
            cb = self._view_centroids(b, k)
            dist = float(np.linalg.norm(views[k] - cb))
            if self.method == "ward":
                na, nb = self.size[a], self.size[b]
                dist *= np.sqrt(2 * na * nb / (na + nb))
            out[pos] = dist
        return out


def gradual_sharing(
    x: np.ndarray,
    centers: np.ndarray,
    n_min: int,
    method: str,
    metric: str = "euclidean",
    monotone: bool = False,
    ledger: Ledger | None = None,
    d_min: float = 0.0,
) -> GradualResult:
    """Run Algorithm 4 on samples ``x`` split by ``centers`` (one integer label per row).

    ``monotone``: enforce monotone merge heights afterwards (Fig 4.7 variant); ``d_min``:
    privacy option of §4.2.1.3 (centers report at least d_min for their local candidates).
    """
    check_method(method, metric, where="hac.gradual")
    x = check_samples(x, where="gradual sharing input")
    centers = np.asarray(centers)
    if centers.shape != (x.shape[0],):
        raise InputDataError(
            f"need one center label per sample: {centers.shape} labels for {x.shape[0]} samples",
            where="gradual sharing input",
        )
    _, centers = np.unique(centers, return_inverse=True)
    if int(n_min) < 1:
        raise ConfigError(f"n_min must be ≥ 1, got {n_min}", where="hac.gradual.n_min")
    if np.bincount(centers).max() < n_min:
        raise InputDataError(
            f"no center holds n_min = {n_min} samples: nothing can ever be shared",
            where="gradual sharing input",
            fix="lower n_min below the size of the largest center (Algorithm 4 'Ensure')",
        )
    if metric == "correlation":  # samplewise correlation = cosine of locally centred samples
        x = x - x.mean(axis=1, keepdims=True)
        metric = "cosine"
    led = ledger if ledger is not None else Ledger()
    if d_min < 0:
        raise ConfigError(f"d_min must be ≥ 0, got {d_min}", where="hac.gradual.d_min")
    st = _State(x, centers, int(n_min), method, metric, led)
    st.d_min = float(d_min)
    if n_min == 1:  # every singleton is published at once: all distances exact
        for k in range(st.m):
            idx = np.flatnonzero(centers == k)
            led.send(st.names[k], SERVER, {"centroids": x[idx], "sizes": np.ones(idx.size)}, 0)
        st.private[:] = False
        st.priv[:] = 0
        st.is_global[:] = True
        if method in ("centroid", "ward"):
            st.pub_sum = {i: x[i].copy() for i in range(len(x))}
        st.pub_cnt[:] = 1
        st.d = squareform(pdist(x, metric))
        np.fill_diagonal(st.d, np.inf)
        st.rowmin, st.rowarg = st.d.min(axis=1), st.d.argmin(axis=1)
    n = x.shape[0]
    z = np.zeros((n - 1, 4))
    for t in range(n - 1):
        for k in range(st.m):  # each center reports its candidate minimum
            led.send(st.names[k], SERVER, {"min": 0.0, "pair": np.zeros(2)}, t, "min")
        i, j, dist, h = st.closest_pair()
        ci, cj = st.cid[i], st.cid[j]
        z[t] = [min(ci, cj), max(ci, cj), h, st.size[i] + st.size[j]]
        st.merge(i, j, dist, t)
    inv = count_inversions(z)
    if monotone:
        z = enforce_monotone(z)
    return GradualResult(Z=z, inversions=inv, shares=st.shares, bad_radicands=st.bad, ledger=led)
