"""Comparing a federated dendrogram with the pooled one (seed 001 §3.2.3, spec §9).

Every metric compares federated to pooled (same linkage / metric on pooled data), never to labels.
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import cophenet, fcluster
from sklearn import config_context
from sklearn.metrics import (
    adjusted_rand_score,
    calinski_harabasz_score,
    fowlkes_mallows_score,
    silhouette_score,
)


def ccc(z_fed: np.ndarray, z_pool: np.ndarray) -> float:
    """Cophenetic correlation: Pearson correlation of the two cophenetic distance vectors."""
    a, b = cophenet(z_fed), cophenet(z_pool)
    if np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def relative_cophenetic_error(z_fed: np.ndarray, z_pool: np.ndarray) -> float:
    """Mean over pairs of ``|c_fed − c_pool| / c_pool`` (pairs with c_pool = 0 skipped)."""
    a, b = cophenet(z_fed), cophenet(z_pool)
    ok = b > 0
    return float(np.mean(np.abs(a[ok] - b[ok]) / b[ok]))


def cut(z: np.ndarray, k: int) -> np.ndarray:
    """Flat cut of a dendrogram into at most k clusters (scipy ``maxclust``)."""
    return fcluster(z, k, criterion="maxclust")


def flat_agreement(z_fed: np.ndarray, z_pool: np.ndarray, k_max: int = 11) -> dict[str, np.ndarray]:
    """FMI and ARI between federated and pooled cuts for k = 2 … k_max."""
    ks = np.arange(2, k_max + 1)
    cuts = [(cut(z_pool, k), cut(z_fed, k)) for k in ks]  # each cut once (issue 15)
    # fcluster's labels need no parameter validation (the per-call overhead dominated these small
    # scores in the hac jobs); the scores themselves are sklearn's, unchanged
    with config_context(skip_parameter_validation=True):
        fmi = np.array([fowlkes_mallows_score(a, b) for a, b in cuts])
        ari = np.array([adjusted_rand_score(a, b) for a, b in cuts])
    return {"k": ks, "fmi": fmi, "ari": ari}


def cut_quality(x: np.ndarray, z: np.ndarray, k_max: int = 11, metric: str = "euclidean"):
    """Silhouette and Calinski–Harabasz of the cuts k = 2 … k_max (NaN where a cut is trivial)."""
    ks = np.arange(2, k_max + 1)
    sil, ch = [], []
    for k in ks:
        lab = cut(z, k)
        if 1 < len(np.unique(lab)) < len(lab):
            sil.append(silhouette_score(x, lab, metric=metric))
            ch.append(calinski_harabasz_score(x, lab))
        else:
            sil.append(np.nan)
            ch.append(np.nan)
    return {"k": ks, "silhouette": np.array(sil), "calinski_harabasz": np.array(ch)}


def compare(z_fed: np.ndarray, z_pool: np.ndarray, k_max: int = 11) -> dict[str, float]:
    """Headline numbers: CCC, relative cophenetic error, mean FMI / ARI over k = 2 … k_max."""
    fl = flat_agreement(z_fed, z_pool, k_max)
    return {
        "ccc": ccc(z_fed, z_pool),
        "rel_error": relative_cophenetic_error(z_fed, z_pool),
        "fmi": float(fl["fmi"].mean()),
        "ari": float(fl["ari"].mean()),
    }
