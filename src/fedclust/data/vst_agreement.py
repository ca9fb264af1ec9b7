"""Agreement of the subset-trend VST (``vst(fit_genes=N)``, DESeq2 ``vst(nsub)``) with the full
pydeseq2 VST, with "identical top-N selection up to ties" made precise (issue 15).

The selection score of a gene is its sample variance ``s_g`` over the n samples (VST scale,
:func:`fedclust.data.preprocess.top_variable_genes`). A variance estimated from n samples has a
standard error of its own, ``SE_g = √((m4_g − s_g⁴ (n − 3)/(n − 1)) / n)`` (m4 = fourth central
moment; ``s_g² √(2/(n−1))`` for normal data): two genes whose variances differ by less than
about two standard errors cannot be ordered by the data. A gene in the symmetric difference of
the two top-N sets is a **tie** when its full-VST variance lies within ``TIE_SE = 2`` standard
errors of the full cut-off (the N-th largest variance): ``|s_g − c| ≤ 2 SE_g``.

Reported beside it: the fast path's per-gene score error ``|ŝ_g − s_g|`` in units of ``SE_g``
(how far the subset trend moves a score compared with the score's own noise), and the full
method's own selection noise, the number of top-N genes that change when the samples are
bootstrap-resampled (transform fixed).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..seeds import rng

TIE_SE = 2.0


def variance_se(values: np.ndarray) -> np.ndarray:
    """Standard error of each column's sample variance (ddof 1), from its fourth moment."""
    x = np.asarray(values, dtype=float)
    n = x.shape[0]
    dev = x - x.mean(axis=0)
    s2 = (dev**2).sum(axis=0) / (n - 1)
    m4 = (dev**4).mean(axis=0)
    return np.sqrt(np.maximum(m4 - s2**2 * (n - 3) / (n - 1), 0.0) / n)


def _top(var: np.ndarray, names: np.ndarray, n: int) -> set:
    order = np.lexsort((names, -var))  # as top_variable_genes: variance, then name
    return set(names[order[:n]])


def vst_agreement(
    fast: pd.DataFrame, full: pd.DataFrame, n_top: int, bootstrap: int = 5, seed: int = 0
) -> dict:
    """Per-gene correlation, max |Δ|, and the top-``n_top`` agreement up to ties (see module)."""
    if list(fast.columns) != list(full.columns) or fast.shape != full.shape:
        raise ValueError("fast and full VST must have the same samples and genes")
    a, b = fast.to_numpy(dtype=float), full.to_numpy(dtype=float)
    ac, bc = a - a.mean(0), b - b.mean(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = (ac * bc).sum(0) / np.sqrt((ac**2).sum(0) * (bc**2).sum(0))
    names = np.asarray(full.columns.astype(str))
    s_fast, s_full = a.var(axis=0, ddof=1), b.var(axis=0, ddof=1)
    se = variance_se(b)
    top_fast, top_full = _top(s_fast, names, n_top), _top(s_full, names, n_top)
    cut = np.sort(s_full)[::-1][n_top - 1]
    diff = sorted(top_fast ^ top_full)
    pos = {g: i for i, g in enumerate(names)}
    idx = np.array([pos[g] for g in diff], dtype=int)
    gap_se = np.abs(s_full[idx] - cut) / se[idx] if len(idx) else np.zeros(0)
    union = np.array([pos[g] for g in top_fast | top_full], dtype=int)
    score_err_se = np.abs(s_fast[union] - s_full[union]) / se[union]
    g = rng(seed, "vst agreement bootstrap")
    boot = []
    for _ in range(bootstrap):
        rows = g.integers(0, b.shape[0], b.shape[0])
        boot.append(len(_top(b[rows].var(axis=0, ddof=1), names, n_top) ^ top_full) // 2)
    return {
        "genes": int(b.shape[1]),
        "samples": int(b.shape[0]),
        "per_gene_corr_min": float(np.nanmin(corr)),
        "max_abs_diff": float(np.abs(a - b).max()),
        "n_top": int(n_top),
        "swapped": len(diff) // 2,
        "swapped_genes": diff,
        "cutoff_variance": float(cut),
        "max_gap_to_cutoff_rel": float(np.max(np.abs(s_full[idx] / cut - 1))) if len(idx) else 0.0,
        "max_gap_to_cutoff_se": float(gap_se.max()) if len(idx) else 0.0,
        "all_swaps_are_ties": bool(np.all(gap_se <= TIE_SE)),
        "max_score_error_se": float(score_err_se.max()),
        "median_score_error_se": float(np.median(score_err_se)),
        "bootstrap_swapped_median": float(np.median(boot)) if boot else float("nan"),
        "bootstrap_swapped": boot,
    }
