"""The centre-side state of gradual sharing (Algorithm 4, spec §5.2): :class:`GradualCenter`
(one centre's block, its local clusters, its distances) and :class:`_Public` (the public state,
a copy in every party built only from broadcast messages), with the row-minimum cache
:class:`_MinCache` both sides use. The protocol and the server are in :mod:`.gradual`; the
centre's request handlers in :mod:`.gradual_centre`. A module of its own so that the centre side
never imports the server's module (no import cycle)."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist, pdist, squareform

from ..federation.disclosure import DisclosurePolicy
from ..privacy.release_log import ReleaseLog
from .pooled import lance_williams


class _MinCache:
    """A distance block with cached row minima (a merge step costs O(row length))."""

    def __init__(self, d: np.ndarray):
        self.d = d
        if d.shape[1]:
            self.arg = d.argmin(axis=1)
            self.min = d[np.arange(d.shape[0]), self.arg]
        else:
            self.arg = np.zeros(d.shape[0], dtype=np.intp)
            self.min = np.full(d.shape[0], np.inf)

    def rows(self, rows: np.ndarray) -> None:
        if rows.size and self.d.shape[1]:
            sub = self.d[rows]
            a = sub.argmin(axis=1)
            self.arg[rows] = a
            self.min[rows] = sub[np.arange(rows.size), a]

    def column(self, col: int) -> None:
        """Column ``col`` changed (up or down) for any rows."""
        v = self.d[:, col]
        mine = self.arg == col
        stale = np.flatnonzero(mine & (v > self.min))
        better = v < self.min
        self.min[better] = v[better]
        self.arg[better] = col
        self.rows(stale)

    def killed(self, cols: tuple[int, ...]) -> None:
        """Columns ``cols`` were set to ``inf``."""
        self.rows(np.flatnonzero(np.isin(self.arg, cols) & np.isfinite(self.min)))

    def kill_row(self, r: int) -> None:
        self.d[r] = np.inf
        self.min[r] = np.inf

    def best(self) -> tuple[float, int, int]:
        if not self.min.size:
            return np.inf, -1, -1
        r = int(np.argmin(self.min))
        return float(self.min[r]), r, int(self.arg[r])


class _Public:
    """What every party knows from broadcasts (one replica simulated for all parties)."""

    def __init__(self, n: int, m: int, g_max: int, home: np.ndarray, keep_sums: bool):
        self.n, self.m, self.g_max = n, m, g_max
        self.size = np.ones(n)
        self.cid = np.arange(n)
        self.gidx = np.full(n, -1)  # global index of a slot, -1 while local
        self.home = home.copy()  # center of a local cluster (-1 once global)
        self.gslot = np.full(g_max, -1)
        self.wait = np.zeros((g_max, m), dtype=np.int64)  # unshared points per global × center
        self.pub_cnt = np.zeros(g_max)
        self.pub_sum: dict[int, np.ndarray] | None = {} if keep_sums else None
        self.n_global = 0
        self.gsize = np.zeros(g_max)  # sizes by global index

    def new_global(self, slot: int) -> int:
        g = self.n_global
        self.n_global += 1
        self.gidx[slot], self.gslot[g], self.home[slot] = g, slot, -1
        self.gsize[g] = self.size[slot]
        return g

    def publish(self, g: int, k: int, centroid: np.ndarray, p: int) -> None:
        self.pub_cnt[g] += p
        self.wait[g, k] = 0
        if self.pub_sum is not None:
            self.pub_sum[g] = self.pub_sum.get(g, 0.0) + p * centroid

    def public_centroid(self, g: int) -> np.ndarray:
        return self.pub_sum[g] / self.pub_cnt[g]

    def publish_all(self) -> None:
        """``n_min = 1``: every sample is its own published cluster (global index = slot)."""
        self.gidx[:] = np.arange(self.n)
        self.gslot[: self.n] = np.arange(self.n)
        self.home[:] = -1
        self.gsize[: self.n] = self.size
        self.n_global = self.n
        self.pub_cnt[:] = 1

    def merge(self, i: int, j: int, t: int) -> None:
        """The public part of round t's merge of slots i and j (the broadcast pair: for a local
        and a global cluster, i is the local one and j survives; otherwise i survives)."""
        gi, gj = self.gidx[i], self.gidx[j]
        ni, nj = self.size[i], self.size[j]
        if gi < 0 and gj < 0:  # local / local
            self.size[i] += nj
            self.size[j] = 0
            self.cid[i] = self.n + t
        elif gi >= 0 and gj >= 0:  # global / global
            self.size[i] += nj
            self.size[j] = 0
            self.gsize[gi] += nj
            self.gsize[gj] = 0
            self.cid[i] = self.n + t
            self.wait[gi] += self.wait[gj]
            self.wait[gj] = 0
            if self.pub_sum is not None:
                self.pub_sum[gi] = self.pub_sum.get(gi, 0.0) + self.pub_sum.pop(gj, 0.0)
            self.pub_cnt[gi] += self.pub_cnt[gj]
            self.pub_cnt[gj] = 0
        else:  # local i (its home centre) joins global j
            k, g = int(self.home[i]), int(gj)
            self.size[j] += ni
            self.size[i] = 0
            self.gsize[g] += ni
            self.cid[j] = self.n + t
            self.wait[g, k] += int(ni)

    def published(self, slot: int, k: int, centroid: np.ndarray, p: int) -> tuple[int, bool]:
        """Centre k published the centroid of ``slot``'s unshared part there: (global index,
        whether the cluster was local until now)."""
        first = self.gidx[slot] < 0
        g = self.new_global(slot) if first else int(self.gidx[slot])
        self.publish(g, k, centroid, p)
        return g, bool(first)

    def ready(self, k: int, n_min: int) -> list[int]:
        """Slots whose unshared part in centre k has reached n_min (to be published): its
        local clusters of ≥ n_min samples, then the global clusters with ≥ n_min of its samples
        on their waitlist (what every party knows; centre k's own view agrees)."""
        loc = np.flatnonzero((self.home == k) & (self.size >= n_min))
        out = [int(v) for v in loc]
        g = np.flatnonzero(self.wait[: self.n_global, k] >= n_min)
        return out + [int(self.gslot[v]) for v in g]


class GradualCenter:
    """Center k of Algorithm 4: its samples, its local clusters and its distance state.

    Rows of ``D``: its samples' positions (a local cluster lives in the row of its smallest
    member); columns: the same positions, then the global clusters by global index.
    """

    def __init__(
        self,
        k: int,
        slots: np.ndarray,
        x: np.ndarray,
        pub: _Public,
        cfg: dict,
        policy: DisclosurePolicy | None = None,
        log: ReleaseLog | None = None,
    ):
        self.k, self.name = k, f"center{k}"
        self.policy, self.log = policy, log
        self.slots, self.x, self.pub, self.cfg = slots, x, pub, cfg
        self.nk = len(slots)
        self.pos = {int(s): i for i, s in enumerate(slots)}
        self.owner = slots.copy()  # slot of the cluster holding each own point
        self.unshared = np.ones(self.nk, dtype=bool)
        self.bad = 0
        self.last: tuple[set, float] | None = None  # its latest candidate pair and distance
        self.reply: dict | None = None  # what the server asks for next (module docstring)
        nloc = 0 if cfg["all_public"] else self.nk
        self.nloc = nloc
        d = np.full((nloc, nloc + pub.g_max), np.inf)
        if nloc > 1:
            d[:, :nloc] = squareform(pdist(x, cfg["metric"]))
            np.fill_diagonal(d, np.inf)
        self.cache = _MinCache(d)
        self.d = d
        self.is_loc = np.ones(nloc, dtype=bool)  # positions holding an active local cluster
        # δ bookkeeping (average, thesis): approximated sums, row part × (global, center)
        self.delta = (
            np.zeros((nloc + pub.g_max, pub.g_max, pub.m)) if cfg["delta"] and nloc else None
        )
        if cfg["all_public"]:
            self.unshared[:] = False

    # ---- helpers ---------------------------------------------------------------------------
    def _gcol(self, g: int) -> int:
        return self.nloc + g

    def _row_of_slot(self, slot: int) -> int:
        g = self.pub.gidx[slot]
        return self.nloc + g if g >= 0 else self.pos[slot]

    def _col_sizes(self) -> np.ndarray:
        """Public sizes of the column clusters (locals by position, globals by index)."""
        s = np.ones(self.nloc + self.pub.g_max)
        if self.nloc:
            s[: self.nloc] = self.pub.size[self.slots]
        s[self.nloc :] = self.pub.gsize
        return s

    def _local_rows(self) -> np.ndarray:
        """Positions holding an active local cluster."""
        return np.flatnonzero(self.is_loc)

    def _lw(self, a, b, h, na, nb, nl):
        new, bad = lance_williams(self.cfg["method"], a, b, h, na, nb, nl)
        self.bad += bad
        return new

    def _own_rows(self) -> np.ndarray:
        """Row index (local position or n_loc + g) of every own unshared point's cluster."""
        own = self.owner[self.unshared]
        g = self.pub.gidx[own]
        return np.where(g >= 0, self.nloc + g, np.searchsorted(self.slots, own))

    # ---- round messages ----------------------------------------------------------------------
    def candidate(self) -> dict:
        """The center's closest communicating pair among its local clusters' distances."""
        d, r, c = self.cache.best()
        if not np.isfinite(d):
            self.last = None
            return {"d": np.inf, "reported": np.inf, "pair": np.array([-1, -1])}
        a = int(self.slots[r])
        b = int(self.slots[c]) if c < self.nloc else int(self.pub.gslot[c - self.nloc])
        self.last = ({a, b}, d)
        return {"d": d, "reported": max(d, self.cfg["d_min"]), "pair": np.array([a, b])}

    def _own_height(self, i: int, j: int, h: float) -> float:
        """A merge involving one of this centre's local clusters is its own candidate: its true
        distance (the broadcast ``h`` is ``max(d, d_min)``)."""
        if self.last is None or self.last[0] != {i, j}:
            raise RuntimeError(f"center{self.k}: merge ({i}, {j}) is not its candidate")
        return self.last[1]

    # ---- the public updates the server broadcasts (applied in the order they happened) -------
    def on_merge(self, i: int, j: int, h: float, t: int) -> None:
        """Round t's merge of slots i and j at height h: the public state, then this centre's
        part (its local merge, its column of a global merge, the absorbed local cluster's row —
        kept in ``self.reply`` for the server — or the substitution of §3.3.1)."""
        pub = self.pub
        gi, gj = int(pub.gidx[i]), int(pub.gidx[j])
        ni, nj = pub.size[i], pub.size[j]
        k = int(pub.home[i])
        pub.merge(i, j, t)
        if gi < 0 and gj < 0:
            if k == self.k:
                self.merge_local(i, j, self._own_height(i, j, h), ni, nj)
        elif gi >= 0 and gj >= 0:
            self.merge_globals(gi, gj, i, j, h, ni, nj)
        elif k == self.k:
            self.reply = self.absorb_local(gj, j, i, self._own_height(i, j, h), nj, ni)
        else:
            self.substitute(gj, k, ni, h)

    def on_published(self, slot: int, k_from: int, p: int, c: np.ndarray) -> None:
        """Center ``k_from`` published the centroid of ``slot``'s part there: the public state,
        then the locals' distances; the aggregates for the server's global distances are kept
        in ``self.reply``."""
        g, first = self.pub.published(slot, k_from, c, p)
        self.reply = self.on_centroid(g, k_from, c, p, first)

    def publish_slot(self, slot: int) -> dict:
        """ShareCentroid (Alg. 4) here: the centroid message of ``slot``'s unshared part; its
        distance row (first share, or the δ of average linkage) is kept in ``self.reply``."""
        msg, row = self.publish(slot)
        g, first = self.pub.published(slot, self.k, msg["centroid"], int(msg["size"]))
        self.reply = row
        self.after_publish(slot, g, first)
        return msg

    def merge_local(self, i: int, j: int, h: float, ni: float, nj: float) -> None:
        """Local/local merge inside this center (slot i survives)."""
        pi, pj = self.pos[i], self.pos[j]
        d, sz = self.d, self._col_sizes()
        new = self._lw(d[pi], d[pj], h, ni, nj, sz)
        new[[pi, pj]] = np.inf
        d[pi] = new
        d[:, pi] = new[: self.nloc]
        self.is_loc[pj] = False
        self.cache.kill_row(pj)
        d[:, pj] = np.inf
        self.owner[self.owner == j] = i
        if self.delta is not None:
            self.delta[pi] += self.delta[pj]
            self.delta[pj] = 0.0
        self.cache.rows(np.array([pi]))
        self.cache.column(pi)
        self.cache.killed((pj,))

    def merge_globals(self, gi: int, gj: int, si: int, sj: int, h: float, ni, nj) -> None:
        """Global/global merge: update this center's column of the merged cluster."""
        if self.nloc:
            ci, cj = self._gcol(gi), self._gcol(gj)
            rows = self._local_rows()
            sz = self._col_sizes()
            d = self.d
            d[rows, ci] = self._lw(d[rows, ci], d[rows, cj], h, ni, nj, sz[rows])
            d[:, cj] = np.inf
            self.cache.column(ci)
            self.cache.killed((cj,))
            if self.delta is not None:
                self.delta[:, gi] += self.delta[:, gj]
                self.delta[:, gj] = 0.0
                self.delta[self.nloc + gi] += self.delta[self.nloc + gj]
                self.delta[self.nloc + gj] = 0.0
        self.owner[self.owner == sj] = si

    def absorb_local(self, g: int, sg: int, sl: int, h: float, n_g: float, n_l: float) -> dict:
        """Global g absorbs this center's local cluster sl: update the locals' column of g and
        return sl's distances to the other global clusters (the server updates its row)."""
        pl, cg = self.pos[sl], self._gcol(g)
        d, sz = self.d, self._col_sizes()
        rows = self._local_rows()
        rows = rows[rows != pl]
        d[rows, cg] = self._lw(d[rows, cg], d[rows, pl], h, n_g, n_l, sz[rows])
        act = np.flatnonzero(self.pub.gsize[: self.pub.n_global] > 0)
        act = act[act != g]
        row = d[pl, self.nloc + act].copy()
        self.is_loc[pl] = False
        self.cache.kill_row(pl)
        d[:, pl] = np.inf
        self.owner[self.owner == sl] = sg
        msg = {"cluster": sl, "to": self.pub.gslot[act].astype(np.int64), "d": row}
        if self.delta is not None:
            self.delta[self.nloc + g] += self.delta[pl]
            self.delta[pl] = 0.0
        self.cache.column(cg)
        self.cache.killed((pl,))
        return msg

    def substitute(self, g: int, k_from: int, n_local: float, h: float) -> None:
        """Global g absorbed a local cluster of another center: d(C_L, C) := d(C_G, C)."""
        if not self.nloc:
            return
        cg = self._gcol(g)
        rows = self._local_rows()
        d = self.d
        old = d[rows, cg]
        if self.delta is not None:
            ok = np.isfinite(old)
            sz = self.pub.size[self.slots[rows[ok]]]
            self.delta[rows[ok], g, k_from] += n_local * sz * old[ok]
        n_g = self.pub.gsize[g] - n_local  # size before the merge
        sizes = self.pub.size[self.slots[rows]]
        d[rows, cg] = self._lw(old, old, h, n_g, n_local, sizes)
        self.cache.column(cg)

    def ready(self) -> list[int]:
        """Slots whose unshared part in this center has reached n_min (to be published)."""
        n_min = self.cfg["n_min"]
        loc = self.slots[self._local_rows()]
        out = [int(v) for v in loc[self.pub.size[loc] >= n_min]]
        g = np.flatnonzero(self.pub.wait[: self.pub.n_global, self.k] >= n_min)
        out += [int(self.pub.gslot[v]) for v in g]
        return out

    def unshared_part(self, slot: int) -> np.ndarray:
        """Positions (in this centre's block) of slot's unshared points here."""
        return np.flatnonzero(self.unshared & (self.owner == slot))

    def publish(self, slot: int) -> tuple[dict, dict | None]:
        """Centroid message of slot's unshared part here; for a local cluster also its row of
        distances to the global clusters (it becomes global; the server takes them over)."""
        part = self.unshared & (self.owner == slot)
        c = self.x[part].mean(axis=0)
        msg = {"centroid": c, "size": int(part.sum()), "cluster": slot}
        row = None
        if self.pub.gidx[slot] < 0:  # first share: the cluster becomes global
            pl = self.pos[slot]
            act = np.flatnonzero(self.pub.gsize[: self.pub.n_global] > 0)
            row = {"cluster": slot, "to": self.pub.gslot[act].astype(np.int64),
                   "d": self.d[pl, self.nloc + act].copy()}  # fmt: skip
            if self.delta is not None:
                row["delta"] = self.delta[pl][act].sum(axis=1)
        elif self.delta is not None:
            g = int(self.pub.gidx[slot])
            act = np.flatnonzero(self.pub.gsize[: self.pub.n_global] > 0)
            row = {"cluster": slot, "to": self.pub.gslot[act].astype(np.int64),
                   "delta": self.delta[self.nloc + g][act].sum(axis=1)}  # fmt: skip
        return msg, row

    def after_publish(self, slot: int, g: int, was_local: bool) -> None:
        """Own bookkeeping once slot's part is published (it is now global index g)."""
        self.unshared[self.unshared & (self.owner == slot)] = False
        if was_local:
            pl, cg = self.pos[slot], self._gcol(g)
            self.d[:, cg] = self.d[:, pl]
            self.is_loc[pl] = False
            self.cache.kill_row(pl)
            self.d[:, pl] = np.inf
            if self.delta is not None:
                self.delta[pl] = 0.0
            self.cache.column(cg)
            self.cache.killed((pl,))
        elif self.delta is not None:
            self.delta[self.nloc + g] = 0.0
        if self.cfg["method"] in ("centroid", "ward") and self.nloc:
            self._recompute_column(g)

    def on_centroid(self, g: int, k_from: int, c: np.ndarray, p: int, first: bool) -> dict:
        """Another center published a centroid of global g: initialise (first share) or correct
        the locals' distances to g; return the aggregates for the server's global distances."""
        method, metric = self.cfg["method"], self.cfg["metric"]
        nrows = self.nloc + self.pub.g_max
        lo = hi = sm = ct = None
        if method not in ("centroid", "ward"):  # those are recomputed from centroids
            own = np.flatnonzero(self.unshared)
            rows = self._own_rows()
            dist = cdist(self.x[own], c[None, :], metric)[:, 0] if own.size else np.zeros(0)
            if method == "single":
                lo = np.full(nrows, np.inf)
                np.minimum.at(lo, rows, dist)
            elif method == "complete":
                hi = np.full(nrows, -np.inf)
                np.maximum.at(hi, rows, dist)
            else:
                sm = np.bincount(rows, weights=dist, minlength=nrows)
                ct = np.bincount(rows, minlength=nrows).astype(float)
        old = self.delta[:, g, k_from].copy() if self.delta is not None else None
        if self.delta is not None:
            self.delta[:, g, k_from] = 0.0
        loc = self._local_rows()
        cg = self._gcol(g) if self.nloc else None
        if loc.size:
            d = self.d
            if method in ("centroid", "ward"):
                self._recompute_column(g)
            elif first:
                init = lo if method == "single" else hi if method == "complete" else None
                d[loc, cg] = init[loc] if init is not None else sm[loc] / ct[loc]
            else:
                cur = d[loc, cg]
                size_g = self.pub.gsize[g]
                if method == "single":
                    new = np.minimum(cur, lo[loc])
                elif method == "complete":
                    new = np.maximum(cur, hi[loc])
                elif old is not None:  # average, thesis: replace the stored part δ
                    new = cur + (p * sm[loc] - old[loc]) / (size_g * ct[loc])
                else:  # average, [OURS] δ ≈ current distance
                    new = cur + p * (sm[loc] / ct[loc] - cur) / size_g
                d[loc, cg] = new
            if cg is not None:
                self.cache.column(cg)
        if method in ("centroid", "ward"):
            return {"to": np.zeros(0, dtype=np.int64)}
        gl = np.flatnonzero(self.pub.wait[: self.pub.n_global, self.k] > 0)
        gl = gl[gl != g]
        gr = self.nloc + gl
        out = {"to": self.pub.gslot[gl].astype(np.int64)}
        if lo is not None:
            out["min"] = lo[gr]
        elif hi is not None:
            out["max"] = hi[gr]
        else:
            out["sum"], out["count"] = p * sm[gr], ct[gr]
            if old is not None:
                out["delta"] = old[gr]
        return out

    # ---- centroid / Ward: distances from this center's view ------------------------------------
    def view_centroid(self, slot: int) -> np.ndarray:
        """Centroid of cluster ``slot`` as this center sees it (own points exact, published
        centroids, other centers' unshared points at the public centroid)."""
        pub = self.pub
        mine = self.owner == slot
        n = pub.size[slot]
        g = pub.gidx[slot]
        if g < 0:
            return self.x[mine].mean(axis=0)
        pub_c = pub.public_centroid(g)
        own_pub = mine & ~self.unshared
        tot = self.x[mine].sum(axis=0) + pub.pub_sum[g] - self.x[own_pub].sum(axis=0)
        rest = n - mine.sum() - (pub.pub_cnt[g] - own_pub.sum())
        return (tot + rest * pub_c) / n

    def centroid_distance(self, a: int, b: int) -> float:
        dist = float(np.linalg.norm(self.view_centroid(a) - self.view_centroid(b)))
        if self.cfg["method"] == "ward":
            na, nb = self.pub.size[a], self.pub.size[b]
            dist *= np.sqrt(2 * na * nb / (na + nb))
        return dist

    def _recompute_column(self, g: int) -> None:
        loc = self._local_rows()
        if not loc.size:
            return
        sg = int(self.pub.gslot[g])
        cg = self._gcol(g)
        self.d[loc, cg] = [self.centroid_distance(int(self.slots[r]), sg) for r in loc]
        self.cache.column(cg)
