"""The shared candidate grid (seed 003 §9.2, gap 1: "split candidates must come from a shared
threshold grid"), computed federatedly in two exchanges, and the binning of features to it.

1. **Range** (``boosting_moments``): each centre sends n, Σx, Σx² per feature; the server
   lays a fine public lattice of ``sketch_bins`` equal cells over mean ± ``range_sd``·SD (plus
   the two open tails) per feature.
2. **Sketch** (``boosting_sketch``): each centre counts its samples per lattice cell and merges
   consecutive cells until every reported group holds ≥ its floor of samples (:func:`merge_runs`;
   a group is reported at its last cell); the server adds the groups and places the cuts between
   non-empty cells: ``quantile`` (a weighted quantile sketch, at most ``max_bin`` bins of about
   equal mass) or ``uniform`` (equal-width bins of the range, empty ones dropped).

Every bin of the grid holds training samples (exactly so when the floor is 1), which is what
makes XGBoost's own candidates on the binned data the grid's (``pooled.py``). A sample's code for
feature j is the number of cuts ≤ x (:func:`encode`); a split (j, k) sends codes < k left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, InputDataError

METHODS = ("quantile", "uniform")


@dataclass(frozen=True)
class Grid:
    """Per feature the sorted cut values; feature j has ``len(cuts[j]) + 1`` bins."""

    cuts: tuple[np.ndarray, ...]

    @property
    def n_bins(self) -> np.ndarray:
        return np.array([len(c) + 1 for c in self.cuts], dtype=np.int64)

    @property
    def width(self) -> int:
        return int(self.n_bins.max()) if len(self.cuts) else 1

    def threshold(self, feature: int, cut: int) -> float:
        """The feature value of cut k: code < k ⟺ x < cuts[k − 1]."""
        return float(self.cuts[feature][cut - 1])


def encode(X: np.ndarray, grid: Grid) -> np.ndarray:
    """Bin codes (int32, n × d): the number of cuts ≤ x per feature."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != len(grid.cuts):
        raise InputDataError(f"{X.shape[1]} feature columns, the grid has {len(grid.cuts)}")
    out = np.empty(X.shape, dtype=np.int32)
    for j, c in enumerate(grid.cuts):
        out[:, j] = np.searchsorted(c, X[:, j], side="right")
    return out


# ------------------------------------------------------------------ 1. range from moments
def moments(X: np.ndarray) -> dict[str, np.ndarray | int]:
    """Centre side: n, Σx, Σx² per feature."""
    X = np.asarray(X, dtype=np.float64)
    return {"n": int(len(X)), "sum": X.sum(axis=0), "sumsq": (X**2).sum(axis=0)}


def lattice(messages: Sequence[dict], sketch_bins: int, range_sd: float) -> list[np.ndarray]:
    """Server side: per feature the fine lattice edges (``sketch_bins`` + 1 values) over
    mean ± range_sd·SD from the centres' moments; a constant feature gets one edge."""
    n = sum(int(m["n"]) for m in messages)
    s = np.sum([m["sum"] for m in messages], axis=0)
    ss = np.sum([m["sumsq"] for m in messages], axis=0)
    # rounded to 6 significant digits: the lattice is public, and the same whether the sums
    # came from one data holder or were added over centres (summation order)
    mean = _significant(s / n)
    sd = _significant(np.sqrt(np.maximum(ss / n - (s / n) ** 2, 0.0)))
    out = []
    for m, v in zip(mean, sd, strict=True):
        if not v > 1e-12 * max(1.0, abs(m)):
            out.append(np.array([m]))
        else:
            out.append(np.linspace(m - range_sd * v, m + range_sd * v, int(sketch_bins) + 1))
    return out


def _significant(x: np.ndarray, digits: int = 6) -> np.ndarray:
    return np.array([float(f"{v:.{digits}g}") for v in np.asarray(x, dtype=np.float64)])


# ------------------------------------------------------------- 2. sketch on the lattice
def cell_counts(X: np.ndarray, edges: Sequence[np.ndarray]) -> np.ndarray:
    """Per feature the count per lattice cell (cell c = [e_{c−1}, e_c), open tails), padded to
    (d, max cells)."""
    X = np.asarray(X, dtype=np.float64)
    width = max(len(e) for e in edges) + 1
    out = np.zeros((X.shape[1], width), dtype=np.int64)
    for j, e in enumerate(edges):
        out[j, : len(e) + 1] = np.bincount(
            np.searchsorted(e, X[:, j], side="right"), minlength=len(e) + 1
        )
    return out


