"""Fig 4.6 (a federated dendrogram with inversions) and the Appendix A outlier demonstration.

* :func:`outlier_data` / :func:`outlier_demo` — thesis Appendix A (spec §9): 3 well-separated 2-D
  blobs and one stark outlier. Keep every pooled merge height but merge a random pair of clusters
  at each step; "without the outlier" the random tree of the blob points is compared with their
  pooled tree (thesis: mean CCC 8.9e-5 over 100 shufflings); "with the outlier" the last merge
  is forced to join the outlier (thesis: mean CCC 0.71). The CCC is dominated by the large
  cophenetic distances, so one well-placed outlier hides all the wrong merges below it.
* :func:`inversion_example` — thesis Fig 4.6 (§4.2.3.3): the gradual-sharing run of the bimodal
  toy with the most inversions (merges lower than one of their children).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..metrics.hierarchy import ccc
from ..seeds import derive_seed, rng
from .boundary import SYNTHETIC
from .gradual import count_inversions, gradual_sharing
from .pooled import pooled_linkage
from .toy import bimodal


def outlier_data(
    seed: int, n_per_blob: int = 30, sigma: float = 0.5, outlier_at: float = 22.0
) -> tuple[np.ndarray, np.ndarray]:
    """Appendix Fig A.1: 3 blobs (centres (0, 0), (5, 0), (0, 5), sd ``sigma``) + one outlier.

    Returns ``(x, is_outlier)``; the outlier is the last row, at ``(outlier_at, outlier_at)``.
    The thesis does not give its geometry: with the outlier at (22, 22) the "with outlier" CCC
    lands near the thesis' 0.71 (0.49 at 15, 0.85 at 30; "without" stays ≈ 0 for all).
    """
    g = rng(seed, "appendix A", n_per_blob, sigma)
    centres = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    x = np.vstack([c + g.normal(0.0, sigma, (n_per_blob, 2)) for c in centres])
    x = np.vstack([x, [[outlier_at, outlier_at]]])
    return x, np.r_[np.zeros(len(x) - 1, bool), True]


def random_merges(heights: np.ndarray, n: int, gen: np.random.Generator) -> np.ndarray:
    """A scipy linkage over ``n`` points whose t-th merge joins a random pair at ``heights[t]``."""
    active = list(range(n))
    sizes = {i: 1 for i in range(n)}
    z = np.empty((n - 1, 4))
    for t in range(n - 1):
        i, j = sorted(gen.choice(len(active), size=2, replace=False))
        a, b = active[i], active[j]
        new = n + t
        sizes[new] = sizes[a] + sizes[b]
        z[t] = (a, b, heights[t], sizes[new])
        active.pop(j)
        active[i] = new
    return z


def outlier_demo(seed: int, runs: int = 100, method: str = "average", **kw) -> pd.DataFrame:
    """CCC of shuffled-merge trees vs pooled, without and with the outlier (one row per run)."""
    x, out = outlier_data(seed, **kw)
    blobs = x[~out]
    z_blobs, z_all = pooled_linkage(blobs, method), pooled_linkage(x, method)
    if not np.isclose(z_all[-1, 2], z_all[:, 2].max()) or z_all[-1, 3] != len(x):
        raise AssertionError("the outlier must be merged last in the pooled tree")
    n = len(blobs)
    rows = []
    for r in range(runs):
        gen = rng(seed, "appendix A shuffle", r)
        z_wo = random_merges(z_blobs[:, 2], n, gen)
        # with the outlier: the blob points get the first n − 1 heights of the full tree at
        # random, then the last merge joins their root with the outlier (index n)
        z_in = random_merges(z_all[:-1, 2], n, gen)
        last = np.array([[2 * n - 1, n, z_all[-1, 2], n + 1]])  # root of the shifted tree
        z_w = np.vstack([_shift(z_in, n), last])
        rows.append(
            {
                "run": r,
                "ccc_without_outlier": ccc(z_wo, z_blobs),
                "ccc_with_outlier": ccc(z_w, z_all),
            }
        )
    return pd.DataFrame(rows)


def _shift(z: np.ndarray, n: int) -> np.ndarray:
    """Renumber cluster ids ≥ n by one (the outlier takes leaf id n in the full tree)."""
    z = z.copy()
    for col in (0, 1):
        z[:, col] = np.where(z[:, col] >= n, z[:, col] + 1, z[:, col])
    return z


def inversion_example(
    seed: int,
    runs: int = 3,
    methods: tuple[str, ...] = ("complete", "average", "ward"),
    n_mins: tuple[int, ...] = (5, 10, 15),
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Fig 4.6: the bimodal-toy gradual-sharing tree with the most inversions (and its pooled)."""
    best = None
    for r in range(runs):
        x, _, c = bimodal(derive_seed(seed, "bimodal", r))
        for method in methods:
            for n_min in n_mins:
                z = gradual_sharing(x, c, n_min, method, policy=SYNTHETIC).Z
                inv = count_inversions(z)
                if best is None or inv > best[0]:
                    best = (
                        inv,
                        z,
                        pooled_linkage(x, method),
                        dict(run=r, method=method, n_min=n_min),
                    )
    inv, z, zp, meta = best
    return z, zp, {**meta, "inversions": inv}
