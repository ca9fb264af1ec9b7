"""The boosting stage's classification tasks and their centres (issue 26).

- ``heart``: the data stage's heart table (seed 004; ``results/data/heart/``), target
  ``HeartDisease``, centres = a metadata column (``hospital``: the thesis' five hospitals). The
  data stage filled unrecorded cholesterol / resting BP (coded 0) with the class median of the
  pooled table, a value derived from the label; here those cells get their recorded 0 back
  (a tree gives "not recorded" its own bin; no label enters the features).
- ``breast_cancer``: scikit-learn's bundled set (real), centres drawn by
  :func:`fedclust.data.split.make_split` (``equal``: IID, ``dirichlet``: label skew).
- ``mds``: the MDS OS-status task of the ADMM stage (the data stage's binary features, target
  ``OS_STATUS`` = 1; real IPSS-M with a mirror, else the simulated cohort), centres from a
  data-stage split file (``equal8``) or drawn like breast_cancer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..data.split import center_names, make_split
from ..errors import ConfigError, InputDataError
from ..seeds import derive_seed, rng

DATASETS = ("heart", "breast_cancer", "mds")
SPLIT_KINDS = ("column", "data", "equal", "uniform", "skewed", "dirichlet")
IID_KINDS = ("equal", "uniform", "skewed")  # label distribution the same in every centre


@dataclass
class Dataset:
    """Features (n × d), labels 0/1, and per row the metadata a ``column`` split may use."""

    name: str
    X: np.ndarray
    y: np.ndarray
    features: list[str]
    source: str
    columns: dict[str, np.ndarray]


def _check_xy(name: str, X: pd.DataFrame, y: np.ndarray) -> None:
    bad = [c for c in X.columns if X[c].isna().any()]
    if bad:
        raise InputDataError(
            f"{name}: missing values in {bad[:5]}", where=f"boosting dataset {name}",
            fix="the stage expects complete features (the data stage imputes them)",
        )  # fmt: skip
    if len(np.unique(y)) != 2:
        raise InputDataError(f"{name}: the target needs two classes", where=f"boosting {name}")


def load_heart(features: str, obs: str, heart_cfg: dict | None = None) -> Dataset:
    from ..data.heart import TARGET, load_from_config
    from ..decentral.imputation import COLUMNS
    from ..io import read_table

    X = read_table(features)
    o = read_table(obs).loc[X.index]
    if heart_cfg is not None:
        raw, _ = load_from_config(heart_cfg)
        if len(raw) != len(X):
            raise InputDataError(f"{len(raw)} raw rows vs {len(X)} feature rows", where=features)
        for c in COLUMNS:
            X.loc[(raw[c] == 0).to_numpy(), c] = 0.0
    y = o[TARGET].to_numpy().astype(int)
    _check_xy("heart", X, y)
    cols = {c: o[c].astype(str).to_numpy() for c in ("hospital", "source") if c in o}
    src = "heart disease, 918 patients of 5 hospitals (real; seed 004)"
    return Dataset("heart", X.to_numpy(float), y, list(X.columns), src, cols)


def load_breast_cancer() -> Dataset:
    from sklearn.datasets import load_breast_cancer as load

    b = load()
    src = "scikit-learn breast cancer (real, bundled; 569 tumours)"
    return Dataset("breast_cancer", b.data.astype(float), b.target.astype(int),
                   list(b.feature_names), src, {})  # fmt: skip


def load_mds(features: str, obs: str, outcome: str, positive: Any, source: str,
             splits: dict[str, str] | None = None) -> Dataset:  # fmt: skip
    """The ADMM stage's MDS task (:func:`fedclust.admm.data.load_table_task`), y ∈ {0, 1}."""
    from ..admm.data import load_table_task

    X, y = load_table_task(features, obs, outcome, positive)
    y01 = (np.asarray(y) > 0).astype(int)
    _check_xy("mds", X, y01)
    cols = {}
    for name, path in (splits or {}).items():
        tab = pd.read_csv(path, sep="\t", dtype={"sample_id": str}).set_index("sample_id")
        missing = X.index.difference(tab.index)
        if len(missing):
            raise InputDataError(
                f"{len(missing)} MDS samples have no centre in {path}",
                where=path,
                fix="rebuild the split from the same obs.tsv",
            )
        cols[name] = tab.loc[X.index, "center"].astype(str).to_numpy()
    return Dataset("mds", X.to_numpy(float), y01, list(X.columns),
                   f"{source}; target {outcome} == {positive}", cols)  # fmt: skip


# ------------------------------------------------------------------------------ centres
def regime(spec: dict, data_splits: dict | None = None) -> str:
    """``iid`` (same label distribution everywhere) or ``non-iid`` (label skew, real sites)."""
    kind = spec.get("kind")
    if kind == "data":
        kind = (data_splits or {}).get(spec.get("name"), {}).get("kind")
    return "iid" if kind in IID_KINDS else "non-iid"


def centres(ds: Dataset, split: str, spec: dict, seed: int, rep: int) -> np.ndarray:
    """The centre of every row (strings) for split ``split`` in repetition ``rep``."""
    kind = spec.get("kind")
    where = f"boosting.datasets.{ds.name}.splits.{split}"
    if kind in ("column", "data"):
        key = spec.get("column") if kind == "column" else spec.get("name")
        if key not in ds.columns:
            raise ConfigError(f"{ds.name} has no {kind} '{key}'", where=where,
                              fix=f"one of {sorted(ds.columns)}")  # fmt: skip
        return ds.columns[key]
    if kind not in SPLIT_KINDS:
        raise ConfigError(f"unknown split kind {kind!r}", where=where, fix=f"one of {SPLIT_KINDS}")
    k = int(spec.get("n_centres", 4))
    s = derive_seed(seed, "boosting", ds.name, split, rep)
    idx = make_split(ds.y if kind == "dirichlet" else len(ds.y), kind, k, s,
                     skewness=float(spec.get("skewness", 4.0)),
                     alpha=float(spec.get("alpha", 0.5)))  # fmt: skip
    return np.asarray(center_names(k))[idx]


def test_rows(y: np.ndarray, centre: np.ndarray, fraction: float, seed: int, *labels) -> np.ndarray:
    """Held-out rows (bool): ``fraction`` of every (centre, class), at random. The pooled test
    set is an evaluation only; every centre trains on its other rows."""
    gen = rng(seed, "boosting", "test", *labels)
    out = np.zeros(len(y), dtype=bool)
    for c in sorted(set(centre.tolist())):
        for lab in (0, 1):
            rows = np.flatnonzero((centre == c) & (y == lab))
            k = int(round(fraction * len(rows)))
            if k:
                out[gen.choice(rows, size=k, replace=False)] = True
    return out