def merge_runs(n: np.ndarray, floor: int, last: np.ndarray | None = None) -> np.ndarray:
    """Group ends (bool, same shape as the (d, width) counts ``n``): each group is a run of
    consecutive cells closed as soon as it holds ≥ ``floor`` samples; a remainder below the
    floor joins the previous group (which then ends at the feature's ``last`` cell). A group is
    reported at its end; with floor 1 every non-empty cell is its own group. Rows whose total
    is below the floor get no group."""
    n = np.asarray(n)
    d, width = n.shape
    last = np.full(d, width - 1) if last is None else np.asarray(last)
    ends = np.zeros(n.shape, dtype=bool)
    acc = np.zeros(d, dtype=n.dtype)
    for i in range(width):
        acc = acc + n[:, i]
        c = acc >= floor
        ends[:, i] = c
        acc[c] = 0
    rest = np.flatnonzero(acc > 0)
    for j in rest:
        closed = np.flatnonzero(ends[j])
        if len(closed):
            ends[j, closed[-1]] = False
            ends[j, last[j]] = True
    return ends


def group_sums(values: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(feature, end cell, sum) of each group of ``ends`` over the (d, width) ``values``: sums of
    the cells themselves (so a one-cell group carries its cell's value exactly)."""
    d, width = ends.shape
    feat, end = np.nonzero(ends)
    if not len(feat):
        return feat, end, np.zeros(0, dtype=values.dtype)
    flat_end = feat * width + end
    first = np.r_[True, feat[1:] != feat[:-1]]
    starts = np.where(first, feat * width, np.r_[0, flat_end[:-1] + 1])
    idx = np.empty(2 * len(feat), dtype=np.int64)
    idx[0::2], idx[1::2] = starts, flat_end + 1
    sums = np.add.reduceat(np.append(values.reshape(-1), 0), idx)[0::2]
    return feat, end, sums


def sketch_message(X: np.ndarray, edges: Sequence[np.ndarray], floor: int) -> dict:
    """Centre side: merged cell counts (every reported count ≥ floor)."""
    counts = cell_counts(X, edges)
    last = np.array([len(e) for e in edges])
    feat, end, n = group_sums(counts, merge_runs(counts, floor, last))
    return {"feature": feat.astype(np.int32), "cell": end.astype(np.int32), "count": n}


def place(messages: Sequence[dict], shape: tuple[int, int], value: str = "count") -> np.ndarray:
    """Server side: the groups of every centre placed at their end cells and added."""
    out = np.zeros(shape)
    for m in messages:
        np.add.at(out, (np.asarray(m["feature"]), np.asarray(m["cell"])), np.asarray(m[value]))
    return out


def choose_cuts(counts: np.ndarray, edges: Sequence[np.ndarray], max_bin: int, method: str) -> Grid:
    """Server side: cuts between non-empty lattice cells. ``quantile``: at the cells where the
    cumulative count crosses i·N/max_bin; ``uniform``: the lattice cut into ``max_bin`` equal
    ranges. Either way a cut lies at the lower edge of a non-empty cell, so no bin is empty."""
    if method not in METHODS:
        raise ConfigError(
            f"unknown grid method {method!r}", where="boosting.grid.method", fix=f"one of {METHODS}"
        )
    if int(max_bin) < 2:
        raise ConfigError("max_bin must be at least 2", where="boosting.grid.max_bin")
    cuts = []
    for j, e in enumerate(edges):
        c = counts[j, : len(e) + 1]
        cells = np.flatnonzero(c > 0)
        if len(cells) < 2:
            cuts.append(np.zeros(0))
            continue
        if method == "quantile":
            cum = np.cumsum(c[cells])
            q = np.arange(1, max_bin) * cum[-1] / max_bin
            pos = np.unique(np.searchsorted(cum, q, side="left"))  # cell whose cum reaches q
            after = pos[pos < len(cells) - 1] + 1  # cut before the next non-empty cell
        else:
            # equal-width ranges of the lattice: cell c (1-based lattice index) lies in range
            # floor((c − 1) · max_bin / (len(e) − 1)) (tails with the end ranges)
            inner = np.clip(cells - 1, 0, max(len(e) - 2, 0))
            rng = (inner * max_bin) // max(len(e) - 1, 1)
            after = np.flatnonzero(np.diff(rng) > 0) + 1
        # cell index c covers [e[c−1], e[c]): its lower edge is e[c − 1]
        cuts.append(np.asarray(e)[cells[np.unique(after)] - 1].astype(np.float64))
    return Grid(tuple(cuts))


def pooled_grid(
    X: np.ndarray, method: str = "quantile", max_bin: int = 32, sketch_bins: int = 64,
    range_sd: float = 4.0,
) -> Grid:  # fmt: skip
    """The grid one data holder with every row computes (the same steps, floor 1): the pooled
    reference's grid, equal to the federated grid when the centres' floor is 1."""
    edges = lattice([moments(X)], sketch_bins, range_sd)
    m = sketch_message(X, edges, 1)
    counts = place([m], (len(edges), max(len(e) for e in edges) + 1))
    return choose_cuts(counts, edges, max_bin, method)
