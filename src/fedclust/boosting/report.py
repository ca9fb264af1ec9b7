"""Tables, the gap-vs-S figure and the report section of the boosting stage (issue 26).

D6.2 (seed 003 ch. 10) prints no numbers: every comparison is with the pooled XGBoost model on
the same binned training rows (the exact protocol's target), over the same held-out rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .experiment import FAMILIES, ID_COLUMNS

SCHEME_KEYS = ["scheme", "family", "variant", "S"]
CELL_KEYS = ["dataset", "split", "regime", *SCHEME_KEYS]
LABELS = {
    "pooled": "pooled XGBoost (binned)",
    "pooled_raw": "pooled XGBoost (raw features)",
    "histogram": "histogram protocol (centres' floor)",
    "histogram_nofloor": "histogram protocol (floor 1: exact)",
    "isolated": "isolated centres (mean)",
    "bagging": "Flower-style tree bagging",
    "cyclic": "Flower-style cyclic training",
}


def label(scheme: str) -> str:
    if scheme.startswith("vote_"):
        _, variant, s = scheme.split("_")
        return f"top-S vote ({variant}), S={s[1:]}"
    return LABELS.get(scheme, scheme)


def _order(df: pd.DataFrame) -> pd.DataFrame:
    fam = df["family"].map({f: i for i, f in enumerate(FAMILIES)}).fillna(99)
    s = pd.to_numeric(df["S"].replace({"all": 10**9}), errors="coerce").fillna(-1)
    var = df["variant"].map({"zero": 0, "union": 1}).fillna(-1)
    keys = [k for k in ("dataset", "split") if k in df]
    out = df.assign(_f=fam, _v=var, _s=s).sort_values([*keys, "_f", "_v", "_s"], kind="stable")
    return out.drop(columns=["_f", "_v", "_s"]).reset_index(drop=True)


def per_unit(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per unit: the isolated centres averaged within their unit."""
    m = metrics.copy()
    for c in ("variant", "S"):
        m[c] = m[c].fillna("").astype(str)
    num = ["auc", "logloss", "pooled_auc", "pooled_logloss", "auc_gap", "logloss_gap",
           "floats_per_centre_per_tree", "down_floats_per_centre_per_tree", "abstentions",
           "max_prob_diff", "max_margin_diff", "max_leaf_diff", "same_trees", "trees",
           "leaves_per_tree"]  # fmt: skip
    keys = ID_COLUMNS[:-1]
    agg = {c: ("max" if c.startswith("max_") else "mean") for c in num}
    return m.groupby(keys, sort=False, dropna=False).agg(agg).reset_index()


def _mean_sd(g: pd.DataFrame, cols: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in cols:
        x = pd.to_numeric(g[c], errors="coerce").dropna()
        out[f"{c}_mean"] = float(x.mean()) if len(x) else np.nan
        out[f"{c}_sd"] = float(x.std(ddof=1)) if len(x) > 1 else np.nan
    return out


def gap_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, split, scheme): AUC / log-loss and their gap to the exact protocol
    (= pooled XGBoost on the binned rows), mean ± SD over repetitions; leaves per tree; floats
    per centre per tree (centre → server, server → centre) and abstentions per unit."""
    u = per_unit(metrics)
    rows = []
    for key, g in u.groupby(CELL_KEYS, sort=False):
        rows.append({
            **dict(zip(CELL_KEYS, key, strict=True)), "label": label(key[3]),
            "repetitions": len(g),
            **_mean_sd(g, ["auc", "logloss", "auc_gap", "logloss_gap"]),
            "pooled_auc_mean": float(g["pooled_auc"].mean()),
            "leaves_per_tree": float(g["leaves_per_tree"].mean()),
            "floats_per_centre_per_tree": float(g["floats_per_centre_per_tree"].mean()),
            "down_floats_per_centre_per_tree": float(g["down_floats_per_centre_per_tree"].mean()),
            "abstentions": float(g["abstentions"].mean()),
        })  # fmt: skip
    return _order(pd.DataFrame(rows))


def summary_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per scheme over every (dataset, split, repetition) unit: the headline's rows."""
    u = per_unit(metrics)
    rows = []
    for key, g in u.groupby(SCHEME_KEYS, sort=False):
        rows.append({
            **dict(zip(SCHEME_KEYS, key, strict=True)), "label": label(key[0]),
            "units": len(g), "datasets": g["dataset"].nunique(),
            "pooled_auc": float(g["pooled_auc"].mean()), "auc": float(g["auc"].mean()),
            **_mean_sd(g, ["auc_gap", "logloss_gap"]),
            "leaves_per_tree": float(g["leaves_per_tree"].mean()),
            "floats_per_centre_per_tree": float(g["floats_per_centre_per_tree"].mean()),
            "max_prob_diff": float(g["max_prob_diff"].max()),
            "same_trees": float(g["same_trees"].sum()) if g["same_trees"].notna().any()
            else np.nan,
            "trees": float(g["trees"].sum()),
        })  # fmt: skip
    return _order(pd.DataFrame(rows))


