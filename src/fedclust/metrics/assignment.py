"""Cluster-assignment quality (seed 000 §3): Hungarian accuracy, cycle accuracy, ARI/NMI,
silhouette and Calinski–Harabasz in data and feature space (scikit-learn / scipy)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment


def _codes(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inv = np.unique(np.asarray(y), return_inverse=True)
    return uniq, inv


def hungarian_mapping(y_pred: np.ndarray, y_true: np.ndarray) -> dict:
    """Maximum-matching map predicted cluster → reference label (scipy linear_sum_assignment)."""
    pu, p = _codes(y_pred)
    tu, t = _codes(y_true)
    m = np.zeros((len(pu), len(tu)), dtype=np.int64)
    np.add.at(m, (p, t), 1)
    rows, cols = linear_sum_assignment(m, maximize=True)
    return {pu[r]: tu[c] for r, c in zip(rows, cols, strict=False)}


def hungarian_accuracy(y_pred: np.ndarray, y_true: np.ndarray) -> float:
    """max over one-to-one maps m of (1/n) Σ 1{y_i = m(ŷ_i)} (seed 000 §3.1)."""
    y_pred, y_true = np.asarray(y_pred), np.asarray(y_true)
    if len(y_pred) != len(y_true):
        raise ValueError("y_pred and y_true differ in length")
    if len(y_pred) == 0:
        return float("nan")
    mapping = hungarian_mapping(y_pred, y_true)
    return float(np.mean([mapping.get(p, None) == t for p, t in zip(y_pred, y_true, strict=False)]))


def cycle_accuracy(pred_reconstructed: np.ndarray, pred_original: np.ndarray) -> float:
    """Hungarian accuracy of the predictions on x̂ against those on x (seed 000 §3.2)."""
    return hungarian_accuracy(pred_reconstructed, pred_original)


def fraction_changed(pred: np.ndarray, prev: np.ndarray) -> float:
    """Δ_label: fraction of samples whose label changed (seed 000 §3.4)."""
    return float(np.mean(np.asarray(pred) != np.asarray(prev)))


def internal_scores(
    x: np.ndarray, z: np.ndarray, labels: np.ndarray, sample_size: int | None = None, seed: int = 0
) -> dict[str, float]:
    """Silhouette (cosine in data space, Euclidean in feature space) and Calinski–Harabasz in
    both spaces, raw and natural log (seed 000 §3.5–3.7). 0 when fewer than two clusters.
    ``sample_size``: silhouettes on a random subset (sklearn), for very large n."""
    from sklearn import metrics as skm  # here, not at import: ~0.6 CPU-s for every job

    n_lab = len(np.unique(labels))
    out: dict[str, float] = {}
    if n_lab < 2 or n_lab >= len(labels):
        return {
            k: 0.0
            for k in ("sil_data", "sil_feat", "ch_data", "ch_feat", "ln_ch_data", "ln_ch_feat")
        }
    out["sil_data"] = float(
        skm.silhouette_score(x, labels, metric="cosine", sample_size=sample_size, random_state=seed)
    )
    out["sil_feat"] = float(
        skm.silhouette_score(
            z, labels, metric="euclidean", sample_size=sample_size, random_state=seed
        )
    )
    out["ch_data"] = float(skm.calinski_harabasz_score(x, labels))
    out["ch_feat"] = float(skm.calinski_harabasz_score(z, labels))
    out["ln_ch_data"] = float(np.log(out["ch_data"]))
    out["ln_ch_feat"] = float(np.log(out["ch_feat"]))
    return out


def external_scores(labels: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """Hungarian accuracy, ARI and NMI against reference labels."""
    from sklearn import metrics as skm

    return {
        "accuracy": hungarian_accuracy(labels, reference),
        "ari": float(skm.adjusted_rand_score(reference, labels)),
        "nmi": float(skm.normalized_mutual_info_score(reference, labels)),
    }
