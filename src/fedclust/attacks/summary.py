"""The attacks report section: headline numbers beside the thesis' (seed 001 §8)."""

from __future__ import annotations

import numpy as np
import pandas as pd

THESIS = {
    "pi_none": "76.5 % mean accuracy without projection",
    "pi_invariant": "40–60 % for every projection (p ≤ 0.003)",
    "rec_sf_all": "≈ 75 % (size factors, all genes)",
    "rec_vst_all": "≈ 20 % (VST, all genes; paired t-test p = 4.91e-5 at k = 1000)",
    "combined_original": "0.90 ± 0.06",
    "combined_reconstruction": "0.57 ± 0.09 (majority label predicted 87–99 %)",
}


def _ms(x: pd.Series) -> str:
    return f"{x.mean():.3f} ± {x.std(ddof=1) if len(x) > 1 else 0.0:.3f}"


def summary_table(
    known: pd.DataFrame, acc: pd.DataFrame, err: pd.DataFrame, combined: pd.DataFrame
) -> pd.DataFrame:
    """One row per headline quantity: measured (mean ± sd over runs) and the thesis value."""
    rows = []
    for prep, g in known.groupby("preprocessing"):
        half = g[np.isclose(g.fraction, 0.5)]
        if len(half):
            share = (half.max_rel_error < 0.1).mean()
            rows.append(
                (
                    "known I/O",
                    f"{prep}: share of points with ε_x < 10 % at 50 % known",
                    f"{share:.3f}",
                    "≥ 0.5 (size factors)",
                )
            )
    for (cond, clf), g in acc.groupby(["condition", "classifier"], sort=False):
        ref = (
            THESIS["pi_none"]
            if cond == "none"
            else (THESIS["pi_invariant"] if clf == "invariant" else "improves with k; ortho ≈ none")
        )
        rows.append(
            ("property inference", f"{cond} {clf}: test accuracy", _ms(g.test_accuracy), ref)
        )
    for (exp, prep, proj, k, dec, init), g in err.groupby(
        ["experiment", "preprocessing", "projection", "k", "decoder", "init"]
    ):
        per_run = g.groupby("run").rel_error.median()
        ref = ""
        if exp == "fig4_19":
            ref = THESIS["rec_vst_all"] if prep == "vst" else THESIS["rec_sf_all"]
        elif exp == "fig4_17":
            ref = "median > 50 %, min > 25 %; MLP better than linear"
        elif exp == "fig4_18":
            ref = "pinv ≈ 40 % at k = 10000; pinv init ≈ 50 % after training"
        rows.append(
            (
                "reconstruction",
                f"{exp} {prep} {proj} k={k} {dec} ({init}): median rel. error",
                _ms(per_run),
                ref,
            )
        )
    if len(combined):
        rows.append(
            (
                "combined",
                "sex accuracy on originals",
                _ms(combined.accuracy_original),
                THESIS["combined_original"],
            )
        )
        rows.append(
            (
                "combined",
                "sex accuracy on reconstructions",
                _ms(combined.accuracy_reconstruction),
                THESIS["combined_reconstruction"],
            )
        )
        rows.append(
            (
                "combined",
                "share of majority prediction on reconstructions",
                _ms(combined.majority_share_reconstruction),
                "0.87–0.99",
            )
        )
    return pd.DataFrame(rows, columns=["attack", "quantity", "measured (mean ± sd)", "thesis"])
