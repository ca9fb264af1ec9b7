"""Centroid-based samplewise clustering with gradual sharing — Algorithm 4 (spec §5.2).

A real multi-round protocol on the transport seam (:func:`fedclust.federation.federate`): each
centre object (:class:`.centre.HacCentre`, its side in :mod:`.gradual_centre`) holds a
:class:`.gradual_state.GradualCenter` (only its own block of samples and its own distance state) and
its own copy of the public state; the server function :func:`gradual_server` sees only proxies and
holds a :class:`GradualServer` (only what it received) and its copy. Every message passes the ledger
under a declared protocol (:func:`~fedclust.hac.boundary.gradual_protocols`, centroids with
``min_samples = n_min``); the broadcasts (merges, published centroids) ride on the server's next
request to each centre (``hac.gradual.request`` ``events``), applied there in order before it
answers.

Who holds which distance (the thesis' "who communicates" rule):

- center k: its local clusters × (its local clusters ∪ all global clusters), ``n_k × (n_k + G)``;
- server: global × global, ``G × G`` (G ≤ n / n_min global clusters are ever created);
- public (:class:`.gradual_state._Public`, a copy in every party, built only from broadcast
  messages): cluster sizes, ids, which clusters are global, per-center waitlist sizes, published
  centroid sums.

One round = one merge: every center sends its candidate minimum (``max(d_min, d)`` with the
privacy option of §4.2.1.3), the server adds its own global minimum and broadcasts the merge.

- local/local (center k): Lance–Williams in center k;
- global/global: Lance–Williams on the server and on every center's column of the merged cluster;
- global C_G + local C_L (center k): center k updates its locals and sends C_L's distances to the
  global clusters (the server updates its row); every other center substitutes
  ``d(C_L, C) := d(C_G, C)`` for its local clusters C (thesis §3.3.1); C_L joins C_G's waitlist.

When a cluster's unshared part in center k reaches ``n_min`` points, center k publishes its centroid
and size (the ledger refuses fewer than n_min). A cluster that was local moves its distances to
the global clusters to the server; other centers compute their local clusters' distances to it
(its points at the centroid), and the distances to global clusters with waitlists elsewhere are
corrected (§3.3.3.3): single ``min``, complete ``max``, centroid / Ward recomputed from centroids
(each party sees its own points exactly, published centroids, other centers' unshared points at
the public centroid [OURS]), and average by replacing the approximated part:

- ``average_delta="stored"`` (the thesis): every substitution's contribution is kept per center
  (δ_k: the sum of the approximated distances between a waitlist in one center and a cluster part
  in another), and the correction replaces exactly that part by the distances to the centroid;
- ``average_delta="current"`` [OURS, the earlier approximation]: the replaced part is taken as
  the current distance times the number of pairs it covers.

Invariants (tested): ``n_min = 1`` ⇒ the pooled tree for every linkage; one center ⇒ the pooled
tree for any ``n_min``.

Disclosure (issue 22): every answer is checked at the centre against its own policy (the
guard, :func:`fedclust.federation.guard.reply`); ``n_min`` below a centre's floor is refused; the
distance traffic is per-sample by design (opt-in). One run's publications are disjoint sets of
≥ n_min samples, but runs on the same data under other settings are not: with ``logs`` (one
:class:`~fedclust.privacy.release_log.ReleaseLog` per centre, kept across the runs of a workflow)
a centre publishes a centroid only if, with everything it released before, no sample is
isolated; otherwise it abstains and the cluster stays unshared (it keeps merging; a later,
larger part may be published).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.distance import pdist, squareform

from ..errors import ConfigError, InputDataError
from ..federation import INPROCESS, Ledger, Transport, call_all, federate
from ..privacy.release_log import ReleaseLog
from .boundary import PER_SAMPLE, Policies, gradual_protocols, policy_of, require
from .centre import HacCentre
from .gradual_state import _MinCache, _Public
from .pooled import check_method, check_samples, lance_williams

AVERAGE_DELTAS = ("stored", "current")


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


class GradualServer:
    """The server: global × global distances (only what the centers sent), merge decisions."""

    def __init__(self, pub: _Public, cfg: dict):
        self.pub, self.cfg = pub, cfg
        self.d = np.full((pub.g_max, pub.g_max), np.inf)
        self.cache = _MinCache(self.d)
        self.bad = 0

    def _lw(self, a, b, h, na, nb, nl):
        new, bad = lance_williams(self.cfg["method"], a, b, h, na, nb, nl)
        self.bad += bad
        return new

    def set_row(self, g: int, row: np.ndarray) -> None:
        row = row.copy()
        row[g] = np.inf
        self.d[g] = row
        self.d[:, g] = row
        self.cache.rows(np.array([g]))
        self.cache.column(g)

    def merge_globals(self, gi: int, gj: int, h: float, ni: float, nj: float) -> None:
        d = self.d
        new = self._lw(d[gi], d[gj], h, ni, nj, self.pub.gsize)
        new[[gi, gj]] = np.inf
        self.cache.kill_row(gj)
        d[:, gj] = np.inf
        self.set_row(gi, new)
        self.cache.killed((gj,))

    def absorb_local(self, g: int, msg: dict, h: float, n_g: float, n_l: float) -> None:
        d_l = np.full(self.pub.g_max, np.inf)
        d_l[self.pub.gidx[msg["to"].astype(int)]] = msg["d"]
        new = self._lw(self.d[g], d_l, h, n_g, n_l, self.pub.gsize)
        self.set_row(g, new)

    def new_global(self, g: int, row: dict) -> None:
        r = np.full(self.pub.g_max, np.inf)
        r[self.pub.gidx[row["to"].astype(int)]] = row["d"]
        self.set_row(g, r)

    def correct(self, g: int, p: int, aggs: list[dict], own_delta: dict | None) -> None:
        """Correct d(g, B) for global clusters B with waitlists in the centers that sent
        aggregates (§3.3.3.3)."""
        method = self.cfg["method"]
        if method in ("centroid", "ward"):
            return
        d = self.d
        row = d[g].copy()
        size = self.pub.gsize
        fix = np.zeros(self.pub.g_max)
        touched = np.zeros(self.pub.g_max, dtype=bool)
        lo = np.full(self.pub.g_max, np.inf)
        hi = np.full(self.pub.g_max, -np.inf)
        for a in aggs:
            b = self.pub.gidx[a["to"].astype(int)]
            if not b.size:
                continue
            touched[b] = True
            if method == "single":
                np.minimum.at(lo, b, a["min"])
            elif method == "complete":
                np.maximum.at(hi, b, a["max"])
            else:
                if "delta" in a:
                    np.add.at(fix, b, a["sum"] - a["delta"])
                else:
                    np.add.at(fix, b, a["sum"] - p * a["count"] * row[b])
        if own_delta is not None and "delta" in own_delta:
            b = self.pub.gidx[own_delta["to"].astype(int)]
            fix[b] -= own_delta["delta"]
            touched[b] |= own_delta["delta"] != 0
        touched[g] = False
        if method == "single":
            row[touched] = np.minimum(row[touched], lo[touched])
        elif method == "complete":
            row[touched] = np.where(np.isinf(row[touched]), hi[touched],
                                    np.maximum(row[touched], hi[touched]))  # fmt: skip
        else:
            row[touched] += fix[touched] / (size[g] * size[touched])
        self.set_row(g, row)


def _check(x, centers, n_min, method, metric, d_min, average_delta):
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
    if d_min < 0:
        raise ConfigError(f"d_min must be ≥ 0, got {d_min}", where="hac.gradual.d_min")
    if average_delta not in AVERAGE_DELTAS:
        raise ConfigError(
            f"unknown average_delta {average_delta!r}",
            where="hac.gradual.average_delta",
            fix=f"use one of {AVERAGE_DELTAS}",
        )
    return x, centers


def gradual_sharing(
    x: np.ndarray,
    centers: np.ndarray,
    n_min: int,
    method: str,
    metric: str = "euclidean",
    monotone: bool = False,
    ledger: Ledger | None = None,
    d_min: float = 0.0,
    average_delta: str = "stored",
    policy: Policies = None,
    logs: dict[int, ReleaseLog] | None = None,
    transport: Transport = INPROCESS,
) -> GradualResult:
    """Run Algorithm 4 on samples ``x`` split by ``centers`` (one integer label per row).

    The rows of ``x`` are only used to build each centre object (:class:`.centre.HacCentre`:
    its block, its rows' ids, its policy, its release log); the server
    (:func:`gradual_server`) reaches them through ``transport``
    (:func:`fedclust.federation.federate`). ``monotone``: enforce monotone merge heights
    afterwards (Fig 4.7 variant); ``d_min``: privacy option of §4.2.1.3; ``average_delta``:
    ``"stored"`` (thesis bookkeeping) or ``"current"`` (approximation). ``policy``: the centres'
    disclosure policies (default: configured; ``n_min`` below a floor or no per-sample opt-in is
    a :class:`ConfigError`); ``logs``: release logs by centre index.
    """
    x, centers = _check(x, centers, n_min, method, metric, d_min, average_delta)
    m = int(centers.max()) + 1
    pols = [policy_of(policy, f"center{k}", k) for k in range(m)]
    require(pols, n_min, PER_SAMPLE["gradual"] + (("hac.gradual.samples",) if int(n_min) == 1
                                                  else ()), "hac.gradual.n_min")  # fmt: skip
    blocks = [np.flatnonzero(centers == k) for k in range(m)]
    cents = [HacCentre(f"center{k}", x[s], n_min=int(n_min), method=method, metric=metric,
                       disclosure=pols[k], log=None if logs is None else logs.get(k),
                       d_min=d_min, average_delta=average_delta)
             for k, s in enumerate(blocks)]  # fmt: skip
    led = ledger if ledger is not None else Ledger()
    server = gradual_server(int(n_min), method, metric, average_delta, monotone, home=centers)
    res = federate(cents, server, ledger=led, transport=transport)
    res.ledger = led
    return res


def gradual_server(n_min: int, method: str, metric: str = "euclidean",
                   average_delta: str = "stored", monotone: bool = False,
                   home: np.ndarray | None = None):  # fmt: skip
    """The server function of Algorithm 4 (``server(proxies) -> GradualResult``): it sees only
    the centres' answers and keeps its own copy of the public state (module docstring).
    ``home``: the leaves' layout, each leaf's centre index (in-process: the workflow's rows, so
    the tree's leaves are its samples); default the centres' samples stacked in their order.
    Centre k's rows are the leaves ``flatnonzero(home == k)`` in order."""
    check_method(method, metric, where="hac.gradual")
    if average_delta not in AVERAGE_DELTAS:
        raise ConfigError(
            f"unknown average_delta {average_delta!r}",
            where="hac.gradual.average_delta",
            fix=f"use one of {AVERAGE_DELTAS}",
        )

    def server(proxies: list) -> GradualResult:
        run = _GradualRun(list(proxies), int(n_min), method, metric, average_delta)
        return run.run(monotone, home)

    return server


class _GradualRun:
    """One run of the server side: the requests (each carrying the public updates the centre
    has not seen yet), the merge decisions, the global × global distances."""

    def __init__(self, proxies: list, n_min: int, method: str, metric: str, delta: str):
        self.px, self.m, self.n_min = proxies, len(proxies), n_min
        self.method = method
        self.metric = "cosine" if metric == "correlation" else metric
        self.delta_mode = delta
        self.proto = gradual_protocols(n_min)
        self.pending: list[list] = [[] for _ in proxies]  # public updates not yet delivered
        self.first: list[dict] = [{} for _ in proxies]  # the layout, with the next request

    # ---- messages --------------------------------------------------------------------------
    def _request(self, k: int, extra: dict | None = None) -> dict:
        msg = {**self.first[k], **(extra or {})}
        self.first[k] = {}
        ev, self.pending[k] = self.pending[k], []
        if ev:
            msg["events"] = np.array([e for e, _ in ev], dtype=float)
            cs = [c for _, c in ev if c is not None]
            if cs:
                msg["centroids"] = np.vstack(cs)
        return msg

    def _call(self, k: int, method: str, kind: str, t: int, proto, extra: dict | None = None):
        return self.px[k].call(method, self._request(k, extra), t, kind, proto,
                               self.proto["request"])  # fmt: skip

    def _call_all(self, method: str, kind: str, t: int, proto, who: list[int] | None = None
                  ) -> list:  # fmt: skip
        who = list(range(self.m)) if who is None else who
        out = call_all([self.px[k] for k in who], method, [self._request(k) for k in who], t,
                       kind, proto, self.proto["request"])  # fmt: skip
        if any(a is None for a in out):
            raise ConfigError(
                f"a centre refused gradual sharing's {kind!r} message (its disclosure floor above "
                f"n_min = {self.n_min}, no opt-in to the per-sample protocols, or too few samples)",
                where="hac.gradual.n_min",
                fix="use n_min >= the centres' floors; they opt in under "
                "disclosure.default.allow_per_sample",
            )
        return out

    def _broadcast(self, event: list, centroid: np.ndarray | None = None, skip: int = -1) -> None:
        for k in range(self.m):
            if k != skip:
                self.pending[k].append((event, centroid))

    # ---- the run -----------------------------------------------------------------------------
    def _layout(self, home: np.ndarray | None) -> np.ndarray:
        """Every leaf's centre: the given layout (its counts must be the centres' sizes), else
        the centres' samples stacked in their order."""
        setup = self._call_all("gradual_setup", "setup", 0, self.proto["setup"])
        sizes = [int(a["n"]) for a in setup]
        if home is None:
            home = np.repeat(np.arange(self.m), sizes)
        home = np.asarray(home, dtype=np.int64)
        if np.bincount(home, minlength=self.m).tolist() != sizes:
            raise InputDataError("the leaves' layout does not match the centres' sizes",
                                 where="hac gradual sharing setup")  # fmt: skip
        if max(sizes) < self.n_min:
            raise InputDataError(
                f"no center holds n_min = {self.n_min} samples: nothing can ever be shared",
                where="gradual sharing input",
                fix="lower n_min below the size of the largest center (Algorithm 4 'Ensure')",
            )
        return home

    def run(self, monotone: bool, home: np.ndarray | None = None) -> GradualResult:
        home = self._layout(home)
        n, m, n_min = len(home), self.m, self.n_min
        all_public = n_min == 1
        g_max = n if all_public else n // n_min
        delta = self.method == "average" and self.delta_mode == "stored" and m > 1
        self.cfg = {"method": self.method, "metric": self.metric, "n_min": n_min,
                    "all_public": all_public, "delta": delta}  # fmt: skip
        self.pub = pub = _Public(n, m, g_max, home, self.method in ("centroid", "ward"))
        self.server = server = GradualServer(pub, self.cfg)
        self.first = [{"home": home.astype(np.int64), "index": k} for k in range(m)]
        self.shares = 0
        if all_public:  # every singleton is published at once (per-sample rows): all exact
            rows = None
            for a in self._call_all("gradual_samples", "samples", 0, self.proto["samples"]):
                r = np.asarray(a["rows"], dtype=float)
                rows = np.zeros((n, r.shape[1])) if rows is None else rows
                rows[np.asarray(a["cluster"], dtype=int)] = r
            pub.publish_all()
            if pub.pub_sum is not None:
                pub.pub_sum = {s: rows[s].copy() for s in range(n)}
            server.d[:] = squareform(pdist(rows, self.metric))
            np.fill_diagonal(server.d, np.inf)
            server.cache = _MinCache(server.d)
            self.shares = n
        z = np.zeros((n - 1, 4))
        for t in range(n - 1):
            z[t] = self._round(t)
        bad = server.bad + sum(int(a["bad_radicands"]) for a in self._call_all(
            "gradual_finish", "finish", max(n - 2, 0), self.proto["finish"]))  # fmt: skip
        inv = count_inversions(z)
        if monotone:
            z = enforce_monotone(z)
        return GradualResult(Z=z, inversions=inv, shares=self.shares, bad_radicands=bad)

    def _round(self, t: int) -> list:
        """One merge: the centres' candidates and the server's own minimum decide it; it is
        broadcast, the absorbing centre sends its row, the parts that reached n_min are shared."""
        pub, server = self.pub, self.server
        # a centre without a local cluster has no candidate (what everyone knows): not asked
        local = pub.home[pub.size > 0]
        who = np.flatnonzero(np.bincount(local[local >= 0], minlength=self.m)).tolist()
        cands = {k: {"reported": np.inf} for k in range(self.m)}
        if who:
            answers = self._call_all("gradual_candidate", "min", t, self.proto["candidate"], who)
            cands.update(zip(who, answers, strict=True))
        best = min(range(self.m), key=lambda k: (cands[k]["reported"], k))
        h_srv, r, col = server.cache.best()
        if np.isfinite(h_srv) and h_srv <= cands[best]["reported"]:
            i, j, h = int(pub.gslot[r]), int(pub.gslot[col]), h_srv
        else:
            i, j = (int(v) for v in cands[best]["pair"])
            h = float(cands[best]["reported"])
        if not np.isfinite(h):
            raise InputDataError(
                "gradual sharing is stuck: no two clusters can communicate",
                where="hac gradual sharing",
                fix="n_min must not exceed the size of every center (Algorithm 4 'Ensure')",
            )
        gi, gj = pub.gidx[i], pub.gidx[j]
        if gi >= 0 and gj < 0:
            i, j, gi, gj = j, i, gj, gi  # j: the global one
        if (gi >= 0) == (gj >= 0) and i > j:
            i, j, gi, gj = j, i, gj, gi
        # i survives, except for global + local where the global (j) survives
        ni, nj = pub.size[i], pub.size[j]
        row = [min(pub.cid[i], pub.cid[j]), max(pub.cid[i], pub.cid[j]), h, ni + nj]
        k = int(pub.home[i])
        self._broadcast([0, i, j, h, t])
        pub.merge(i, j, t)
        if gi < 0 and gj < 0:  # local / local in centre k
            self._shares(k, t)
        elif gi >= 0 and gj >= 0:  # global / global
            server.merge_globals(int(gi), int(gj), h, ni, nj)
            for c in range(self.m):
                self._shares(c, t)
        else:  # local i (centre k) joins global j: k sends i's distances to the globals
            msg = self._call(k, "gradual_absorb", "local row", t, self.proto["distances"])
            server.absorb_local(int(gj), msg, h, nj, ni)
            self._shares(k, t)
        return row

    def _shares(self, k: int, t: int) -> None:
        for s in self.pub.ready(k, self.n_min):
            self.shares += self._share(k, s, t)

    def _share(self, k: int, slot: int, t: int) -> int:
        """Centre k publishes the centroid of ``slot``'s unshared part (ShareCentroid, Alg. 4);
        the others correct their distances to it (§3.3.3.3)."""
        pub, server, proto = self.pub, self.server, self.proto
        if pub.size[slot] == 0:
            return 0
        first = pub.gidx[slot] < 0
        msg = self._call(k, "gradual_publish", "centroid", t, proto["centroid"], {"cluster": slot})
        if msg is None:  # the centre's release log refuses: the part stays unshared for now
            return 0
        c, p = np.asarray(msg["centroid"], dtype=float), int(msg["size"])
        g, _ = pub.published(slot, k, c, p)
        row = None
        if first or self.cfg["delta"]:
            row = self._call(k, "gradual_row", "global row" if first else "delta", t,
                             proto["distances"])  # fmt: skip
            if first:
                server.new_global(g, row)
        self._broadcast([1, slot, k, p, 0], c, skip=k)
        aggs = []
        if self.method not in ("centroid", "ward"):  # those are recomputed from centroids
            for r in range(self.m):
                gl = np.flatnonzero(pub.wait[: pub.n_global, r] > 0)
                if r != k and (gl != g).any():
                    aggs.append(self._call(r, "gradual_correction", "correction", t,
                                           proto["distances"]))  # fmt: skip
        server.correct(g, p, aggs, row if (row is not None and "delta" in row) else None)
        if self.method in ("centroid", "ward"):
            self._recompute_row(g, t)
        return 1

    def _recompute_row(self, g: int, t: int) -> None:
        """Centroid / Ward: d(g, B) for every global B recomputed from the centroids, each by
        the centre holding most of the pair's unshared points (the server when none holds
        any)."""
        pub, server = self.pub, self.server
        act = np.flatnonzero(pub.gsize[: pub.n_global] > 0)
        act = act[act != g]
        if not act.size:
            return
        sg = int(pub.gslot[g])
        both = pub.wait[act] + pub.wait[g]
        view = np.where(both.max(axis=1) > 0, both.argmax(axis=1), -1)
        row = server.d[g].copy()
        for k in np.unique(view):
            bs = act[view == k]
            if k < 0:
                ca = pub.public_centroid(g)
                vals = np.linalg.norm(np.vstack([pub.public_centroid(b) for b in bs]) - ca, axis=1)
                if self.method == "ward":
                    na, nb = pub.gsize[g], pub.gsize[bs]
                    vals = vals * np.sqrt(2 * na * nb / (na + nb))
            else:
                req = {"cluster": sg, "to": pub.gslot[bs].astype(np.int64)}
                vals = self._call(int(k), "gradual_view", "view distances", t,
                                  self.proto["distances"], req)["d"]  # fmt: skip
            row[bs] = vals
        server.set_row(g, row)
