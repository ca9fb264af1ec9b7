"""Data for the ADMM stage (seed 003 §12.1): scikit-learn's bundled diabetes (in place of D6.2's
Boston housing) and breast-cancer (in place of Banknote) sets, and a clinical task on the MDS
cohort of the data stage over its centers.

Inputs are standardised (mean 0, SD 1, as D6.2's ``admm.py`` does "to improve convergence"), a
regression target too, and a bias column of ones is appended (x = [w; b], seed 003 §2.1). In the
distributed mode the means and SDs come from per-center sums (n, Σv, Σv²) sent through the
ledger, never from pooled rows; they equal the pooled ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from ..errors import ConfigError, InputDataError
from ..federation import Ledger, Message
from . import problems as P
from .protocols import LOCAL_UPDATE, STANDARDIZE, STANDARDIZE_GLOBAL, takes_part

SKLEARN_DATASETS = ("diabetes", "breast_cancer")
#: data sets that ship with a dependency (no download): scikit-learn's two and D6.2's own
#: regression set, Boston housing (506 × 13, target MEDV), from mlxtend (issue 28 item 10)
BUNDLED_DATASETS = (*SKLEARN_DATASETS, "boston")
DATASETS = (*BUNDLED_DATASETS, "mds")
BUNDLED_SOURCES = {
    "diabetes": "scikit-learn load_diabetes (real, bundled; in place of D6.2's housing set)",
    "breast_cancer": "scikit-learn load_breast_cancer (real, bundled; in place of Banknote)",
    "boston": "mlxtend boston_housing_data (real, bundled): D6.2's own housing set",
}


def load_sklearn(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features and raw target of a bundled data set (no download): scikit-learn's diabetes
    and breast cancer, mlxtend's Boston housing (D6.2's ``housing.csv``)."""
    from sklearn import datasets

    if name == "boston":
        from mlxtend.data import boston_housing_data

        X, y = boston_housing_data()
        return np.asarray(X, float), np.asarray(y, float)
    if name == "diabetes":
        return datasets.load_diabetes(return_X_y=True)
    if name == "breast_cancer":
        return datasets.load_breast_cancer(return_X_y=True)
    raise ConfigError(
        f"unknown ADMM dataset '{name}'",
        where="admm.tasks.<task>.dataset",
        fix=f"use one of {', '.join(DATASETS)}",
    )


def load_table_task(
    features: str, obs: str, outcome: str, positive: str | float | None
) -> tuple[pd.DataFrame, np.ndarray]:
    """Features and target from a data-stage table pair; rows with a missing outcome dropped.

    ``positive`` given: binary target (+1 where ``obs[outcome] == positive``, else −1);
    ``None``: the outcome as a number (regression).
    """
    from ..io import read_table

    X = read_table(features)
    o = pd.read_csv(obs, sep="\t", index_col=0)
    X.index, o.index = X.index.astype(str), o.index.astype(str)
    if outcome not in o.columns:
        raise InputDataError(
            f"outcome column '{outcome}' not in {obs}",
            where="admm.tasks.<task>.outcome",
            fix=f"use one of: {', '.join(map(str, o.columns))}",
        )
    y = o[outcome].reindex(X.index)
    keep = y.notna().to_numpy()
    X, y = X.loc[keep], y[keep]
    if positive is None:
        return X, y.to_numpy(dtype=float)
    pos = y.astype(str) == str(positive)
    if str(positive) not in set(y.astype(str)):  # e.g. OS_STATUS read as 1.0
        try:
            pos = pd.to_numeric(y, errors="coerce") == float(positive)
        except (TypeError, ValueError):
            values = sorted(set(y.astype(str)))
            raise InputDataError(
                f"positive = {positive!r} is not a value of outcome '{outcome}' "
                f"(values: {', '.join(values[:10])})",
                where="admm.tasks.<task>.positive",
                fix="set positive to the outcome value coded +1",
            ) from None
    if pos.all() or not pos.any():
        raise InputDataError(
            f"outcome '{outcome}' == {positive!r} holds for {int(pos.sum())} of {len(y)} rows: "
            "a classifier needs both classes",
            where="admm.tasks.<task>.positive",
        )
    return X, np.where(pos.to_numpy(), 1.0, -1.0)


def encode_target(problem: str, y: np.ndarray) -> np.ndarray:
    """Classification: a 0/1 (or ±1) target to ±1; regression: unchanged float."""
    y = np.asarray(y, dtype=float)
    if problem in P.CLASSIFICATION and not np.isin(y, (-1.0, 1.0)).all():
        vals = np.unique(y)
        if len(vals) != 2:
            raise InputDataError(f"{problem} needs a binary target, got {len(vals)} values")
        y = np.where(y == vals[1], 1.0, -1.0)
    return y


# ---- standardisation: pooled (one data holder) and federated (per-center sums) ------------


