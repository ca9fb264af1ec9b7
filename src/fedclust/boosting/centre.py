"""A boosting centre: holds only its own training rows and answers the server's requests
(seed 003 §9.2), one method per message of ``protocols.py``.

Disclosure (the centre's own floor, ``boosting.min_samples``): every aggregate it sends covers
≥ floor of its samples. Histogram bins are merged into runs of ≥ floor samples that tile the
feature's bins (no run end sits at the centre's extreme values,
:func:`fedclust.boosting.grid.merge_runs`); vote and union candidates need ≥ floor samples on
both sides, and any two cuts of one feature whose gains a centre sends at one node (in the vote,
the union and the chosen split's sums of that tree) have left sides that differ by ≥ floor rows
(kept greedily, best gain first: two nested sides one patient apart would give that patient's
label from the two gains and the totals); a split's child sums are sent for both children
together or not at all (either one follows from the other and the node's total), and not when
the cut falls inside one of the node's merged runs with fewer than floor samples on one side
(the sums would then tell that part of the run apart). A node whose split was not reported
stays dark below: its subtree is never reported (a child's total minus its sibling's would be
the other child). Differences between overlapping aggregates of different features are not
blocked: that needs secure aggregation or noise (docs/ARCHITECTURE.md, boosting).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..federation import Abstain
from ..federation.disclosure import DisclosurePolicy
from ..federation.guard import centre_policy
from . import grid as GR
from . import tree as T
from .protocols import method_protocols, protocols


def without_floor(policy: DisclosurePolicy) -> DisclosurePolicy:
    """A centre's own settings with no sample floor (the exactness check: histogram_nofloor)."""
    return replace(policy, nfilter_subset=1, nfilter_tab=1)


def row(a: Any) -> np.ndarray:
    """A vector of sums as one row (1 × k): its leading axis never counts samples (the guard
    refuses an aggregate with one row per sample)."""
    return np.asarray(a, dtype=np.float64).reshape(1, -1)