def exactness_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """The histogram protocol against ``xgboost.train`` per unit: same grid, identical trees
    (split features, cuts, children), largest |leaf|, |margin| and |probability| difference."""
    m = metrics[metrics["family"].isin(["histogram_nofloor", "histogram"])]
    cols = ["dataset", "split", "scheme", "rep", "centres", "floor", "same_grid", "same_trees",
            "trees", "max_leaf_diff", "max_margin_diff", "max_prob_diff",
            "abstentions"]  # fmt: skip
    return m[cols].reset_index(drop=True)


def time_table(timing: pd.DataFrame) -> pd.DataFrame:
    """Per scheme: seconds per tree and its ratio to pooled ``xgboost.train`` (hist) timed in
    the same job (median over units). Benchmarks only: not reproducible byte for byte."""
    t = timing.copy()
    for c in ("variant", "S"):
        t[c] = t[c].fillna("").astype(str)
    rows = []
    for key, g in t.groupby(SCHEME_KEYS, sort=False):
        rows.append({**dict(zip(SCHEME_KEYS, key, strict=True)), "label": label(key[0]),
                     "units": len(g), "seconds_per_tree": float(g["seconds_per_tree"].median()),
                     "pooled_seconds_per_tree": float(g["pooled_seconds_per_tree"].median()),
                     "ratio": float(g["ratio"].median()),
                     "ratio_min": float(g["ratio"].min()),
                     "ratio_max": float(g["ratio"].max())})  # fmt: skip
    return _order(pd.DataFrame(rows))


def _s_axis(values: Sequence[str]) -> list[str]:
    return sorted(set(values), key=lambda s: 10**9 if s == "all" else int(s))


def gap_figure(gap: pd.DataFrame, floor: int):
    """AUC and log-loss gap to the exact protocol vs S: one panel column per dataset, one line
    per (variant, split); mean ± SD over repetitions. Dotted: the histogram protocol at the
    centres' floor; 0 is the exact protocol (= pooled XGBoost on the binned rows)."""
    import matplotlib.pyplot as plt

    v = gap[gap["family"] == "vote"]
    datasets = list(dict.fromkeys(gap["dataset"]))
    fig, axes = plt.subplots(2, max(len(datasets), 1), figsize=(4.2 * max(len(datasets), 1), 6.4),
                             squeeze=False, sharex=True)  # fmt: skip
    xs = _s_axis(v["S"].astype(str)) if len(v) else ["1"]
    pos = {s: i for i, s in enumerate(xs)}
    colours = {}
    for col, ds in enumerate(datasets):
        for row, metric in enumerate(("auc_gap", "logloss_gap")):
            ax = axes[row, col]
            ax.axhline(0.0, color="k", lw=0.8)
            for split, g in gap[gap["dataset"] == ds].groupby("split", sort=False):
                regime = g["regime"].iloc[0]
                c = colours.setdefault(split, f"C{len(colours)}")
                for variant, ls in (("zero", "-"), ("union", "--")):
                    gv = g[(g["family"] == "vote") & (g["variant"] == variant)]
                    if gv.empty:
                        continue
                    gv = gv.assign(x=gv["S"].astype(str).map(pos)).sort_values("x")
                    ax.errorbar(gv["x"], gv[f"{metric}_mean"],
                                yerr=gv[f"{metric}_sd"].fillna(0.0), color=c, ls=ls, marker="o",
                                ms=4, capsize=2,
                                label=f"{split}{'' if split == regime else f' ({regime})'}, "
                                f"{variant}")  # fmt: skip
                h = g[g["scheme"] == "histogram"]
                if len(h):
                    ax.axhline(h[f"{metric}_mean"].iloc[0], color=c, ls=":", lw=1)
            ax.set_xticks(range(len(xs)), xs)
            if row == 0:
                ax.set_title(ds, fontsize=10)
                ax.legend(fontsize=6.5)
            else:
                ax.set_xlabel("S (candidates per centre and node)")
            if col == 0:
                ax.set_ylabel(("AUC" if metric == "auc_gap" else "log-loss")
                              + " − exact protocol")  # fmt: skip
    fig.suptitle(
        f"Top-S vote vs the exact histogram protocol (solid: unreported = 0, dashed: union "
        f"round; dotted: histogram protocol at floor {floor})", fontsize=9,
    )  # fmt: skip
    fig.tight_layout()
    return fig


