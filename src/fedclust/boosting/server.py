"""The boosting server (seed 003 §9.2): talks to the centres only through their proxies.

- :func:`build_grid` — the shared grid (moments, then the merged lattice sketch; ``grid.py``).
- :func:`boost` — federated trees, one level at a time (:func:`fedclust.boosting.tree.grow`):
  ``histogram`` (the centres' per-bin sums are added — a merged run spread over its bins by the
  grid's global bin counts — and the best split is XGBoost's on the global histogram: exact
  when no bin is merged) or ``vote`` (D6.2: each centre proposes its
  top-S splits by local gain with N_p, the server takes argmax Σ_p N_p·L_{s,p}; ``zero``:
  unreported candidates count 0, ``union``: a second round in which every centre scores the
  union of the proposals). Then the chosen splits' child sums (D6.2 gap 3: the stopping rules
  and the leaf values w = −G/(H+λ) need global sums) and, when a tree is done, the tree to every
  centre.
- :func:`bagging` / :func:`cyclic` — Flower's tree-bagging and cyclic XGBoost: every centre (or
  one per round, in turn) boosts trees on its own rows from the current model; the server adds
  them to the model.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import InputDataError
from ..federation import call_all
from . import grid as GR
from . import tree as T
from .protocols import Protocols

_FEWER = (
    "every centre holds fewer rows than its floor: lower boosting.min_samples or use fewer centres"
)


@dataclass
class Model:
    """A federated ensemble: the grid, its trees, the base margin; the wall time of the grid
    exchange and of the trees (benchmarks only)."""

    grid: GR.Grid
    trees: list[T.Tree]
    base_margin: float
    seconds: float = 0.0
    grid_seconds: float = 0.0
    rounds: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    def margin(self, codes: np.ndarray) -> np.ndarray:
        return T.predict_margin(self.trees, codes, self.base_margin)


def _call(proxies, method: str, msg: dict, rnd: int, kind: str, up, down) -> list[dict | None]:
    """One request to every centre, sent all at once where the transport can (a deployment's
    centres answer in parallel); replies in ``proxies``' order, ``None`` for an abstention."""
    return call_all(list(proxies), method, msg, rnd, kind, up, down)


def build_grid(
    proxies: Sequence[Any], P: Protocols, method: str = "quantile", max_bin: int = 32,
    sketch_bins: int = 64, range_sd: float = 4.0,
) -> GR.Grid:  # fmt: skip
    """Round 0: the centres' moments give a public lattice, their merged cell counts the cuts;
    the grid goes to every centre, which bins its rows."""
    got = [m for m in _call(proxies, "moments", {}, 0, "moments", P.moments, P.grid_request) if m]
    if not got:
        raise InputDataError("every centre abstained from the grid's moments",
                             where="boosting grid", fix=_FEWER)  # fmt: skip
    edges = GR.lattice(got, sketch_bins, range_sd)
    sk = [m for m in _call(proxies, "sketch", {"edges": edges}, 0, "sketch", P.sketch,
                           P.grid_request) if m]  # fmt: skip
    counts = GR.place(sk, (len(edges), max(len(e) for e in edges) + 1))
    grid = GR.choose_cuts(counts, edges, max_bin, method)
    _call(proxies, "set_grid", {"cuts": list(grid.cuts)}, 0, "grid", P.ack, P.grid)
    return replace(grid, counts=GR.bin_counts(counts, edges, grid))


def _partial(tree: T.Tree) -> dict[str, np.ndarray]:
    a = tree.arrays()
    return {k: a[k] for k in ("feature", "cut", "left", "right")}


def _add(out: np.ndarray, f, c, v) -> None:
    f, c = np.asarray(f, np.int64).ravel(), np.asarray(c, np.int64).ravel()
    np.add.at(out, (f, c), np.asarray(v, np.float64).ravel())


@dataclass
class _Level:
    """What one level's requests need: the tree so far (nodes not yet split are leaves)."""

    tree: T.Tree
    rnd: int


