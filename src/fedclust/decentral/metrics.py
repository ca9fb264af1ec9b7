"""Keras' thresholded ROC AUC in numpy (spec §3.1: ``tf.keras.metrics.AUC()`` in the thesis).

``tf.keras.metrics.AUC(num_thresholds=200, curve="ROC", summation_method="interpolation")``:
thresholds ``[-ε, 1/(T-1), 2/(T-1), …, (T-2)/(T-1), 1+ε]`` (ε = 1e-7, Keras' backend epsilon),
a prediction is positive at threshold θ when ``p > θ``; per threshold TPR = TP/(TP+FN) and
FPR = FP/(FP+TN) (0 where the denominator is 0); the area is the trapezoidal sum
``Σ_i (FPR_i − FPR_{i+1}) · (TPR_i + TPR_{i+1}) / 2`` over consecutive thresholds. With scores
that are not spread over [0, 1] (the thesis' sigmoid outputs pile up near 0 and 1) it differs from
the exact AUC (sklearn ``roc_auc_score``): tied-bin pairs count ½ and all scores inside one
threshold bin collapse.
"""

from __future__ import annotations

import numpy as np

KERAS_EPSILON = 1e-7


def keras_thresholds(num_thresholds: int = 200) -> np.ndarray:
    """Keras' threshold grid: ``num_thresholds`` values from −ε to 1+ε."""
    if num_thresholds < 3:
        raise ValueError("num_thresholds must be > 2")
    inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return np.array([-KERAS_EPSILON, *inner, 1.0 + KERAS_EPSILON])


def keras_auc(y_true: np.ndarray, y_prob: np.ndarray, num_thresholds: int = 200) -> float:
    """ROC AUC as ``tf.keras.metrics.AUC(num_thresholds)`` reports it (probabilities in [0, 1])."""
    y = np.asarray(y_true, dtype=float).ravel() > 0.5
    p = np.asarray(y_prob, dtype=float).ravel()
    if y.shape != p.shape:
        raise ValueError("y_true and y_prob differ in length")
    thr = keras_thresholds(num_thresholds)
    above = p[None, :] > thr[:, None]  # (T, n)
    tp = (above & y).sum(1).astype(float)
    fp = (above & ~y).sum(1).astype(float)
    pos, neg = float(y.sum()), float((~y).sum())
    tpr = tp / pos if pos else np.zeros_like(tp)
    fpr = fp / neg if neg else np.zeros_like(fp)
    return float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2.0))
