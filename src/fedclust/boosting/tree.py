"""Gradient-boosted trees on pre-binned features, arithmetic as ``xgboost.train`` (hist) does it
(seed 003 §9.1, D6.2 §10.1; XGBoost's ``grow_quantile_histmaker``).

Features are integer bin codes (``grid.py``); a split ``(feature j, cut k)`` sends a sample left
when its code is ``< k``. For a node with gradient sums (G, H) the gain of a split is XGBoost's

    loss_chg = G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)          (= 2 × (10.1) + 2γ)

computed as XGBoost computes it (child terms in double, rounded to float32, summed in float32),
so ties break as in XGBoost: the first maximum in (feature, cut) order. A candidate needs
H_L, H_R ≥ min_child_weight; a node splits when loss_chg > 1e-6 (XGBoost's kRtEps) and
loss_chg ≥ γ, below max_depth. Leaf value: η·w with w = −G/(H+λ) (the sign D6.2 prints is an
erratum, seed 003 §9.2), stored in float32. Logistic gradients g = p − y, h = max(p(1−p), 1e-16)
are float32 (``binary:logistic``). ``grow`` is the one depth-wise growth loop, used by the pooled
reference, each centre's local trees and the federated server alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

RT_EPS = np.float32(1e-6)  # XGBoost's kRtEps: the smallest loss change that splits a node
H_EPS = np.float32(1e-16)  # XGBoost's floor on the logistic Hessian


@dataclass(frozen=True)
class Params:
    """XGBoost's tree parameters (``xgboost.train`` names in :meth:`xgboost`)."""

    max_depth: int = 3
    eta: float = 0.3
    reg_lambda: float = 1.0
    gamma: float = 0.0
    min_child_weight: float = 1.0
    base_score: float = 0.5

    def xgboost(self, max_bin: int = 256) -> dict[str, Any]:
        """The same model for ``xgboost.train``: hist on the codes, no subsampling, 1 thread."""
        return {
            "objective": "binary:logistic",
            "tree_method": "hist",
            "max_depth": self.max_depth,
            "eta": self.eta,
            "reg_lambda": self.reg_lambda,
            "reg_alpha": 0.0,
            "gamma": self.gamma,
            "min_child_weight": self.min_child_weight,
            "base_score": self.base_score,
            "max_bin": int(max_bin),
            "subsample": 1.0,
            "colsample_bytree": 1.0,
            "nthread": 1,
            "seed": 0,
        }

    @property
    def base_margin(self) -> np.float32:
        p = float(self.base_score)
        return np.float32(np.log(p / (1.0 - p)))


# ---------------------------------------------------------------------------- gradients
def sigmoid32(margin: np.ndarray) -> np.ndarray:
    m = np.asarray(margin, dtype=np.float32)
    return (np.float32(1.0) / (np.float32(1.0) + np.exp(-m))).astype(np.float32)