def _histogram_choice(proxies, P, lvl, nodes, stats, grid, params) -> dict[int, tuple[int, int]]:
    req = {**_partial(lvl.tree), "nodes": np.asarray(nodes, np.int32)}
    replies = _call(proxies, "histograms", req, lvl.rnd, "histogram", P.histogram, P.node_request)
    d, width = len(grid.cuts), grid.width
    hist = {v: np.zeros((3, d, width)) for v in nodes}
    for r in filter(None, replies):  # merged runs spread by the grid's global bin counts
        for i, v in enumerate(r["nodes"]):
            run = (r["bin_feature"][i], r["bin_start"][i], r["bin_end"][i])
            for q, key in enumerate(("bin_g", "bin_h", "bin_n")):
                GR.spread(hist[int(v)][q], *run, r[key][i], grid.counts)
    out = {}
    for v, (G, H, N) in zip(nodes, stats, strict=True):
        if hist[v][2].sum() == 0:
            continue
        best = T.best_split(T.candidates(hist[v], grid.n_bins, G, H, N, params))
        if best is not None:
            out[v] = best
    return out


def _vote_choice(proxies, P, lvl, nodes, grid, top, variant) -> dict[int, tuple[int, int]]:
    req = {**_partial(lvl.tree), "nodes": np.asarray(nodes, np.int32), "top": int(top)}
    replies = _call(proxies, "votes", req, lvl.rnd, "vote", P.vote, P.node_request)
    shape = (len(grid.cuts), grid.width - 1)
    score = {v: np.zeros(shape) for v in nodes}
    proposed = {v: np.zeros(shape, dtype=bool) for v in nodes}
    for r in filter(None, replies):
        for i, v in enumerate(r["nodes"]):
            f, c = np.asarray(r["feature"][i]), np.asarray(r["cut"][i]) - 1
            _add(score[int(v)], f, c, r["n"][i] * np.asarray(r["gain"][i]))
            proposed[int(v)][f, c] = True
    if variant == "union":
        qn, qf, qc = [], [], []
        for v in nodes:
            f, c = np.nonzero(proposed[v])
            qn += [v] * len(f)
            qf += f.tolist()
            qc += (c + 1).tolist()
        qn, qf, qc = (np.asarray(a, np.int32) for a in (qn, qf, qc))
        req = {**_partial(lvl.tree), "nodes": np.asarray(nodes, np.int32), "index_node": qn,
               "index_feature": qf, "index_cut": qc}  # fmt: skip
        replies = _call(proxies, "union", req, lvl.rnd, "union", P.union, P.node_request)
        score = {v: np.zeros(shape) for v in nodes}
        for r in filter(None, replies):
            for i, v in enumerate(r["nodes"]):
                idx = np.asarray(r["index"][i], np.int64)
                _add(score[int(v)], qf[idx], qc[idx] - 1, r["n"][i] * np.asarray(r["gain"][i]))
    out = {}
    for v in nodes:
        s = np.where(proposed[v], score[v], -np.inf)
        i = int(np.argmax(s))  # first maximum: ties in (feature, cut) order
        if proposed[v].any() and s.flat[i] > 0:
            j, b = np.unravel_index(i, shape)
            out[v] = (int(j), int(b) + 1)
    return out


def _split_sums(proxies, P, lvl, choice: dict[int, tuple[int, int]]) -> dict[int, T.Split]:
    if not choice:
        return {}
    nodes = sorted(choice)
    req = {**_partial(lvl.tree), "nodes": np.asarray(nodes, np.int32),
           "split_feature": np.asarray([choice[v][0] for v in nodes], np.int32),
           "split_cut": np.asarray([choice[v][1] for v in nodes], np.int32)}  # fmt: skip
    replies = _call(proxies, "split_sums", req, lvl.rnd, "split_sums", P.split_sums,
                    P.node_request)  # fmt: skip
    sums = {v: np.zeros((2, 3)) for v in nodes}
    seen = set()
    for r in filter(None, replies):
        g, h = np.ravel(r["g"]), np.ravel(r["h"])
        for v, side, *gh_n in zip(r["nodes"], r["side"], g, h, r["n"], strict=True):
            sums[int(v)][int(side)] += gh_n
            seen.add(int(v))
    return {v: T.Split(*choice[v], *sums[v][0], *sums[v][1]) for v in nodes if v in seen}


