"""Federated imputation of the data stage's tables, beside their pooled versions (issue 23).

- MDS (:func:`mds_impute_federated`): NaN → the column's frequency of ones, a ratio of sums
  (Σ_k ones_k / Σ_k observed_k): equal to pooled up to rounding unless a centre holds fewer
  observed values of a column than its floor (that centre's cell is then left out).
- Heart (:func:`heart_impute_federated`): zeros of Cholesterol / RestingBP → the class median
  over all hospitals from binned counts (:mod:`.tabular`; whole-number columns: exact unless a
  suppressed cell lies at the median) or the class mean (exact).

Each builds one :class:`~.tabular.TableCentre` per centre (:func:`mds_centres`,
:func:`heart_centres`) and runs its server function (:func:`mds_server`, :func:`heart_server`:
module level, over proxies and parameters only; the server never reads a table) through
``fedclust.federation.federate(centres, server, ledger=..., transport=...)``; the centres fill
their own rows with the broadcast values. The same server functions run on a Flower deployment
as the stage ``fedprep_tables`` (:mod:`.deployment`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd

from fedclust.errors import InputDataError
from fedclust.federation import INPROCESS, Ledger, Transport, federate
from fedclust.federation.disclosure import DisclosurePolicy

from . import protocols as P
from .protocols import MIN_SAMPLES, Protocols
from .rnaseq import centre_labels
from .server import Rounds
from .tabular import BINS, ColumnStats, TableCentre, column_stats_server

HEART_COLUMNS = ("Cholesterol", "RestingBP")  # zeros code missing values (seed 004 §2.4)


def _centres(x: pd.DataFrame, centre: pd.Series, labels, min_samples: int, where: str,
             disclosure: DisclosurePolicy | None = None):  # fmt: skip
    lab = centre_labels(centre, x.index, where=where)
    names = sorted(lab.unique())
    out = []
    for c in names:
        m = (lab == c).to_numpy()
        out.append(TableCentre(c, x.to_numpy(float)[m], None if labels is None
                               else np.asarray(labels)[m], min_samples, disclosure,
                               list(x.columns)))  # fmt: skip
    return out, lab


def _fill_broadcast(r: Rounds, fill: np.ndarray, lo=None, hi=None) -> None:
    """The server tells every centre the fill values (and scaling range); each keeps them
    (``TableCentre.take_fill``) and fills its own rows."""
    r.ask("take_fill", {"fill": fill, "lo": lo, "hi": hi}, "fill", P.ACK, P.FILL)


def mds_centres(raw: pd.DataFrame, centre: pd.Series, min_samples: int = MIN_SAMPLES,
                disclosure: DisclosurePolicy | None = None) -> list[TableCentre]:  # fmt: skip
    """The centres of :func:`mds_impute_federated` (one per centre of the split, ordered by
    name), each with its rows of the raw 0/1/NaN table and the column names."""
    return _centres(raw, centre, None, min_samples, "MDS federated imputation split",
                    disclosure)[0]  # fmt: skip


def heart_centres(
    df: pd.DataFrame,
    hospital: pd.Series,
    target: str,
    columns: Sequence[str] = HEART_COLUMNS,
    min_samples: int = MIN_SAMPLES,
    disclosure: DisclosurePolicy | None = None,
) -> tuple[list[TableCentre], pd.DataFrame, np.ndarray]:
    """The centres of :func:`heart_impute_federated` (its ``columns``, 0 → NaN, and the class
    of each row), the recoded columns and the classes."""
    x = df[list(columns)].astype(float)
    x = x.where(x != 0)  # 0 codes a missing value (seed 004 §2.4)
    y = _class_labels(df, target)
    centres, _ = _centres(x, hospital, y, min_samples, "heart federated imputation", disclosure)
    return centres, x, y


def mds_server(proxies: Sequence, n_columns: int, min_samples: int = MIN_SAMPLES) -> ColumnStats:
    """Server of the MDS imputation: every column's moments (its frequency of ones), then the
    fill broadcast. A column no centre reported gets a NaN fill; a centre that must fill it (it
    has NaNs there: only it knows) stops with the column named (``TableCentre.take_fill``)."""
    r = Rounds(proxies)
    stats = column_stats_server(proxies, n_columns, protocols=Protocols(min_samples), rounds=r)
    _fill_broadcast(r, stats.mean)
    return stats


def heart_server(
    proxies: Sequence,
    columns: Sequence[str],
    how: str = "median",
    bins: int = BINS,
    min_samples: int = MIN_SAMPLES,
) -> dict[int, np.ndarray]:
    """Server of the heart imputation: the classes the centres report (never a pooled target
    column; issue 30), per class the columns' moments and (median) binned counts, then the
    fill broadcast (``prep_class_fill_broadcast``): the classes, their fills and per (class,
    column) whether any centre reported a value. ``{class: fill per column}``, NaN where none
    did; a centre that must fill such a cell (it has missing values of the class there: only
    it knows) stops with column, class and centre named (``TableCentre.take_fill``), on a
    deployment as in-process. ``columns`` (public names) give the number of columns."""
    r = Rounds(proxies)
    reported = r.ask("label_set", {"step": "labels"}, "labels", P.LABELS, P.REQUEST)
    classes = sorted({int(v) for _, m in reported for v in m["labels"]})
    fills = {}
    for cls in classes:
        st = column_stats_server(
            proxies,
            len(columns),
            label=cls,
            binned=range(len(columns)) if how == "median" else (),
            bins=bins,
            protocols=Protocols(min_samples),
            rounds=r,
        )
        fills[cls] = st.quantile(0.5) if how == "median" else st.mean
    fill = np.array([fills[c] for c in classes]).reshape(len(classes), len(columns))
    r.ask("take_fill", {"fill": fill, "classes": np.asarray(classes, dtype=np.int64),
                        "has": ~np.isnan(fill)}, "fill", P.ACK, P.CLASS_FILL)  # fmt: skip
    return fills


def mds_impute_federated(
    raw: pd.DataFrame,
    centre: pd.Series,
    min_samples: int = MIN_SAMPLES,
    transport: Transport = INPROCESS,
    ledger: Ledger | None = None,
    disclosure: DisclosurePolicy | None = None,
) -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    """(imputed features, NaNs imputed per column, fill values): NaN → federated frequency of
    ones (binary 0/1/NaN columns, checked as :func:`~fedclust.data.preprocess.
    impute_binary_frequency` does)."""
    from ..preprocess import impute_binary_frequency

    impute_binary_frequency(raw.fillna(0), where="MDS features")  # the 0/1 check, pooled-free
    centres, lab = _centres(raw, centre, None, min_samples, "MDS federated imputation split",
                            disclosure)  # fmt: skip
    led = ledger if ledger is not None else Ledger()
    server = partial(mds_server, n_columns=raw.shape[1], min_samples=min_samples)
    stats = federate(centres, server, ledger=led, transport=transport)
    fill = pd.Series(stats.mean, index=raw.columns)
    out = raw.copy()
    for c in centres:  # each centre fills its own rows with the value it was sent
        rows = raw.index[(lab == c.cid).to_numpy()]
        out.loc[rows] = raw.loc[rows].fillna(pd.Series(c.fill["fill"], index=raw.columns))
    return out.astype(float), raw.isna().sum(), fill


def heart_impute_federated(
    df: pd.DataFrame,
    hospital: pd.Series,
    target: str,
    how: str = "median",
    columns: tuple[str, ...] = HEART_COLUMNS,
    min_samples: int = MIN_SAMPLES,
    bins: int = BINS,
    transport: Transport = INPROCESS,
    ledger: Ledger | None = None,
    disclosure: DisclosurePolicy | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Zeros of ``columns`` → the class median (binned counts) or mean over all hospitals;
    returns the imputed table and ``{column: {class: {"value", "count"}}}`` as
    :func:`fedclust.data.heart.impute_class_conditional`. A missing cell of a class no centre
    reports a value for (fewer rows / observed values of the class than the floor at every
    centre) stops the run at the centre holding it (:func:`~.tabular.no_class_fill`)."""
    if how not in ("median", "mean"):
        raise ValueError(f"imputation must be median or mean, not {how!r}")
    centres, x, y = heart_centres(df, hospital, target, columns, min_samples, disclosure)
    led = ledger if ledger is not None else Ledger()
    server = partial(heart_server, columns=list(columns), how=how, bins=bins,
                     min_samples=min_samples)  # fmt: skip
    fills = federate(centres, server, ledger=led, transport=transport)
    out = df.copy()
    info: dict = {}
    for j, col in enumerate(columns):
        vals = x[col].copy()
        info[col] = {}
        for cls in sorted(fills):
            miss = (y == cls) & vals.isna().to_numpy()
            if miss.any():
                vals[miss] = fills[cls][j]
                info[col][str(int(cls))] = {"value": float(fills[cls][j]),
                                            "count": int(miss.sum())}  # fmt: skip
        # every missing cell got a value: a centre holding one its class has none for stopped
        # (TableCentre.take_fill, InputDataError naming column, class and centre)
        out[col] = vals
    return out, info


def _class_labels(df: pd.DataFrame, target: str) -> np.ndarray:
    """The target column as whole-number class labels (a 0.5 was truncated to class 0)."""
    if target not in df:
        raise InputDataError(f"no target column {target!r}", where="heart federated imputation",
                             fix="name the table's class column")  # fmt: skip
    y = pd.to_numeric(df[target], errors="coerce").to_numpy(np.float64)
    bad = ~np.isfinite(y) | (y != np.round(y))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputDataError(
            f"{int(bad.sum())} {target} value(s) are not whole class labels, e.g. "
            f"{df[target].iloc[i]!r} (row {df.index[i]!r})",
            where=f"heart federated imputation, column {target}",
            fix="class labels 0, 1, …; drop rows without a label",
        )
    return y.astype(int)


__all__ = [
    "heart_centres",
    "heart_impute_federated",
    "heart_server",
    "mds_centres",
    "mds_impute_federated",
    "mds_server",
]
