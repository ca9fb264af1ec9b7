"""The shared candidate grid (seed 003 §9.2, gap 1: "split candidates must come from a shared
threshold grid"), computed federatedly in two exchanges, and the binning of features to it.

1. **Range** (``boosting_moments``): each centre sends n, Σx, Σx² per feature; the server
   lays a fine public lattice of ``sketch_bins`` equal cells over mean ± ``range_sd``·SD (plus
   the two open tails) per feature.
2. **Sketch** (``boosting_sketch``): each centre counts its samples per lattice cell and merges
   consecutive cells until every reported run holds ≥ its floor of samples (:func:`merge_runs`;
   with a floor the runs tile the lattice, open tails included, so that no run end places the
   centre's smallest or largest value); the server spreads the runs over
   their cells, adds them and places the cuts between
   non-empty cells: ``quantile`` (a weighted quantile sketch, at most ``max_bin`` bins of about
   equal mass) or ``uniform`` (equal-width bins of the range, empty ones dropped).

Every bin of the grid holds training samples (exactly so when the floor is 1), which is what
makes XGBoost's own candidates on the binned data the grid's (``pooled.py``). A sample's code for
feature j is the number of cuts ≤ x (:func:`encode`); a split (j, k) sends codes < k left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ConfigError, InputDataError

METHODS = ("quantile", "uniform")


@dataclass(frozen=True)
class Grid:
    """Per feature the sorted cut values; feature j has ``len(cuts[j]) + 1`` bins. ``counts``:
    the server's estimate of the training rows per (feature, bin) from the sketch."""

    cuts: tuple[np.ndarray, ...]
    counts: np.ndarray | None = field(default=None, compare=False, repr=False)

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
    s = np.sum([np.ravel(m["sum"]) for m in messages], axis=0)
    ss = np.sum([np.ravel(m["sumsq"]) for m in messages], axis=0)
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


@dataclass(frozen=True)
class Runs:
    """Merged runs of consecutive bins (or lattice cells), one entry per run: its feature, its
    first and last non-empty bin, and the per-run sums of whatever was summed."""

    feature: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Sums of the (d, width) ``values`` over every run's bins (the bins themselves: a
        one-bin run carries its bin's value exactly)."""
        width = values.shape[1]
        if not len(self.feature):
            return np.zeros(0, dtype=values.dtype)
        idx = np.empty(2 * len(self.feature), dtype=np.int64)
        idx[0::2] = self.feature * width + self.start
        idx[1::2] = self.feature * width + self.end + 1
        return np.add.reduceat(np.append(values.reshape(-1), 0), idx)[0::2]


def merge_runs(n: np.ndarray, floor: int, widths: Sequence[int] | np.ndarray | None = None) -> Runs:
    """Runs of the (d, width) counts ``n``: walking the bins of a feature, a run closes as soon
    as it holds ≥ ``floor`` samples; a remainder below the floor joins the last run. A feature
    whose total is below the floor gets no run.

    With floor 1 every non-empty bin is its own run (exact: the defence is off). With a floor
    the runs tile the feature's bins (``widths``: its number of bins, default all): the first
    run starts at bin 0, each next one right after the previous one's end, and the last one
    ends at the feature's last bin — so no reported end sits at the centre's smallest or largest
    value of the feature (which a run's first / last non-empty bin would place, whatever the
    floor), nor at the first value after an empty stretch. What a run end still says: the run
    closed in its end bin, i.e. the centre's (k·floor)-th smallest value lies there (a quantile
    over ≥ floor patients)."""
    n = np.asarray(n)
    d, width = n.shape
    ends = np.zeros(n.shape, dtype=bool)
    acc = np.zeros(d, dtype=n.dtype)
    for i in range(width):
        acc = acc + n[:, i]
        c = acc >= floor
        ends[:, i] = c
        acc[c] = 0
    for j in np.flatnonzero(acc > 0):  # the remainder joins the last run
        closed = np.flatnonzero(ends[j])
        if len(closed):
            ends[j, closed[-1]] = False
            ends[j, np.flatnonzero(n[j] > 0)[-1]] = True
    feat, end = np.nonzero(ends)
    prev = np.r_[-1, end[:-1]]
    first = np.r_[True, feat[1:] != feat[:-1]]
    prev[first] = -1
    if floor > 1:  # tiled: from bin 0 to the feature's last bin
        w = np.full(d, width) if widths is None else np.asarray(widths, np.int64)
        last = np.r_[feat[1:] != feat[:-1], True]
        end = end.copy()
        end[last] = w[feat[last]] - 1
        return Runs(feat, prev + 1, end)
    # the first non-empty bin after the previous run's end
    idx = np.where(n > 0, np.arange(width), width)
    next_nz = np.minimum.accumulate(idx[:, ::-1], axis=1)[:, ::-1]
    return Runs(feat, next_nz[feat, prev + 1], end)


def spread(
    out: np.ndarray, feature, start, end, values, weights: np.ndarray | None = None
) -> np.ndarray:
    """Server side: add each run's value to ``out`` (d, width) over its bins, in proportion to
    ``weights`` (the grid's global bin counts; equal shares without them). A one-bin run adds
    its value to its bin as it is (exact)."""
    feature, start, end = (np.asarray(a, np.int64).ravel() for a in (feature, start, end))
    values = np.asarray(values, np.float64).ravel()
    one = start == end
    np.add.at(out, (feature[one], end[one]), values[one])
    for f, s, e, v in zip(feature[~one], start[~one], end[~one], values[~one], strict=True):
        w = np.ones(e - s + 1) if weights is None else np.asarray(weights[f, s : e + 1], float)
        out[f, s : e + 1] += v * (w / w.sum() if w.sum() > 0 else 1.0 / len(w))
    return out


def sketch_message(X: np.ndarray, edges: Sequence[np.ndarray], floor: int) -> dict:
    """Centre side: merged cell counts (every reported count ≥ floor)."""
    counts = cell_counts(X, edges)
    r = merge_runs(counts, floor, [len(e) + 1 for e in edges])
    return {"feature": r.feature.astype(np.int32), "start": r.start.astype(np.int32),
            "end": r.end.astype(np.int32), "count": r.sums(counts)}  # fmt: skip


def place(messages: Sequence[dict], shape: tuple[int, int]) -> np.ndarray:
    """Server side: every centre's runs spread evenly over their cells and added."""
    out = np.zeros(shape)
    for m in messages:
        spread(out, m["feature"], m["start"], m["end"], m["count"])
    return out


def bin_counts(counts: np.ndarray, edges: Sequence[np.ndarray], grid: Grid) -> np.ndarray:
    """The lattice cell counts summed per bin of ``grid`` (d, width): the global weights the
    server spreads merged histogram runs with."""
    out = np.zeros((len(edges), grid.width))
    for j, (e, c) in enumerate(zip(edges, grid.cuts, strict=True)):
        lower = np.r_[-np.inf, np.asarray(e, float)]  # cell c covers [lower[c], ...)
        np.add.at(out[j], np.searchsorted(c, lower, side="right"), counts[j, : len(e) + 1])
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
    grid = choose_cuts(counts, edges, max_bin, method)
    return replace(grid, counts=bin_counts(counts, edges, grid))
