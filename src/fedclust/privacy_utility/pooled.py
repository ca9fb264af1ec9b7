"""Pooled references of the stage's own methods (the comparison, never part of a protocol).

- :func:`dp_lloyd_pooled` — DP-Lloyd on pooled data: diffprivlib's ``KMeans`` (Su et al.,
  "Differentially private k-means clustering", CODASPY 2016) re-implemented from its algorithm
  description, since diffprivlib does not import with scikit-learn 1.9 here: rows bounded
  (here: clipped to an L2 ball of radius ``bound``), per iteration every row assigned to its
  nearest centroid, per cluster the noisy count and the noisy sum, centroid = noisy sum /
  noisy count, kept inside the bounds. Gaussian noise (RDP accounting) in place of
  diffprivlib's Laplace / geometric draws, and the noise draws are arguments, so a test can
  give the federated and the pooled run the same draw.
- :func:`km_pooled` — lifelines' Kaplan–Meier on the pooled patients at given times.
- :func:`hac_labels` — scipy's HAC of the pooled rows cut into k clusters.
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from fedclust.federation.dp import clip_rows, cluster_stats

from .server import lloyd_update


def dp_lloyd_pooled(x: np.ndarray, init: np.ndarray, noise: list, bound: float) -> np.ndarray:
    """DP-Lloyd on the pooled rows with the given noise draws (module docstring)."""
    xs = clip_rows(x, bound)
    c = np.asarray(init, dtype=np.float64)
    for draw in noise:
        counts, sums = cluster_stats(xs, c)
        c = lloyd_update(counts, sums, draw, bound)
    return c


def km_pooled(t: np.ndarray, e: np.ndarray, times: np.ndarray) -> np.ndarray:
    """S(times) of the pooled Kaplan–Meier estimate (lifelines)."""
    from lifelines import KaplanMeierFitter

    km = KaplanMeierFitter().fit(np.asarray(t, float), np.asarray(e).astype(bool))
    return km.survival_function_at_times(np.asarray(times, float)).to_numpy()


def hac_labels(x: np.ndarray, k: int, method: str = "ward") -> np.ndarray:
    """Pooled HAC (scipy) cut into ``k`` clusters (labels 0 … k−1)."""
    return fcluster(linkage(np.asarray(x, float), method=method), k, criterion="maxclust") - 1