def center_moments(V: np.ndarray) -> Message:
    """Center side: n, column sums and sums of squares (nothing row-level)."""
    V = np.asarray(V, dtype=float)
    return {"n": int(len(V)), "sum": V.sum(axis=0), "sumsq": (V**2).sum(axis=0)}


def server_moments(messages: Sequence[Message]) -> tuple[np.ndarray, np.ndarray]:
    """Server side: mean and population SD from the centers' sums (SD 0 → 1: column kept as 0)."""
    n = sum(m["n"] for m in messages)
    s = np.sum([m["sum"] for m in messages], axis=0)
    ss = np.sum([m["sumsq"] for m in messages], axis=0)
    mean = s / n
    sd = np.sqrt(np.maximum(ss / n - mean**2, 0.0))
    return mean, np.where(sd > 1e-12 * np.maximum(1.0, np.abs(mean)), sd, 1.0)


def design(X: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """A = [(X − mean)/sd, 1]: standardised inputs plus the bias column (u_i = [v_i; 1])."""
    return np.hstack([(np.asarray(X, float) - mean) / sd, np.ones((len(X), 1))])


def pooled_blocks(
    X: np.ndarray, y: np.ndarray, problem: str, standardize: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Centralized mode: the data holder standardises with its own moments."""
    mean, sd = server_moments([center_moments(X)])
    if not standardize:
        mean, sd = np.zeros(X.shape[1]), np.ones(X.shape[1])
    b = np.asarray(y, float)
    if standardize and problem not in P.CLASSIFICATION:
        (ym,), (ysd,) = server_moments([center_moments(b[:, None])])
        b = (b - ym) / ysd
    return design(X, mean, sd), b


def federated_blocks(
    X: np.ndarray,
    y: np.ndarray,
    centers: np.ndarray,
    names: Sequence[str],
    problem: str,
    ledger: Ledger,
    standardize: bool = True,
    min_samples: int = 1,
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Distributed mode: per-center (A_i, b_i), standardised by federated moments (round 0);
    ``min_samples``: the fewest rows a center's moments may summarise (``admm.min_samples``).
    A center too small to release the model (its own policy, :func:`.admm.takes_part`) abstains
    from the start: it sends no moments and its rows are left out (issue 22). The workflow runs
    this round inside the federation (:class:`.admm.AdmmCentre`, on any transport); this is the
    same computation on blocks in one process (the tests' reference)."""
    from ..federation.disclosure import configured_policy
    from ..privacy.centre import centre_send, server_send

    X, y, centers = np.asarray(X, float), np.asarray(y, float), np.asarray(centers)
    parts = [(c, X[centers == c], y[centers == c]) for c in names]
    empty = [c for c, Xi, _ in parts if len(Xi) == 0]
    if empty:
        raise InputDataError(
            f"center(s) {', '.join(empty)} hold no samples",
            where="admm split",
            fix="use a split without empty centers",
        )
    kept = []
    for c, Xi, yi in parts:
        if takes_part(configured_policy(c), len(Xi), X.shape[1] + 1, min_samples):
            kept.append((c, Xi, yi))
        else:
            ledger.abstain(c, 0, LOCAL_UPDATE, "refused: too few rows for a model of this size")
    if not kept:  # not "needs at least one center" later: say which floor and what to change
        from ..privacy.centre import glm_floor

        need = max(glm_floor(configured_policy(c), X.shape[1] + 1, min_samples) for c in names)
        largest = max(len(Xi) for _, Xi, _ in parts)
        raise InputDataError(
            f"every center is too small to release a model of {X.shape[1] + 1} parameters: "
            f"the centers' disclosure floors (disclosure.nfilter_glm / nfilter_subset, "
            f"admm.min_samples) need {need} rows a center, the largest holds {largest}",
            where="admm split",
            fix="use fewer, larger centers (the task's split or admm.n_blocks) or fewer features",
        )
    parts = kept
    regress = problem not in P.CLASSIFICATION
    mean, sd = np.zeros(X.shape[1]), np.ones(X.shape[1])
    ym, ysd = 0.0, 1.0
    if standardize:
        proto = replace(STANDARDIZE, min_samples=int(min_samples))
        msgs = []
        for c, Xi, yi in parts:
            V = np.column_stack([Xi, yi]) if regress else Xi
            msgs.append(
                centre_send(ledger, configured_policy(c), c, len(V), center_moments(V), 0,
                            "standardize", proto)
            )  # fmt: skip
        mean, sd = server_moments(msgs)
        if regress:
            mean, sd, ym, ysd = mean[:-1], sd[:-1], mean[-1], sd[-1]
        for c, *_ in parts:
            server_send(ledger, c, {"mean": mean, "sd": sd, "y_mean": ym, "y_sd": ysd}, 0,
                        "standardize", STANDARDIZE_GLOBAL)  # fmt: skip
    return [(c, design(Xi, mean, sd), (yi - ym) / ysd if regress else yi) for c, Xi, yi in parts]