def boost(
    proxies: Sequence[Any], P: Protocols, params: T.Params, n_trees: int, *,
    scheme: str = "histogram", top: int = 0, variant: str = "zero", grid_cfg: dict | None = None,
) -> Model:  # fmt: skip
    """Federated boosting with the ``histogram`` or the top-S ``vote`` split finding."""
    if scheme not in ("histogram", "vote"):
        raise ValueError(f"unknown federated scheme {scheme!r}")
    t0 = time.perf_counter()
    grid = build_grid(proxies, P, **(grid_cfg or {}))
    t1 = time.perf_counter()
    trees: list[T.Tree] = []
    for rnd in range(1, int(n_trees) + 1):
        tot = [m for m in _call(proxies, "totals", {}, rnd, "totals", P.totals, P.node_request)
               if m]  # fmt: skip
        if not tot:
            raise InputDataError(f"every centre abstained from tree {rnd}",
                                 where="boosting", fix=_FEWER)  # fmt: skip
        root = tuple(float(sum(m[k] for m in tot)) for k in ("g", "h", "n"))
        lvl = _Level(T.Tree(), rnd)

        def find(nodes, stats, lvl=lvl):
            if scheme == "histogram":
                choice = _histogram_choice(proxies, P, lvl, nodes, stats, grid, params)
            else:
                choice = _vote_choice(proxies, P, lvl, nodes, grid, top, variant)
            split = _split_sums(proxies, P, lvl, choice)
            return [split.get(v) for v in nodes]

        # no message after a level: the next request carries the tree with its new splits
        tree = T.grow(root, find, params, tree=lvl.tree)
        trees.append(tree)
        _call(proxies, "add_trees", T.pack([tree]), rnd, "model", P.ack, P.model)
    return Model(grid, trees, float(params.base_margin), time.perf_counter() - t1, t1 - t0,
                 rounds=int(n_trees))  # fmt: skip


def _local_round(proxies, P, rnd: int, rounds: int, kind: str) -> list[T.Tree]:
    replies = _call(proxies, "local_trees", {"rounds": int(rounds)}, rnd, kind, P.local_trees,
                    P.node_request)  # fmt: skip
    return [t for r in replies if r for t in T.unpack(r)]


def bagging(
    proxies: Sequence[Any], P: Protocols, params: T.Params, n_trees: int, *,
    local_rounds: int = 1, grid_cfg: dict | None = None,
) -> Model:  # fmt: skip
    """Flower's tree bagging (``FedXgbBagging``): each round every centre boosts
    ``local_rounds`` trees on its rows from the global model; all of them join the model."""
    t0 = time.perf_counter()
    grid = build_grid(proxies, P, **(grid_cfg or {}))
    t1 = time.perf_counter()
    trees: list[T.Tree] = []
    rounds = math.ceil(int(n_trees) / int(local_rounds))
    for rnd in range(1, rounds + 1):
        new = _local_round(proxies, P, rnd, local_rounds, "bagging")
        trees += new
        _call(proxies, "add_trees", T.pack(new), rnd, "model", P.ack, P.model)
    return Model(grid, trees, float(params.base_margin), time.perf_counter() - t1, t1 - t0,
                 rounds=rounds)  # fmt: skip


def cyclic(
    proxies: Sequence[Any], P: Protocols, params: T.Params, n_trees: int, *,
    local_rounds: int = 1, grid_cfg: dict | None = None,
) -> Model:  # fmt: skip
    """Flower's cyclic XGBoost (``FedXgbCyclic``): the centres take turns (in order), each
    boosting ``local_rounds`` trees on its rows from the model the previous one left."""
    t0 = time.perf_counter()
    grid = build_grid(proxies, P, **(grid_cfg or {}))
    t1 = time.perf_counter()
    trees: list[T.Tree] = []
    rounds = math.ceil(int(n_trees) / int(local_rounds))
    for rnd in range(1, rounds + 1):
        turn = proxies[(rnd - 1) % len(proxies)]
        new = _local_round([turn], P, rnd, local_rounds, "cyclic")
        trees += new
        _call(proxies, "add_trees", T.pack(new), rnd, "model", P.ack, P.model)
    return Model(grid, trees, float(params.base_margin), time.perf_counter() - t1, t1 - t0,
                 rounds=rounds)  # fmt: skip
