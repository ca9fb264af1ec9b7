"""Class-conditional imputation per center (seed 004 §2.4 step 3, made federated).

The published code fills missing ``Cholesterol`` / ``RestingBP`` (coded 0) with the class median
of the *whole* table, before the client split: every hospital's fill value depends on the other
hospitals' rows. That pooled fill is kept for ``as_published`` (it is what the data stage writes).
Here every center (:class:`ImputeCentre`, holding only its own rows, missing-value flags and
labels) fills its own missing cells with the class median (or mean) of its own observed values.
The server (:func:`impute_server`) sees only messages: per column it asks every center which of
its classes it cannot fill itself (``heart_impute_needs``: the labels, metadata; a center that
can fill everything answers an empty list), so the server learns no label set beyond what the
centers report (the Swiss hospital never recorded cholesterol). A center names only classes with
at least its own floor of rows (``min_samples`` raised to its ``nfilter_subset``): a rarer class
whose patients all lack the value is filled from all its observed values of the column (source
``local_all_classes``), since naming it would reveal those patients. For each such class every other
center sends its class statistic and the number of observed values behind it (protocol
``heart_impute_stats``, at least ``min_samples`` values, else it abstains), and the server
returns the count-weighted mean of the statistics to the centers that asked
(``heart_impute_fill``). As in the seed, the statistics are conditional on the label and use all
of a center's rows (its future test rows included); only the pooling across centers is removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import InputDataError
from fedclust.federation import (
    INPROCESS,
    Abstain,
    Ledger,
    Protocol,
    Transport,
    call_all,
    declares,
    federate,
)
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.federation.guard import centre_policy

COLUMNS = ("Cholesterol", "RestingBP")
# server -> center: which column / class; the broadcast fill (a re-distributed aggregate)
IMPUTE_NEEDS_REQUEST = Protocol("heart_impute_needs_request", {"column": "metadata"})
IMPUTE_REQUEST = Protocol("heart_impute_request", {"column": "metadata", "label": "metadata"})
IMPUTE_BROADCAST = Protocol(
    "heart_impute_fill", {"column": "metadata", "label": "metadata", "fill": "aggregate"}
)
# center -> server: the classes it cannot fill itself (labels only), an empty acknowledgement
IMPUTE_NEEDS = Protocol("heart_impute_needs", {"labels": "metadata"})
IMPUTE_ACK = Protocol("heart_impute_ack", {})


@declares((1,))
def impute_protocol(min_samples: int) -> Protocol:
    return Protocol(
        "heart_impute_stats", {"stat": "aggregate", "n": "count"}, min_samples=min_samples
    )


class ImputeCentre:
    """One hospital's rows of the imputed columns, which cells are missing, its labels.

    Methods (Flower ``NumPyClient`` style, ``method(parameters, config)``): ``impute_needs``
    fills the cells of ``config["column"]`` it can from its own observed values and answers the
    labels it cannot; ``impute_stats`` answers its class statistic (or abstains below its
    floor); ``take_impute_fill`` fills the asked class with the broadcast value."""

    def __init__(self, cid: str, values: pd.DataFrame, missing: pd.DataFrame, labels: np.ndarray,
                 how: str = "median", min_samples: int = 5,
                 disclosure: DisclosurePolicy | None = None):  # fmt: skip
        self.cid = str(cid)
        self.columns = [str(c) for c in values.columns]
        self.values = {c: values[c].to_numpy(np.float64).copy() for c in self.columns}
        self.miss = {c: missing[c].to_numpy(bool) for c in self.columns}
        self.labels = np.asarray(labels)
        self.n_samples = int(len(self.labels))
        self.how, self.min_samples = how, int(min_samples)
        self.disclosure = disclosure  # None: the job's configured policy for this center
        self.protocols = {"impute_needs": IMPUTE_NEEDS,
                          "impute_stats": impute_protocol(self.min_samples),
                          "take_impute_fill": IMPUTE_ACK}  # fmt: skip
        self.fills: list[dict[str, Any]] = []  # the center's own record of what it filled
        for c in self.columns:  # a NaN among the observed values made the class fill NaN
            bad = int((np.isnan(self.values[c]) & ~self.miss[c]).sum())
            if bad:
                raise InputDataError(
                    f"{bad} {c} value(s) are NaN but not flagged missing",
                    where=f"center {self.cid}, column {c}",
                    fix="flag them in the missing mask (or fill them) before the imputation",
                )

    def _stat(self, v: np.ndarray) -> float:
        return float(getattr(np, self.how)(v))

    def _observed(self, col: str, label: Any) -> np.ndarray:
        return self.values[col][(self.labels == label) & ~self.miss[col]]

    def _fill(self, col: str, label: Any, fill: float, source: str) -> None:
        cells = (self.labels == label) & self.miss[col]
        self.values[col][cells] = fill
        self.fills.append({"center": self.cid, "column": col, "class": int(label), "fill": fill,
                           "cells": int(cells.sum()), "source": source})  # fmt: skip

    def impute_needs(self, parameters: Any, config: dict) -> dict:
        """Fill what the centre can itself; answer the classes it cannot (all their values
        missing) — only classes with ≥ its own floor rows (``min_samples`` raised to its
        ``nfilter_subset``; never the server's request): naming a rarer class would tell a
        curious server that a few such patients are here and lack the value (differencing two
        runs). Such a class is filled from all the centre's observed values of the column
        (source ``local_all_classes``: not class-conditional, no message)."""
        col = str(config["column"])
        if col not in self.values:
            raise InputDataError(f"column {col!r} missing", where=f"center {self.cid}")
        floor = centre_policy(self).floor(self.min_samples)
        needs = []
        for label in sorted(np.unique(self.labels[self.miss[col]]).tolist()):
            observed = self._observed(col, label)
            if observed.size:
                self._fill(col, label, self._stat(observed), "local")
            elif int((self.labels == label).sum()) >= floor:
                needs.append(int(label))
            else:
                self._fill_rare(col, label, floor)
        return {"labels": needs}

    def _fill_rare(self, col: str, label: Any, floor: int) -> None:
        """A class with fewer rows than the centre's floor, none observed in ``col``: the
        centre's own statistic over every observed value of the column."""
        observed = self.values[col][~self.miss[col]]
        if not observed.size:
            raise InputDataError(
                f"the missing {col} values of class {int(label)} (fewer rows than the centre's "
                f"floor {floor}) have no fill: the centre observed no {col} value, and asking "
                "the server for the class would tell it that a few such patients are here",
                where=f"center {self.cid}, column {col}, class {int(label)}",
                fix="lower decentral.impute_min_samples (and the centre's disclosure "
                "nfilter_subset), merge or drop the rare class, or use as_published (pooled "
                "imputation)",
            )
        self._fill(col, label, self._stat(observed), "local_all_classes")

    def impute_stats(self, parameters: Any, config: dict) -> dict | Abstain:
        col = str(config["column"])
        observed = self._observed(col, config["label"])
        if observed.size < centre_policy(self).floor(self.min_samples):
            # the reason names the rule, never the count (issue 22)
            return Abstain(f"too few observed {col} values in the class")
        return {"stat": self._stat(observed), "n": int(observed.size)}

    def take_impute_fill(self, parameters: Any, config: dict) -> dict:
        self._fill(str(config["column"]), config["label"], float(config["fill"]), "federated")
        return {}


def impute_server(proxies: Sequence[Any], columns: Sequence[str], min_samples: int) -> None:
    """The server side: only the centers' messages (their proxies), the column names and the
    protocol's floor; the classes it handles are those the centers report."""
    proto = impute_protocol(min_samples)
    for col in columns:
        needs: dict[int, list[Any]] = {}
        answers = call_all(proxies, "impute_needs", {"column": col}, 0, "impute_needs",
                           IMPUTE_NEEDS, IMPUTE_NEEDS_REQUEST)  # fmt: skip
        for p, msg in zip(proxies, answers, strict=True):
            for label in [] if msg is None else msg["labels"]:
                needs.setdefault(int(label), []).append(p)
        for label in sorted(needs):
            askers = needs[label]
            others = [p for p in proxies if p.cid != askers[0].cid]
            replies = call_all(others, "impute_stats", {"column": col, "label": label}, 0,
                               "impute_stats", proto, IMPUTE_REQUEST)  # fmt: skip
            stats = [(m["stat"], m["n"]) for m in replies if m is not None]
            if not stats:
                raise InputDataError(
                    f"no center can share a class-{label} {col} statistic over >= "
                    f"{proto.min_samples} values",
                    where=f"per-center imputation for center {askers[0].cid!r}",
                    fix="lower decentral.impute_min_samples or use as_published (pooled "
                    "imputation)",
                )
            n = np.array([s[1] for s in stats], dtype=np.float64)
            fill = float(np.sum(np.array([s[0] for s in stats]) * n) / n.sum())
            call_all(askers, "take_impute_fill", {"column": col, "label": label, "fill": fill},
                     0, "impute_fill", IMPUTE_ACK, IMPUTE_BROADCAST)  # fmt: skip


def impute_per_center(
    features: pd.DataFrame,
    missing: pd.DataFrame,
    y: np.ndarray,
    groups: np.ndarray,
    how: str = "median",
    min_samples: int = 5,
    ledger: Ledger | None = None,
    columns: Sequence[str] = COLUMNS,
    transport: Transport = INPROCESS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``features`` with the cells flagged in ``missing`` refilled per center and class.

    The simulation's split: one :class:`ImputeCentre` per group with only its rows, then
    :func:`impute_server` over ``transport``; each center's filled rows are put back. Returns the
    table and one row per (center, column, class) that had missing cells: the fill value, how
    many cells, and its source (``local`` or ``federated``).
    """
    if how not in ("median", "mean"):
        raise ValueError(f"imputation must be median or mean, not {how!r}")
    cols = list(columns)
    for col in cols:
        if col not in features or col not in missing:
            raise InputDataError(f"column {col!r} missing", where="heart features / missing mask")
    _check_inputs(features, missing, y, groups, cols)
    y = np.asarray(y)
    groups = np.asarray(groups).astype(str)
    centres, rows = [], {}
    for g in sorted(set(groups.tolist())):
        m = groups == g
        rows[g] = m
        centres.append(ImputeCentre(g, features.loc[m, cols], missing.loc[m, cols], y[m], how,
                                    min_samples))  # fmt: skip
    led = ledger if ledger is not None else Ledger()
    federate(centres, lambda ps: impute_server(ps, cols, min_samples), ledger=led,
             transport=transport)  # fmt: skip
    out = features.copy()
    for col in cols:
        vals = out[col].to_numpy(np.float64).copy()
        for c in centres:
            vals[rows[c.cid]] = c.values[col]
        out[col] = vals.astype(features[col].dtype)
    info = [r for c in centres for r in c.fills]
    info.sort(key=lambda r: (cols.index(r["column"]), r["class"], r["center"]))
    names = ["center", "column", "class", "fill", "cells", "source"]
    return out, pd.DataFrame(info, columns=names)


def _check_inputs(features, missing, y, groups, cols) -> None:
    """Lengths agree, the mask is boolean, every row has a label and a center (issue 30 C)."""
    where = "heart features / missing mask / labels / centers"
    lengths = {"features": len(features), "missing mask": len(missing), "labels": len(y),
               "centers": len(groups)}  # fmt: skip
    if len(set(lengths.values())) > 1:
        raise InputDataError(f"the tables differ in rows: {lengths}", where=where,
                             fix="pass one row per patient in each, in the same order")  # fmt: skip
    mask = missing[cols]
    if not all(pd.api.types.is_bool_dtype(mask[c]) for c in cols):
        raise InputDataError("the missing mask is not boolean", where=f"missing mask {cols}",
                             fix="True where a cell is missing, False where observed")  # fmt: skip
    for name, values in (("label", y), ("center", groups)):
        absent = int(pd.isna(pd.Series(np.asarray(values, dtype=object))).sum())
        if absent:
            raise InputDataError(f"{absent} row(s) have no {name}", where=where,
                                 fix=f"drop the rows without a {name} first")  # fmt: skip
