"""Federated imputation and scaling of tables (MDS, survival covariates, heart), issue 23.

Means, variances and frequencies of ones are ratios of sums: exact. Medians and extremes are
values of single patients, so the federation gets what a DataSHIELD-style floor allows:

- round 1 (``prep_column_moments``): per column the observed count, mean, centred sum of squares
  and whether every observed value is 0/1 or whole — only columns with ≥ floor observed values
  at that centre are reported;
- round 2 (``prep_binned_counts``): counts of the observed values in the server's bins (mean ±
  ``SPAN_SD`` standard deviations, ``bins`` bins, for whole-number columns of a whole width
  centred on the integers; values outside go to the end bins), a bin holding 1 … floor−1 values
  at a centre sent as 0 (small-cell suppression). Fewer bins, less suppression: the default
  (config ``data.federated.bins``) trades resolution against suppressed mass.

The server reads a quantile off the summed histogram (the rank's position inside its bin,
linear; a whole-number column's bin centre, so a unit-width bin gives the exact median when no
cell was suppressed), and the range used for min–max scaling as the outer edges of the first
and last non-empty bins: the extremes that at least ``floor`` patients of one centre share a
bin with, never one patient's value. The difference to pooled is reported by the callers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedclust.errors import InputDataError
from fedclust.federation import Abstain
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.federation.guard import centre_policy

from . import protocols as P
from .protocols import MIN_SAMPLES, Protocols, as_row, from_row
from .server import Rounds

SPAN_SD = 5.0  # bins cover mean ± SPAN_SD standard deviations
BINS = 50  # default number of bins (config data.federated.bins)


class TableCentre:
    """One centre's rows of a numeric table (NaN = missing) and, optionally, a label per row
    (class-conditional statistics: the request names the class)."""

    def __init__(self, cid: str, x: np.ndarray, labels: np.ndarray | None = None,
                 min_samples: int = MIN_SAMPLES,
                 disclosure: DisclosurePolicy | None = None,
                 columns: list[str] | None = None):  # fmt: skip
        self.cid = str(cid)
        self.columns = None if columns is None else [str(c) for c in columns]
        self.x = np.asarray(x, dtype=np.float64)
        self.labels = None if labels is None else np.asarray(labels)
        self.n_samples = int(self.x.shape[0])
        self.min_samples = int(min_samples)
        self.protocols = Protocols(self.min_samples).table_methods()
        self.disclosure = disclosure  # None: the job's configured policy for this centre
        self.fill: dict | None = None

    @property
    def floor(self) -> int:
        """Rows / observed values a statistic needs: the protocol's floor raised to the
        centre's own (``nfilter_subset``)."""
        return centre_policy(self).floor(self.min_samples)

    @property
    def cell_floor(self) -> int:
        """Smallest non-empty table cell: the protocol's floor raised to ``nfilter_tab``."""
        return max(self.min_samples, int(centre_policy(self).nfilter_tab))

    def _rows(self, config: dict) -> np.ndarray:
        if config.get("labels") is None:
            return self.x
        return self.x[self.labels == config["labels"]]

    def label_set(self, parameters: Any, config: dict) -> dict:
        """The labels of the centre's rows (metadata): the classes the server asks
        class-conditional statistics for. Only classes with ≥ floor rows at the centre: a rarer
        class would tell a curious server that a few such patients are here (differencing two
        runs), and the centre could not send statistics for it anyway."""
        if self.labels is None:  # an integer array: a list of numbers is no Flower value
            return {"labels": np.zeros(0, dtype=np.int64)}
        values, counts = np.unique(self.labels, return_counts=True)
        return {"labels": np.asarray(values[counts >= self.floor], dtype=np.int64)}

    def column_moments(self, parameters: Any, config: dict) -> dict | Abstain:
        """Observed count, mean, centred sum of squares, 0/1 and whole-number flags per column
        with ≥ floor observed values (``columns`` lists them)."""
        x = self._rows(config)[:, np.asarray(config["columns"], dtype=np.int64)]
        if x.shape[0] < self.floor:
            return Abstain(f"{x.shape[0]} row(s) < floor {self.floor}")
        obs = ~np.isnan(x)
        n_obs = obs.sum(axis=0)
        keep = np.flatnonzero(n_obs >= self.floor)
        if not len(keep):
            return Abstain(f"no column with ≥ {self.floor} observed values")
        mean, m2, binary, whole = [], [], [], []
        for j in keep:
            v = x[obs[:, j], j]
            mu = v.mean()
            mean.append(mu)
            m2.append(((v - mu) ** 2).sum())
            binary.append(float(np.isin(v, (0.0, 1.0)).all()))
            whole.append(float((v == np.round(v)).all()))
        return {"columns": np.asarray(config["columns"])[keep], "mean": as_row(mean),
                "m2": as_row(m2), "binary": as_row(binary), "whole": as_row(whole),
                "n_obs": n_obs[keep], "n": int(x.shape[0])}  # fmt: skip

    def binned_counts(self, parameters: np.ndarray, config: dict) -> dict | Abstain:
        """Counts of the observed values per bin (``parameters``: one edge array per column),
        values outside into the end bins, cells with 1 … floor−1 values sent as 0."""
        cols = np.asarray(config["columns"], dtype=np.int64)
        x = self._rows(config)[:, cols]
        if x.shape[0] < self.floor:
            return Abstain(f"{x.shape[0]} row(s) < floor {self.floor}")
        counts, n_obs = [], np.zeros(len(cols), dtype=np.int64)
        for r in range(len(cols)):
            e = np.asarray(parameters[r], dtype=np.float64)
            v = x[~np.isnan(x[:, r]), r]
            n_obs[r] = len(v)
            b = np.clip(np.searchsorted(e, v, side="right") - 1, 0, len(e) - 2)
            c = np.bincount(b, minlength=len(e) - 1).astype(np.float64)
            c[(c > 0) & (c < self.cell_floor)] = 0  # small-cell suppression
            counts.append(c)
        keep = np.flatnonzero(n_obs >= self.floor)
        if not len(keep):
            return Abstain(f"no column with ≥ {self.floor} observed values")
        return {"columns": cols[keep], "counts": [counts[k] for k in keep],
                "n_obs": n_obs[keep], "n": int(x.shape[0])}  # fmt: skip

    def take_fill(self, parameters: Any, config: dict) -> dict:
        """Keep the broadcast fill values (and scaling range); nothing is sent back. The centre
        itself checks that every column it must fill (it has NaNs there) got a value: only it
        knows where its NaNs are (a NaN fill: no centre reported the column). A class-
        conditional fill (``prep_class_fill_broadcast``: ``classes``, ``has``) is checked per
        (column, class) of the centre's own missing cells (:func:`no_class_fill`)."""
        self.fill = {k: config.get(k) for k in ("fill", "lo", "hi", "classes", "has")
                     if k in config}  # fmt: skip
        fill = config.get("fill")
        names = self.columns or [f"column {j}" for j in range(self.x.shape[1])]
        if config.get("classes") is not None:
            self._check_class_fill(np.asarray(config["classes"], dtype=np.int64),
                                   np.asarray(config["has"], dtype=bool), names)  # fmt: skip
        elif fill is not None and np.ndim(fill) == 1 and len(fill) == self.x.shape[1]:
            gap = np.isnan(self.x).any(axis=0) & np.isnan(np.asarray(fill, float))
            if gap.any():
                raise no_report([names[j] for j in np.flatnonzero(gap)],
                                f"federated imputation at centre {self.cid}")  # fmt: skip
        return {}

    def _check_class_fill(self, classes: np.ndarray, has: np.ndarray, names: list[str]) -> None:
        """Every (column, class) of the centre's missing cells has a value in the broadcast
        (its class is among ``classes`` and ``has`` is true there)."""
        if self.labels is None:
            raise InputDataError("a class-conditional fill reached a centre without labels",
                                 where=f"federated imputation at centre {self.cid}",
                                 fix="give the centre its rows' classes")  # fmt: skip
        row = {int(c): i for i, c in enumerate(classes)}
        for j in range(self.x.shape[1]):
            for cls in sorted({int(v) for v in self.labels[np.isnan(self.x[:, j])]}):
                if cls not in row or not has[row[cls], j]:
                    raise no_class_fill(names[j], cls, self.cid)