class Centre:
    """One data holder: raw training features ``X`` (n × d), labels ``y`` ∈ {0, 1}.

    Its floor is its own: ``max(min_samples, disclosure.nfilter_subset)`` with ``disclosure``
    the centre's :class:`~fedclust.federation.disclosure.DisclosurePolicy` (given, or its entry
    of the configured ``disclosure`` section), the floor the centre-side guard checks too; it
    answers each method under its own declared protocol (``protocols``)."""

    def __init__(
        self, cid: str, X: np.ndarray, y: np.ndarray, params: T.Params, min_samples: int = 1,
        disclosure: DisclosurePolicy | None = None,
    ):  # fmt: skip
        self.cid = str(cid)
        self.X = np.asarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float32)
        self.n_samples = int(len(self.y))
        self.params = params
        self.min_samples = max(1, int(min_samples))
        self.disclosure = disclosure  # sets the floor and the declared protocols
        self.codes: np.ndarray | None = None
        self.n_bins: np.ndarray | None = None
        self.margin: np.ndarray | None = None
        self._root_ok = False
        self._sent: dict[int, bool] = {}  # node -> its split's child sums were sent
        self._runs: set[int] = set()  # nodes whose merged histogram runs were sent
        # per node, per feature: the left counts of the cuts whose sums (gain, child sums) were
        # sent this tree (cuts of one feature at one node are nested: a count is a row set)
        self._told: dict[int, dict[int, list[int]]] = {}

    @property
    def disclosure(self) -> DisclosurePolicy | None:
        return self._disclosure

    @disclosure.setter
    def disclosure(self, policy: DisclosurePolicy | None) -> None:
        """The centre's own settings; its floor and declared protocols follow them (a site's
        disclosure file, set once the centre is built from its file, binds it too)."""
        self._disclosure = policy
        self.floor = centre_policy(self).floor(self.min_samples)
        self.protocols = method_protocols(protocols(self.floor))

    # ------------------------------------------------------------------------- the grid
    def moments(self, parameters: Any, config: dict) -> dict | Abstain:
        if self.n_samples < self.floor:
            return Abstain("fewer samples than the centre's floor")
        m = GR.moments(self.X)
        return {**m, "sum": row(m["sum"]), "sumsq": row(m["sumsq"])}

    def sketch(self, parameters: Any, config: dict) -> dict | Abstain:
        if self.n_samples < self.floor:
            return Abstain("fewer samples than the centre's floor")
        return GR.sketch_message(self.X, [np.asarray(e) for e in config["edges"]], self.floor)

    def set_grid(self, parameters: Any, config: dict) -> dict:
        """Bin the rows to the shared grid; the model starts at the base score."""
        grid = GR.Grid(tuple(np.asarray(c, dtype=np.float64) for c in config["cuts"]))
        self.codes, self.n_bins = GR.encode(self.X, grid), grid.n_bins
        self.width = grid.width
        self.margin = np.full(self.n_samples, self.params.base_margin, dtype=np.float32)
        self._gradients()
        return {}

    # ------------------------------------------------------------------------ the model
    def _gradients(self) -> None:
        self.g, self.h = T.gradients(self.margin, self.y)
        self._root_ok, self._sent, self._runs, self._told = False, {}, set(), {}

    def add_trees(self, parameters: Any, config: dict) -> dict:
        """The server's finished trees join the model: margins and gradients move on."""
        for t in T.unpack(config):
            self.margin = self.margin + np.asarray(t.value, np.float32)[T.apply(t, self.codes)]
        self._gradients()
        return {}

    def totals(self, parameters: Any, config: dict) -> dict | Abstain:
        """n, Σg, Σh of the root of the next tree."""
        ok = self.n_samples >= self.floor
        self._root_ok, self._sent, self._runs, self._told = ok, {}, set(), {}
        if not ok:
            return Abstain("fewer samples than the centre's floor")
        return {"n": self.n_samples, "g": float(np.sum(self.g, dtype=np.float64)),
                "h": float(np.sum(self.h, dtype=np.float64))}  # fmt: skip

    # ---------------------------------------------------------------- node statistics
    def _nodes(self, config: dict) -> tuple[np.ndarray, set[int]]:
        """Each row's node in the server's partial tree, and the nodes this centre may report:
        the root and the children of every split whose sums it sent, if they hold ≥ floor rows."""
        t = T.Tree.from_arrays({k: config[k] for k in ("feature", "cut", "left", "right")}
                               | {"value": np.zeros(len(config["feature"]))})  # fmt: skip
        ok = {0} if self._root_ok else set()
        for u, f in enumerate(t.feature):
            if f >= 0 and self._sent.get(u, False):
                ok |= {t.left[u], t.right[u]}
        where = T.apply(t, self.codes)
        n = np.bincount(where, minlength=t.n_nodes)
        return where, {v for v in ok if n[v] >= self.floor}

    def _hist(self, rows: np.ndarray) -> np.ndarray:
        return T.histogram(self.codes[rows], self.g[rows], self.h[rows], self.width)

    def histograms(self, parameters: Any, config: dict) -> dict | Abstain:
        """Per node the merged per-bin (n, Σg, Σh) of every feature."""
        where, ok = self._nodes(config)
        keys = ("nodes", "bin_feature", "bin_start", "bin_end", "bin_n", "bin_g", "bin_h")
        out = {k: [] for k in keys}
        for v in [int(v) for v in config["nodes"] if int(v) in ok]:
            hist = self._hist(where == v)
            runs = GR.merge_runs(hist[2], self.floor, self.n_bins)
            self._runs.add(v)
            out["nodes"].append(v)
            out["bin_feature"].append(runs.feature.astype(np.int32))
            out["bin_start"].append(runs.start.astype(np.int32))
            out["bin_end"].append(runs.end.astype(np.int32))
            out["bin_n"].append(np.rint(runs.sums(hist[2])).astype(np.int64))
            out["bin_g"].append(row(runs.sums(hist[0])))
            out["bin_h"].append(row(runs.sums(hist[1])))
        if not out["nodes"]:
            return Abstain("no node with enough samples to report")
        out["nodes"] = np.asarray(out["nodes"], np.int32)
        return out

    def _candidates(self, rows: np.ndarray) -> tuple[T.Candidates, int]:
        hist = self._hist(rows)
        G, H, N = (float(hist[i, 0].sum()) for i in range(3))
        return T.candidates(hist, self.n_bins, G, H, N, self.params, self.floor), int(N)

    def votes(self, parameters: Any, config: dict) -> dict | Abstain:
        """D6.2's step 1: per node the top-S splits by local gain L_split = loss_chg / 2 (γ
        dropped), their side counts, and N_p. ``top`` ≤ 0: every admissible split."""
        (where, ok), top = self._nodes(config), int(config["top"])
        out = {k: [] for k in ("nodes", "n", "feature", "cut", "gain", "n_left", "n_right")}
        for v in [int(v) for v in config["nodes"] if int(v) in ok]:
            c, n = self._candidates(where == v)
            loss = np.where(c.valid & (c.loss > 0), c.loss, np.float32(-np.inf)).ravel()
            order = np.argsort(-loss, kind="stable")  # ties: (feature, cut) order, as XGBoost
            order = order[np.isfinite(loss[order])]
            order = self._apart(v, order, c)  # best first, pairwise ≥ floor apart
            if top > 0:
                order = order[:top]
            self._tell(v, order, c)
            f, b = np.unravel_index(order, c.loss.shape)
            out["nodes"].append(v)
            out["n"].append(n)
            out["feature"].append(f.astype(np.int32))
            out["cut"].append((b + 1).astype(np.int32))
            out["gain"].append(row(0.5 * c.loss.ravel()[order].astype(np.float64)))
            out["n_left"].append(np.rint(c.NL.ravel()[order]).astype(np.int64))
            out["n_right"].append(np.rint(c.NR.ravel()[order]).astype(np.int64))
        if not any(len(a) for a in out["n_left"]):  # nothing to propose or score
            return Abstain("no admissible split with enough samples on both sides")
        out["nodes"], out["n"] = np.asarray(out["nodes"], np.int32), np.asarray(out["n"])
        return out

    def union(self, parameters: Any, config: dict) -> dict | Abstain:
        """D6.2 gap 2, second round: L_split of every candidate in the union the server sends
        (those with ≥ floor samples on both sides; the rest stay unreported, i.e. 0)."""
        where, ok = self._nodes(config)
        qn, qf, qc = (np.asarray(config[k]) for k in ("index_node", "index_feature", "index_cut"))
        out = {k: [] for k in ("nodes", "n", "index", "gain", "n_left", "n_right")}
        for v in [int(v) for v in config["nodes"] if int(v) in ok]:
            idx = np.flatnonzero(qn == v)
            c, n = self._candidates(where == v)
            i = (qf[idx], qc[idx] - 1)
            both = (c.NL[i] >= self.floor) & (c.NR[i] >= self.floor)
            flat = np.ravel_multi_index(i, c.loss.shape)
            cand = np.flatnonzero(both)
            cand = cand[np.argsort(-c.loss[i][cand], kind="stable")]  # best first
            keep = np.isin(flat, self._apart(v, flat[cand], c))
            both &= keep
            self._tell(v, flat[both], c)
            out["nodes"].append(v)
            out["n"].append(n)
            out["index"].append(idx[both].astype(np.int32))
            out["gain"].append(row(0.5 * c.loss[i][both].astype(np.float64)))
            out["n_left"].append(np.rint(c.NL[i][both]).astype(np.int64))
            out["n_right"].append(np.rint(c.NR[i][both]).astype(np.int64))
        if not any(len(a) for a in out["n_left"]):  # nothing to propose or score
            return Abstain("no admissible split with enough samples on both sides")
        out["nodes"], out["n"] = np.asarray(out["nodes"], np.int32), np.asarray(out["n"])
        return out

    def split_sums(self, parameters: Any, config: dict) -> dict | Abstain:
        """The chosen splits' child sums, one entry per (node, side): both children, or the
        only non-empty one (which is the node's total), or nothing (see the module doc)."""
        where, reportable = self._nodes(config)
        out = {k: [] for k in ("nodes", "side", "n", "g", "h")}
        for v, j, k in zip(config["nodes"], config["split_feature"], config["split_cut"],
                           strict=True):  # fmt: skip
            v, j, k = int(v), int(j), int(k)
            rows = where == v
            left = rows & (self.codes[:, j] < k)
            sides = (left, rows & ~left)
            counts = [int(m.sum()) for m in sides]
            ok = v in reportable and all(c >= self.floor or c == 0 for c in counts)
            if ok and self.floor > 1 and v in self._runs:
                ok = self._cut_between_runs(rows, j, k)
            if ok and self.floor > 1 and v in self._told:
                ok = self._far(v, j, counts[0])
                if ok:
                    self._told[v].setdefault(j, []).append(counts[0])
            self._sent[v] = ok
            if not ok:
                continue
            for side, (m, c) in enumerate(zip(sides, counts, strict=True)):
                if c:
                    out["nodes"].append(v)
                    out["side"].append(side)
                    out["n"].append(c)
                    out["g"].append(float(np.sum(self.g[m], dtype=np.float64)))
                    out["h"].append(float(np.sum(self.h[m], dtype=np.float64)))
        if not out["nodes"]:
            return Abstain("no split with enough samples on both sides")
        return {k: (row(v) if k in ("g", "h") else np.asarray(v)) for k, v in out.items()}

    def _far(self, v: int, j: int, nl: int) -> bool:
        """A cut of feature j at node v with ``nl`` rows on the left is as far as the floor from
        every cut of j whose sums were sent at v (or is one of them: nested sets, same count)."""
        return all(nl == t or abs(nl - t) >= self.floor for t in self._told.get(v, {}).get(j, ()))

    def _apart(self, v: int, order: np.ndarray, c: T.Candidates) -> np.ndarray:
        """The candidates (flat indices into ``c``, best first) kept greedily so that any two
        cuts of one feature at node v — these and those already sent — have left sides that
        differ by ≥ floor rows: the difference of two gains then covers ≥ floor patients, not
        one patient's label (the same idea as :func:`~.grid.merge_runs` for bins)."""
        if self.floor <= 1:
            return order
        told = {j: list(t) for j, t in self._told.get(v, {}).items()}
        keep = []
        f, _ = np.unravel_index(order, c.loss.shape)
        nl = np.rint(c.NL.ravel()[order]).astype(np.int64)
        for o, j, m in zip(order, f, nl, strict=True):
            t = told.setdefault(int(j), [])
            if all(m == x or abs(m - x) >= self.floor for x in t):
                keep.append(o)
                t.append(int(m))
        return np.asarray(keep, dtype=order.dtype)

    def _tell(self, v: int, flat: np.ndarray, c: T.Candidates) -> None:
        """Record the left counts of the candidates whose gains go to the server."""
        told = self._told.setdefault(v, {})
        f, _ = np.unravel_index(flat, c.loss.shape)
        for j, m in zip(f, np.rint(c.NL.ravel()[flat]).astype(np.int64), strict=True):
            told.setdefault(int(j), []).append(int(m))

    def _cut_between_runs(self, rows: np.ndarray, j: int, k: int) -> bool:
        """The cut does not split one of this node's merged runs of feature j into a part
        below the floor (the run's total was sent with the histogram)."""
        n = np.bincount(self.codes[rows, j], minlength=int(self.n_bins[j]))[None, :]
        runs = GR.merge_runs(n, self.floor)
        for s, e in zip(runs.start, runs.end, strict=True):
            if s < k <= e:  # the run holds bins below and at/above the cut
                below, above = n[0, s:k].sum(), n[0, k : e + 1].sum()
                return bool(min(below, above) >= self.floor)
        return True

    # ----------------------------------------------------------- local trees (baselines)
    def local_trees(self, parameters: Any, config: dict) -> dict | Abstain:
        """``rounds`` trees boosted on this centre's rows from the current model (Flower's
        bagging / cyclic XGBoost); every leaf holds ≥ floor rows."""
        if self.n_samples < self.floor:
            return Abstain("fewer samples than the centre's floor")
        b = T.LocalBuilder(self.codes, self.y, self.n_bins, self.params, self.floor,
                           margin=self.margin.copy())  # fmt: skip
        trees = b.fit(int(config["rounds"]))
        return {
            **T.pack(trees),
            "leaf_n": [np.asarray(t.count)[t.leaves()] for t in trees],
            "n": self.n_samples,
        }
