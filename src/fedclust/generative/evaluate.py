"""Evaluation of the stage's models (never part of a protocol): survival (C-index, integrated
Brier score), downstream classification (accuracy, AUC), reconstruction / imputation errors,
clustering agreement (ARI / FMI, the scores fedclust's HAC comparisons use)."""

from __future__ import annotations

import numpy as np
from lifelines import KaplanMeierFitter
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_rand_score, fowlkes_mallows_score, roc_auc_score

from fedclust.errors import InputDataError
from fedclust.survival.cox import c_index  # noqa: F401  (Harrell's C, tested vs lifelines)


def censoring_survival(time: np.ndarray, event: np.ndarray, at: np.ndarray) -> np.ndarray:
    """G(t): Kaplan–Meier estimate of the censoring distribution (censoring = the event)."""
    km = KaplanMeierFitter().fit(np.asarray(time, float), 1 - np.asarray(event, int))
    return np.asarray(km.survival_function_at_times(np.asarray(at, float)), dtype=float)


def brier_scores(
    surv: np.ndarray,
    grid: np.ndarray,
    time: np.ndarray,
    event: np.ndarray,
) -> np.ndarray:
    """Graf et al.'s IPCW Brier score at each grid time: (1/n) Σ_i [S_i(t)² 1(t_i ≤ t, d_i = 1)
    / G(t_i) + (1 − S_i(t))² 1(t_i > t) / G(t)], G from the same (test) data, as pycox's
    ``EvalSurv`` and scikit-survival's ``brier_score`` do. ``surv``: n × len(grid)."""
    t = np.asarray(time, float)
    d = np.asarray(event, int)
    g_i = censoring_survival(t, d, t)
    g_t = censoring_survival(t, d, grid)
    died = (t[:, None] <= grid[None, :]) & (d[:, None] == 1)
    alive = t[:, None] > grid[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(died, surv**2 / g_i[:, None], 0.0)
        b = np.where(alive, (1.0 - surv) ** 2 / g_t[None, :], 0.0)
    return (a + b).mean(axis=0)


def integrated_brier(
    surv: np.ndarray, grid: np.ndarray, time: np.ndarray, event: np.ndarray
) -> float:
    """∫ BS(t) dt / (t_max − t_min) over ``grid`` (trapezoid rule)."""
    bs = brier_scores(surv, grid, time, event)
    return float(np.trapezoid(bs, grid) / (grid[-1] - grid[0]))


def time_grid(
    time: np.ndarray, event: np.ndarray, points: int = 50, quantile: float = 0.8
) -> np.ndarray:
    """An evaluation grid from the first event time to the ``quantile`` of the observed times
    (G(t) stays away from 0 there)."""
    t = np.asarray(time, float)
    ev = t[np.asarray(event, int) == 1]
    if ev.size == 0:
        raise InputDataError("no event in the evaluation set", where="integrated Brier score")
    lo, hi = float(ev.min()), float(np.quantile(t, quantile))
    if hi <= lo:
        hi = float(t.max())
    return np.linspace(lo, hi, int(points))


def classify(
    z_train: np.ndarray,
    y_train: np.ndarray,
    z_test: np.ndarray,
    y_test: np.ndarray,
    classes: np.ndarray,
    c: float = 1.0,
    seed: int = 0,
) -> dict[str, float]:
    """Logistic regression on ``z_train``; accuracy and AUC (binary; one-vs-rest macro for more
    classes) on the test set. Classes absent from training get probability 0."""
    y_train = np.asarray(y_train)
    if len(np.unique(y_train)) < 2:
        pred = np.full(len(y_test), y_train[0])
        prob = (classes[None, :] == y_train[0]).astype(float).repeat(len(y_test), 0)
    else:
        clf = LogisticRegression(C=float(c), max_iter=2000, random_state=seed)
        clf.fit(z_train, y_train)
        pred = clf.predict(z_test)
        prob = np.zeros((len(z_test), len(classes)))
        p = clf.predict_proba(z_test)
        for j, cl in enumerate(clf.classes_):
            prob[:, int(np.flatnonzero(classes == cl)[0])] = p[:, j]
    acc = float(np.mean(pred == np.asarray(y_test)))
    return {"accuracy": acc, "auc": auc(np.asarray(y_test), prob, classes)}


def auc(y: np.ndarray, prob: np.ndarray, classes: np.ndarray) -> float:
    """ROC AUC: binary (column of the second class), else one-vs-rest macro over the classes
    present in ``y``; NaN when ``y`` has one class."""
    present = np.unique(y)
    if len(present) < 2:
        return float("nan")
    if len(classes) == 2:
        return float(roc_auc_score(y == classes[1], prob[:, 1]))
    scores = [roc_auc_score(y == c, prob[:, j]) for j, c in enumerate(classes) if c in present]
    return float(np.mean(scores))


def masked_error(
    pred: np.ndarray,
    truth: np.ndarray,
    where: np.ndarray,
    scale: np.ndarray,
    categorical: np.ndarray,
) -> float:
    """Mean per-entry error over the entries where ``where`` is true: |pred − truth| / scale
    (scale = the column's evaluation-set SD for gaussian columns, 1 otherwise), misclassification
    for categorical columns. NaN when no entry is selected."""
    err = np.abs(pred - truth) / scale[None, :]
    if categorical.any():
        err[:, categorical] = np.round(pred[:, categorical]) != np.round(truth[:, categorical])
    sel = np.asarray(where, bool)
    return float(err[sel].mean()) if sel.any() else float("nan")


def agreement(labels: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """ARI and Fowlkes–Mallows index between a clustering and reference labels."""
    return {
        "ari": float(adjusted_rand_score(reference, labels)),
        "fmi": float(fowlkes_mallows_score(reference, labels)),
    }


def kmeans_labels(z: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-means (scikit-learn, 10 restarts) on representations: their cluster structure, apart
    from the model's own mixture components."""
    from sklearn.cluster import KMeans

    k = max(1, min(int(k), len(z)))
    return KMeans(k, n_init=10, random_state=seed).fit_predict(np.asarray(z, float))
