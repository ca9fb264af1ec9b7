"""Statistics between attack conditions (seed 001 §8.2): paired and Welch t-tests via scipy.

The thesis calls its tests "paired" but reports fractional degrees of freedom (Welch); both are
reported, labelled.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def compare(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Paired t-test (``ttest_rel``) and Welch t-test (``ttest_ind(equal_var=False)``) of a vs b."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    out = {"n_a": len(a), "n_b": len(b), "mean_a": a.mean(), "mean_b": b.mean()}
    if len(a) == len(b) and len(a) > 1:
        r = stats.ttest_rel(a, b)
        out.update(paired_t=float(r.statistic), paired_p=float(r.pvalue), paired_df=len(a) - 1)
    else:
        out.update(paired_t=np.nan, paired_p=np.nan, paired_df=np.nan)
    w = stats.ttest_ind(a, b, equal_var=False)
    out.update(welch_t=float(w.statistic), welch_p=float(w.pvalue), welch_df=float(w.df))
    return out
