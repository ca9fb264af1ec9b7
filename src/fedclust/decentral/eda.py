"""Chapter 3 of seed 004: the data description (Tables 3.1–3.4, Figs 3.1–3.2), thesis beside ours.

All on the whole 918-row table, as the thesis' EDA notebook (spec §2.3–2.5): Table 3.2 and 3.3 on
the raw data (zeros not yet missing), Fig 3.1 after the class-conditional imputation, Fig 3.2 the
Spearman correlation of the 20 one-hot/numeric features and the target (rank-based, so the
thesis' global MinMax scaling does not change it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedclust.data.heart import ROW_RANGE_HOSPITALS, TARGET

#: Table 3.1 (verbatim; the thesis prints n = 151 for clev, which has 152 rows)
TABLE_3_1 = {
    "hung": (293, "Hungarian Institute of Cardiology, Budapest: Andras Janosi, M.D."),
    "swit": (184, "University Hospital (Zurich and Basel), Switzerland: William Steinbrunn, M.D. "
                  "and Matthias Pfisterer, M.D."),
    "long": (138, "V.A. Medical Center, Long Beach: Robert Detrano, M.D., Ph.D."),
    "stat": (151, "Statlog dataset (confidential source): King, Ross D., Ph.D."),
    "clev": (151, "Cleveland Clinic Foundation: Robert Detrano, M.D., Ph.D."),
}  # fmt: skip
#: Table 3.2: pandas describe() of the raw numeric columns
TABLE_3_2 = {
    "Age": [918, 53.51, 9.43, 28, 47, 54, 60, 77],
    "RestingBP": [918, 132.40, 18.51, 0, 120, 130, 140, 200],
    "Cholesterol": [918, 198.80, 109.38, 0, 173.25, 223, 267, 603],
    "MaxHR": [918, 136.81, 25.46, 60, 120, 138, 156, 202],
    "Oldpeak": [918, 0.89, 1.07, -2.6, 0, 0.6, 1.5, 6.2],
}
DESCRIBE = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
#: Table 3.3: % outliers (1.5·IQR rule on the raw data)
TABLE_3_3 = {"RestingBP": 3.05, "Cholesterol": 19.96, "MaxHR": 0.22, "Oldpeak": 1.74}
#: Table 3.4: % positive, % negative, total per hospital
TABLE_3_4 = {
    "clev": (45.4, 54.6, 152), "hung": (36.2, 63.8, 293), "long": (76.1, 23.9, 138),
    "stat": (46.4, 53.6, 151), "swit": (85.9, 14.1, 184), "Total": (55.3, 44.7, 918),
}  # fmt: skip
#: §3.1.4: features the thesis names as correlating 0.3–0.6 with the target
THESIS_TARGET_CORRELATES = ["ST_Slope_Flat", "ChestPainType_ASY", "ExerciseAngina_Y", "Oldpeak",
                            "Sex_M"]  # fmt: skip
VIOLIN_COLUMNS = ["Age", "RestingBP", "Cholesterol", "MaxHR", "Oldpeak", TARGET]


def _compare(ours: pd.Series, thesis: pd.Series) -> pd.DataFrame:
    out = pd.DataFrame({"thesis": thesis, "ours": ours})
    out["difference"] = out["ours"] - out["thesis"]
    return out


def table_3_1(obs: pd.DataFrame) -> pd.DataFrame:
    """Clients, their hospital label, n (thesis | ours) and the true sources of their rows."""
    rows = []
    for name, (n_thesis, who) in TABLE_3_1.items():
        sel = obs[obs["hospital"] == name]
        src = ""
        if "source" in obs.columns:
            vc = sel["source"].value_counts()
            src = ", ".join(f"{s} {c}" for s, c in vc.items())
        a, b = ROW_RANGE_HOSPITALS[name]
        rows.append({"client": name, "hospital_and_author": who, "rows": f"{a}-{b - 1}",
                     "n_thesis": n_thesis, "n_ours": len(sel), "difference": len(sel) - n_thesis,
                     "true_sources_of_rows": src})  # fmt: skip
    return pd.DataFrame(rows).set_index("client")


def table_3_2(raw: pd.DataFrame) -> pd.DataFrame:
    """pandas ``describe()`` of the raw numeric columns; rows variable × statistic."""
    desc = raw[list(TABLE_3_2)].astype(float).describe()
    parts = []
    for var, vals in TABLE_3_2.items():
        t = _compare(desc[var].reindex(DESCRIBE), pd.Series(vals, index=DESCRIBE, dtype=float))
        t.index = pd.MultiIndex.from_product([[var], DESCRIBE], names=["variable", "statistic"])
        parts.append(t)
    return pd.concat(parts).round(2)


def outliers(raw: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Tukey's rule on the raw data: below Q1 − 1.5·IQR or above Q3 + 1.5·IQR (pandas quantiles)."""
    rows = []
    for c in columns:
        x = raw[c].astype(float)
        q1, q3 = x.quantile(0.25), x.quantile(0.75)
        lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        k = int(((x < lo) | (x > hi)).sum())
        rows.append({"variable": c, "lower": lo, "upper": hi, "outliers": k,
                     "percent": 100.0 * k / len(x)})  # fmt: skip
    return pd.DataFrame(rows).set_index("variable")