@dataclass
class ColumnStats:
    """What the server learnt per column (NaN where no centre reported)."""

    n_obs: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    binary: np.ndarray
    whole: np.ndarray
    edges: np.ndarray | None = None
    counts: np.ndarray | None = None  # summed, suppressed histogram

    def quantile(self, q: float) -> np.ndarray:
        """Quantile from the summed histogram (np.quantile's 'linear' rank (N−1)q; ranks
        inside a bin spread uniformly, whole-number bins at their centre)."""
        out = np.full(len(self.mean), np.nan)
        for j in range(len(self.mean)):
            c = self.counts[j]
            tot = c.sum()
            if tot == 0:
                continue
            rank = (tot - 1) * q
            lo_r, hi_r = int(np.floor(rank)), int(np.ceil(rank))
            vals = [self._order_value(j, r) for r in (lo_r, hi_r)]
            out[j] = vals[0] + (rank - lo_r) * (vals[1] - vals[0])
        return out

    def _order_value(self, j: int, r: int) -> float:
        c, e = self.counts[j], self.edges[j]
        cum = np.cumsum(c)
        b = int(np.searchsorted(cum, r, side="right"))
        if self.whole[j]:
            return 0.5 * (e[b] + e[b + 1])
        before = cum[b] - c[b]
        return float(e[b] + (r - before + 0.5) / c[b] * (e[b + 1] - e[b]))

    def range(self) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi): outer edges (whole-number columns: centres) of the first and last
        non-empty bins of the suppressed histogram."""
        lo, hi = np.full(len(self.mean), np.nan), np.full(len(self.mean), np.nan)
        for j in range(len(self.mean)):
            nz = np.flatnonzero(self.counts[j] > 0)
            if not len(nz):
                continue
            e = self.edges[j]
            if self.whole[j]:
                lo[j], hi[j] = 0.5 * (e[nz[0]] + e[nz[0] + 1]), 0.5 * (e[nz[-1]] + e[nz[-1] + 1])
            else:
                lo[j], hi[j] = e[nz[0]], e[nz[-1] + 1]
        return lo, hi


def _edges(mean: float, sd: float, whole: bool, nb: int) -> np.ndarray:
    lo, hi = mean - SPAN_SD * sd, mean + SPAN_SD * sd
    if whole:  # bins of a whole width centred on the integers
        width = max(1.0, float(np.ceil((hi - lo) / nb)))
        start = np.floor(lo) - 0.5 * width
        return start + width * np.arange(nb + 1)
    if sd == 0:
        lo, hi = mean - 0.5, mean + 0.5
    return np.linspace(lo, hi, nb + 1)


def column_stats_server(
    proxies: Sequence[Any],
    n_columns: int,
    label: Any = None,
    binned: Sequence[int] = (),
    bins: int = BINS,
    protocols: Protocols = P.DEFAULT,
    rounds: Rounds | None = None,
) -> ColumnStats:
    """Round 1 (moments of every column) and, for the columns ``binned``, round 2 (binned
    counts) over the rows of class ``label`` (None: all rows)."""
    r = rounds if rounds is not None else Rounds(proxies)
    cols = np.arange(n_columns)
    msgs = r.ask("column_moments", {"columns": cols, "labels": label}, "column_moments",
                 protocols.column_moments, P.COLUMNS)  # fmt: skip
    n = np.zeros(n_columns)
    mean, m2 = np.zeros(n_columns), np.zeros(n_columns)
    binary, whole = np.ones(n_columns, bool), np.ones(n_columns, bool)
    for _, m in msgs:  # parallel-variance merge, column by column
        mm, mq, mb_, mw = (from_row(m[k]) for k in ("mean", "m2", "binary", "whole"))
        for k, j in enumerate(np.asarray(m["columns"], dtype=np.int64)):
            nk, mb, qb = float(m["n_obs"][k]), float(mm[k]), float(mq[k])
            tot = n[j] + nk
            d = mb - mean[j]
            mean[j] += d * nk / tot
            m2[j] += qb + d * d * n[j] * nk / tot
            n[j] = tot
            binary[j] &= bool(mb_[k])
            whole[j] &= bool(mw[k])
    none = n == 0
    mean[none] = np.nan
    sd = np.sqrt(np.where(n > 1, m2 / np.maximum(n - 1, 1), 0.0))
    stats = ColumnStats(n.astype(np.int64), mean, sd, binary & ~none, whole & ~none)
    binned = [int(j) for j in binned if not none[j]]
    if binned:
        edges = [_edges(mean[j], sd[j], whole[j], bins) for j in binned]
        msgs = r.ask("binned_counts", {"parameters": edges, "columns": np.array(binned),
                                       "labels": label},
                     "binned_counts", protocols.binned_counts, P.BINS)  # fmt: skip
        counts = np.zeros((n_columns, bins))
        for _, m in msgs:
            for j, c in zip(np.asarray(m["columns"], dtype=np.int64), m["counts"], strict=True):
                counts[j] += c
        all_edges = np.full((n_columns, bins + 1), np.nan)
        all_edges[binned] = np.array(edges)
        stats.edges, stats.counts = all_edges, counts
    else:
        stats.edges = np.full((n_columns, bins + 1), np.nan)
        stats.counts = np.zeros((n_columns, bins))
    return stats


def no_report(columns: Sequence[str], where: str) -> InputDataError:
    return InputDataError(
        f"no centre reports column(s) {', '.join(map(str, columns))} (fewer observed values "
        "than the floor at every centre)",
        where=where,
        fix="lower data.federated.min_samples, drop the column(s), or use preprocess: pooled",
    )


def no_class_fill(column: str, cls: int, centre: str) -> InputDataError:
    """A centre's missing cells of ``column`` in class ``cls`` that no centre reported a value
    for (the same error in-process and on a deployment: the centre raises it; no count)."""
    return InputDataError(
        f"missing {column} value(s) of class {cls} have no fill: no centre reported a class-"
        f"{cls} {column} statistic (every centre holds fewer rows or observed values of the "
        "class than its floor)",
        where=f"federated imputation at centre {centre}, column {column}, class {cls}",
        fix="lower data.federated.min_samples (and the centres' nfilter_subset), merge or drop "
        "the rare class, or use data.heart.preprocess: pooled",
    )