def gradients(margin: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log-loss gradients at the margins (D6.2: g = ŷ − y, h = ŷ(1 − ŷ)), float32 as XGBoost."""
    p = sigmoid32(margin)
    g = (p - np.asarray(y, dtype=np.float32)).astype(np.float32)
    h = np.maximum(p * (np.float32(1.0) - p), H_EPS).astype(np.float32)
    return g, h


# ------------------------------------------------------------------------ histograms, gains
def histogram(codes: np.ndarray, g: np.ndarray, h: np.ndarray, width: int) -> np.ndarray:
    """Per-(feature, bin) sums of (g, h, 1) over the rows given: array (3, d, width), float64."""
    n, d = codes.shape
    flat = (codes.astype(np.int64) + np.arange(d, dtype=np.int64) * width).ravel()
    size = d * width
    out = np.empty((3, size))
    out[0] = np.bincount(flat, np.repeat(np.asarray(g, np.float64), d), minlength=size)
    out[1] = np.bincount(flat, np.repeat(np.asarray(h, np.float64), d), minlength=size)
    out[2] = np.bincount(flat, minlength=size)
    return out.reshape(3, d, width)


def child_gain(G: np.ndarray, H: np.ndarray, p: Params) -> np.ndarray:
    """XGBoost's ``CalcGainGivenWeight``: G²/(H+λ) in double, returned as float32 (0 for H ≤ 0)."""
    G, H = np.asarray(G, np.float64), np.asarray(H, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(H > 0, G * G / (H + p.reg_lambda), 0.0)
    return out.astype(np.float32)


def node_gain(G: float, H: float, p: Params) -> np.float32:
    """The parent's term (XGBoost's ``root_gain``): 0 below min_child_weight."""
    if H < p.min_child_weight or H <= 0:
        return np.float32(0.0)
    return child_gain(np.array(G), np.array(H), p)[()]


def loss_change(GL, HL, GR, HR, G: float, H: float, p: Params) -> np.ndarray:
    """XGBoost's loss_chg of splits with child sums (GL, HL), (GR, HR) of a node (G, H), float32."""
    total = child_gain(GL, HL, p) + child_gain(GR, HR, p)
    return (total.astype(np.float32) - node_gain(G, H, p)).astype(np.float32)


def leaf_value(G: float, H: float, p: Params) -> np.float32:
    """η·w, w = −G/(H+λ) (0 below min_child_weight), float32 as XGBoost stores it."""
    if H < p.min_child_weight or H <= 0:
        w = np.float32(0.0)
    else:
        w = np.float32(-G / (H + p.reg_lambda))
    return np.float32(w * np.float32(p.eta))


@dataclass(frozen=True)
class Candidates:
    """Every split of one node's histogram: loss_chg (float32), left sums and counts; ``valid``
    marks the admissible ones. Arrays are (d, width − 1): entry (j, i) is the cut k = i + 1."""

    loss: np.ndarray
    GL: np.ndarray
    HL: np.ndarray
    NL: np.ndarray
    GR: np.ndarray
    HR: np.ndarray
    NR: np.ndarray
    valid: np.ndarray


def candidates(
    hist: np.ndarray, n_bins: np.ndarray, G: float, H: float, N: float, p: Params,
    floor: int = 1,
) -> Candidates:  # fmt: skip
    """All splits of a node from its histogram (3, d, width): left sums accumulate bins in order
    (XGBoost's forward enumeration), right = node − left. Valid: the cut lies inside the
    feature's bins, H_L, H_R ≥ min_child_weight and both sides hold ≥ ``floor`` samples."""
    cum = np.cumsum(hist[:, :, :-1], axis=2)
    GL, HL, NL = cum[0], cum[1], cum[2]
    GR, HR, NR = G - GL, H - HL, N - NL
    k = np.arange(1, hist.shape[2])[None, :]
    valid = (k < np.asarray(n_bins)[:, None]) & (HL >= p.min_child_weight)
    valid &= HR >= p.min_child_weight
    valid &= (NL >= floor) & (NR >= floor)
    loss = loss_change(GL, HL, GR, HR, G, H, p)
    return Candidates(loss, GL, HL, NL, GR, HR, NR, valid)


def best_split(c: Candidates) -> tuple[int, int] | None:
    """XGBoost's choice: the first (feature, cut) with the largest loss_chg > 0 among the valid
    ones (a larger feature index replaces only a strictly larger loss); None if none."""
    loss = np.where(c.valid, c.loss, np.float32(0.0))
    i = int(np.argmax(loss))
    if not loss.flat[i] > 0:
        return None
    j, b = np.unravel_index(i, loss.shape)
    return int(j), int(b) + 1


# ---------------------------------------------------------------------------------- trees
@dataclass
class Tree:
    """Node arrays in XGBoost's node order (depth-wise; children numbered as nodes expand).
    ``cut``: left iff code < cut; leaves have feature −1 and their value (η·w) in ``value``."""

    feature: list[int] = field(default_factory=list)
    cut: list[int] = field(default_factory=list)
    left: list[int] = field(default_factory=list)
    right: list[int] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    count: list[int] = field(default_factory=list)

    def add(self, n: int) -> int:
        for a, v in ((self.feature, -1), (self.cut, 0), (self.left, -1), (self.right, -1)):
            a.append(v)
        self.value.append(0.0)
        self.count.append(int(n))
        return len(self.feature) - 1

    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    def leaves(self) -> np.ndarray:
        return np.flatnonzero(np.asarray(self.feature) < 0)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "feature": np.asarray(self.feature, np.int32),
            "cut": np.asarray(self.cut, np.int32),
            "left": np.asarray(self.left, np.int32),
            "right": np.asarray(self.right, np.int32),
            "value": np.asarray(self.value, np.float32),
        }

    @classmethod
    def from_arrays(cls, a: dict[str, Any]) -> Tree:
        n = len(a["feature"])
        return cls(
            [int(v) for v in a["feature"]], [int(v) for v in a["cut"]],
            [int(v) for v in a["left"]], [int(v) for v in a["right"]],
            [float(np.float32(v)) for v in a["value"]], [0] * n,
        )  # fmt: skip


TREE_FIELDS = ("feature", "cut", "left", "right", "value")


def pack(trees: list[Tree]) -> dict[str, list[np.ndarray]]:
    """Trees as a message: per field one array per tree (plain arrays on every transport)."""
    arrays = [t.arrays() for t in trees]
    return {k: [a[k] for a in arrays] for k in TREE_FIELDS}


def unpack(message: dict[str, Any]) -> list[Tree]:
    n = len(message["feature"])
    return [Tree.from_arrays({k: message[k][i] for k in TREE_FIELDS}) for i in range(n)]


def apply(tree: Tree, codes: np.ndarray) -> np.ndarray:
    """The leaf each row falls into."""
    f, c = np.asarray(tree.feature), np.asarray(tree.cut)
    left, right = np.asarray(tree.left), np.asarray(tree.right)
    node = np.zeros(len(codes), dtype=np.int64)
    rows = np.arange(len(codes))
    for _ in range(64):
        inner = f[node] >= 0
        if not inner.any():
            return node
        r, nd = rows[inner], node[inner]
        go_left = codes[r, f[nd]] < c[nd]
        node[r] = np.where(go_left, left[nd], right[nd])
    raise ValueError("tree deeper than 64 levels")


def predict_margin(trees: list[Tree], codes: np.ndarray, base_margin: float) -> np.ndarray:
    """Margins accumulated in float32, tree by tree (XGBoost's prediction cache)."""
    m = np.full(len(codes), np.float32(base_margin), dtype=np.float32)
    for t in trees:
        m += np.asarray(t.value, np.float32)[apply(t, codes)]
    return m


# ----------------------------------------------------------------------- the growth loop
@dataclass(frozen=True)
class Split:
    """A split the server (or a local builder) chose for one node, with its children's sums."""

    feature: int
    cut: int
    GL: float
    HL: float
    NL: float
    GR: float
    HR: float
    NR: float


#: finder(nodes, stats) -> one Split or None per node; stats[i] = (G, H, N) of nodes[i]
Finder = Callable[[list[int], list[tuple[float, float, float]]], list[Split | None]]


def expands(s: Split | None, G: float, H: float, p: Params) -> bool:
    """XGBoost's ``ExpandEntry::IsValid``: loss_chg > kRtEps, both Hessians > 0, ≥ γ (the
    min_child_weight condition is the candidates'; re-checked here for voted splits)."""
    if s is None or s.HL <= 0 or s.HR <= 0:
        return False
    if s.HL < p.min_child_weight or s.HR < p.min_child_weight:
        return False
    loss = loss_change(np.array(s.GL), np.array(s.HL), np.array(s.GR), np.array(s.HR), G, H, p)
    return bool(loss > RT_EPS and loss >= np.float32(p.gamma))


def grow(
    root: tuple[float, float, float], find: Finder, p: Params,
    on_level: Callable[[list[tuple[int, Split, int, int]]], None] | None = None,
    tree: Tree | None = None,
) -> Tree:  # fmt: skip
    """One tree, depth-wise as XGBoost's depthwise policy: every node of a level asks ``find``
    for its split (one call per level), expanding nodes get the next two ids in node order.
    ``on_level`` receives the level's (node, split, left id, right id) after it is applied;
    ``tree`` (empty) is grown in place, so a caller can show it as it grows."""
    tree = Tree() if tree is None else tree
    stats = {tree.add(int(root[2])): root}
    level = [0]
    for depth in range(p.max_depth + 1):
        if not level:
            break
        splits = find(level, [stats[n] for n in level]) if depth < p.max_depth else []
        done, nxt = [], []
        for i, nid in enumerate(level):
            s = splits[i] if splits else None
            G, H, _ = stats[nid]
            if not expands(s, G, H, p):
                tree.value[nid] = float(leaf_value(G, H, p))
                continue
            lid, rid = tree.add(int(s.NL)), tree.add(int(s.NR))
            tree.feature[nid], tree.cut[nid] = s.feature, s.cut
            tree.left[nid], tree.right[nid] = lid, rid
            stats[lid], stats[rid] = (s.GL, s.HL, s.NL), (s.GR, s.HR, s.NR)
            done.append((nid, s, lid, rid))
            nxt += [lid, rid]
        if on_level is not None and done:
            on_level(done)
        level = nxt
    return tree


# --------------------------------------------------------------- one data holder's trees
@dataclass
class LocalBuilder:
    """Histogram boosting on one data holder's codes: the pooled reference of the protocols and
    each centre's local trees (bagging, cyclic). ``floor``: both children of a split hold at
    least this many samples (1 = XGBoost)."""

    codes: np.ndarray
    y: np.ndarray
    n_bins: np.ndarray
    params: Params
    floor: int = 1
    margin: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.codes = np.asarray(self.codes)
        self.width = int(np.max(self.n_bins))
        if self.margin is None:
            self.margin = np.full(len(self.y), self.params.base_margin, dtype=np.float32)

    def tree(self) -> Tree:
        """Grow one tree on the current margins and add it to them."""
        g, h = gradients(self.margin, self.y)
        node = np.zeros(len(self.y), dtype=np.int64)
        p = self.params

        def find(nodes, stats):
            out = []
            for nid, (G, H, N) in zip(nodes, stats, strict=True):
                rows = node == nid
                hist = histogram(self.codes[rows], g[rows], h[rows], self.width)
                c = candidates(hist, self.n_bins, G, H, N, p, self.floor)
                best = best_split(c)
                if best is None:
                    out.append(None)
                    continue
                j, k = best
                i = (j, k - 1)
                out.append(Split(j, k, c.GL[i], c.HL[i], c.NL[i], c.GR[i], c.HR[i], c.NR[i]))
            return out

        def on_level(done):
            for nid, s, lid, rid in done:
                rows = node == nid
                node[rows] = np.where(self.codes[rows, s.feature] < s.cut, lid, rid)

        root = (float(np.sum(g, dtype=np.float64)), float(np.sum(h, dtype=np.float64)),
                float(len(g)))  # fmt: skip
        t = grow(root, find, p, on_level)
        self.margin = self.margin + np.asarray(t.value, np.float32)[node]
        return t

    def fit(self, n_trees: int) -> list[Tree]:
        return [self.tree() for _ in range(int(n_trees))]