def table_3_3(raw: pd.DataFrame) -> pd.DataFrame:
    o = outliers(raw, ["Age", *TABLE_3_3])
    out = _compare(o["percent"], pd.Series(TABLE_3_3, dtype=float)).loc[o.index]
    out["outliers"] = o["outliers"]
    out["zeros"] = [int((raw[c] == 0).sum()) for c in out.index]
    return out.round(2)


def table_3_4(obs: pd.DataFrame) -> pd.DataFrame:
    """% positive / negative and total per client (thesis | ours)."""
    rows = []
    groups = [(h, obs[obs["hospital"] == h]) for h in sorted(obs["hospital"].unique())]
    for name, g in [*groups, ("Total", obs)]:
        pos = 100.0 * g[TARGET].mean()
        tp, tn, tt = TABLE_3_4.get(name, (np.nan,) * 3)
        rows.append({"name": name, "pct_positive_thesis": tp, "pct_positive_ours": pos,
                     "pct_negative_thesis": tn, "pct_negative_ours": 100.0 - pos,
                     "total_thesis": tt, "total_ours": len(g),
                     "positives_ours": int(g[TARGET].sum())})  # fmt: skip
    out = pd.DataFrame(rows).set_index("name")
    out["pct_positive_difference"] = out["pct_positive_ours"] - out["pct_positive_thesis"]
    return out.round(1)


def spearman(features: pd.DataFrame, obs: pd.DataFrame) -> pd.DataFrame:
    """21 × 21 Spearman matrix of the 20 features and the target (Fig 3.2)."""
    df = features.astype(float).copy()
    df[TARGET] = obs.loc[features.index, TARGET].astype(float)
    return df.corr(method="spearman")


def target_correlations(corr: pd.DataFrame) -> pd.DataFrame:
    """Spearman ρ with the target, strongest first; flags the thesis' named 0.3–0.6 features."""
    s = corr[TARGET].drop(TARGET)
    out = pd.DataFrame({"rho_with_target": s, "abs_rho": s.abs()})
    out["thesis_names_it_0.3_to_0.6"] = [f in THESIS_TARGET_CORRELATES for f in out.index]
    out["in_0.3_to_0.6"] = out["abs_rho"].between(0.3, 0.6)
    return out.sort_values("abs_rho", ascending=False).drop(columns="abs_rho").round(3)


def figure_violins(features: pd.DataFrame, obs: pd.DataFrame):
    """Fig 3.1: violins of the numeric attributes by class (3 × 2 grid, after imputation)."""
    import matplotlib.pyplot as plt

    y = obs.loc[features.index, TARGET].to_numpy()
    fig, axes = plt.subplots(3, 2, figsize=(9, 10))
    for ax, col in zip(axes.ravel(), VIOLIN_COLUMNS, strict=True):
        x = y.astype(float) if col == TARGET else features[col].to_numpy(float)
        data = [x[y == c] for c in (0, 1)]
        ax.violinplot(data, positions=[0, 1], showmedians=True)
        ax.set_xticks([0, 1])
        ax.set_xlabel(TARGET)
        ax.set_title(col)
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def figure_spearman(corr: pd.DataFrame):
    """Fig 3.2: heatmap of the Spearman matrix (coolwarm, −1..1)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 8.5))
    im = ax.imshow(corr.to_numpy(), cmap="coolwarm", vmin=-1, vmax=1)
    ax.set_xticks(range(len(corr)), corr.columns, rotation=90, fontsize=7)
    ax.set_yticks(range(len(corr)), corr.index, fontsize=7)
    fig.colorbar(im, ax=ax, shrink=0.8, label="Spearman rho")
    ax.set_title("Spearman correlation of the processed heart data")
    fig.tight_layout()
    return fig