def data_sources(metrics: pd.DataFrame) -> str:
    """'dataset: source (splits); ...' of the runs in ``metrics``."""
    return "; ".join(
        f"{ds}: {src} ({', '.join(sorted(set(metrics.loc[metrics['dataset'] == ds, 'split'])))})"
        for ds, src in dict(zip(metrics["dataset"], metrics["source"], strict=True)).items()
    )


def section_text(cfg: dict[str, Any], metrics: pd.DataFrame) -> list[str]:
    """The section's paragraphs (the first one is shown under the headline)."""
    p = cfg.get("params", {})
    g = cfg.get("grid", {})
    floor = int(cfg.get("min_samples", 3))
    sources = data_sources(metrics)
    reps = int(cfg.get("repetitions", 1))
    return [
        "Seed 003 (GenoMed4All D6.2) chapter 10: federated gradient tree boosting. D6.2 proposes "
        "that every centre sends its top-S splits by local gain with N_p, the server takes argmax "
        "Σ_p N_p·L_split, and leaf values come from summed gradient statistics, w = −G/(H+λ) (the "
        "sign printed in D6.2 is an erratum). D6.2 reports no numbers: every row compares with "
        "pooled XGBoost (xgboost.train, hist) on the same binned training rows, scored on the "
        "same held-out rows. The histogram protocol (per-bin sums added over centres) with no "
        "disclosure floor grows exactly XGBoost's trees; the vote is a heuristic whose gap to it "
        "the figure shows against S.",
        f"Model: {cfg.get('trees', 10)} trees, max_depth {p.get('max_depth', 3)}, eta "
        f"{p.get('eta', 0.3)}, lambda {p.get('lambda', 1.0)}, gamma {p.get('gamma', 0.0)}, "
        f"min_child_weight {p.get('min_child_weight', 1.0)}, base_score "
        f"{p.get('base_score', 0.5)}, no subsampling; {reps} repetition(s) (centre draw and "
        f"held-out rows, {cfg.get('test_fraction', 0.25):.0%} of every centre and class). Grid: "
        f"{g.get('method', 'quantile')} cuts, at most {g.get('max_bin', 32)} bins per feature, "
        f"from the centres' moments (a public lattice of {g.get('sketch_bins', 64)} cells over "
        f"mean ± {g.get('range_sd', 4.0)} SD) and their merged cell counts.",
        f"Disclosure: every message passes the centre-side guard and the ledger with a declared "
        f"protocol; each count in it is ≥ the centre's floor, max(min_samples = {floor}, its "
        "disclosure nfilter_subset). Bins with fewer samples are merged "
        "into runs (reported with their first and last non-empty bin; the server spreads a run "
        "over its bins by the grid's global bin counts), vote candidates need that many samples on "
        "both sides, a split's child sums are sent for both children or none, and a centre "
        "stops reporting below a split it could not report, so no aggregate the server sees "
        "covers fewer samples. Differences between histograms of different features are not "
        "blocked (that needs secure aggregation or noise). 'histogram_nofloor' runs the same "
        "protocol with every centre's floor at 1: the exactness check.",
        "How the vote behaves: a centre's local gain L_split includes lambda, so on a node that "
        "holds (nearly) one class at that centre every split has a negative local gain. In the "
        "'zero' variant such centres propose nothing; in the 'union' variant their negative "
        "gains enter the sum Σ_p N_p·L, and with strong label skew no candidate scores above "
        "0: the tree stops early (column leaves_per_tree). A voted split that fails the global "
        "stopping rules (min_child_weight, gamma, XGBoost's 1e-6) ends its node.",
        "Baselines: isolated centres (each centre's own xgboost.train, mean over centres), "
        "Flower-style tree bagging (every round each centre boosts a tree from the global model "
        "on its rows and the server appends all of them, as flwr's FedXgbBagging) and cyclic "
        "training (centres in turn add a tree, as FedXgbCyclic). Floats per centre per tree "
        "count every number a centre sends per boosting round (ledger; the grid exchange "
        "apart). Times (benchmark table) are per tree relative to pooled xgboost.train timed in "
        f"the same job. Data: {sources}.",
    ]
