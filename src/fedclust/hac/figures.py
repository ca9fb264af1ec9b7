"""Figures and summary tables of the hac stage (thesis ch. 4 axes)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .toy import bimodal as bimodal_data

APPROX = "average (δ≈d)"  # average linkage with the current-distance approximation
COLORS = {
    "single": "C0",
    "complete": "C1",
    "average": "C2",
    "ward": "C3",
    "centroid": "C4",
    APPROX: "C5",
}


def split_skipped(t: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(settings that ran, settings skipped because n_min exceeds every center; issue 17).

    Average linkage's approximation variant is relabelled :data:`APPROX` so that figures and
    tables show it beside the thesis' bookkeeping ("average")."""
    if "skipped" not in t:
        return t, t.iloc[:0]
    sk = t["skipped"].astype(str).str.lower() == "true"
    ran = t[~sk].copy()
    if "variant" in ran:
        ran.loc[ran["variant"].astype(str) == "current", "linkage"] = APPROX
    return ran, t[sk]


def _band(ax, df: pd.DataFrame, x: str, y: str, label: str, color: str) -> None:
    """Mean line with 10–90 % and 25–75 % quantile bands (thesis ch. 4 intro)."""
    g = df.groupby(x)[y]
    m = g.mean()
    ax.plot(m.index, m.values, color=color, label=label, marker=".")
    for lo, hi, a in ((0.1, 0.9, 0.15), (0.25, 0.75, 0.25)):
        ax.fill_between(
            m.index, g.quantile(lo).values, g.quantile(hi).values, color=color, alpha=a, lw=0
        )


def bimodal(t: pd.DataFrame, seed: int):
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(10, 4))
    from ..seeds import derive_seed

    x, _, c = bimodal_data(derive_seed(seed, "bimodal", 0))
    for k in range(3):
        a0.scatter(*x[c == k].T, s=12, label=f"center {k + 1}")
    a0.set(title="bimodal toy data (run 0)", xlabel="x₁", ylabel="x₂")
    a0.legend()
    for m, d in t.groupby("linkage"):
        _band(a1, d, "n_min", "ccc", m, COLORS.get(m, "k"))
    a1.set(xlabel="n_min", ylabel="CCC", title="gradual sharing vs pooled", ylim=(0, 1.05))
    a1.legend()
    fig.tight_layout()
    return fig


def simultaneous(t: pd.DataFrame):
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, y in zip(axes, ("ccc", "fmi"), strict=True):
        for m, d in t.groupby("linkage"):
            _band(ax, d, "n_min", y, m, COLORS.get(m, "k"))
        ax.set(xlabel="minimum cluster size n_min", ylabel=y.upper(), ylim=(-0.05, 1.05))
    axes[0].legend()
    fig.tight_layout()
    return fig


def _panels(t: pd.DataFrame) -> list[tuple[str, str]]:
    return list(dict.fromkeys(zip(t["prep"], t["metric"], strict=True)))


def gradual(t: pd.DataFrame):
    """Fig 4.4: per panel, CCC and FMI vs n_min; mean line + 10–90 % / 25–75 % quantile bands
    over the cohorts (each cohort's value at an n_min is one observation, as in the thesis)."""
    panels = _panels(t)
    fig, axes = plt.subplots(2, len(panels), figsize=(4.2 * len(panels), 7), squeeze=False)
    for j, (prep, metric) in enumerate(panels):
        d = t[(t.prep == prep) & (t.metric == metric)]
        for i, y in enumerate(("ccc", "fmi")):
            ax = axes[i, j]
            for m, dm in d.groupby("linkage"):
                _band(ax, dm, "n_min", y, m, COLORS.get(m, "k"))
                if m == APPROX:
                    ax.lines[-1].set_linestyle("--")
            ax.set(xlabel="n_min", ylabel=y.upper(), ylim=(-0.05, 1.05))
            if i == 0:
                ax.set_title(f"({'ABCDEFG'[j]}) {prep}, {metric}")
    axes[0, 0].legend()
    fig.tight_layout()
    return fig


def cohort_shape(obs: pd.DataFrame, n_min_fraction: float) -> pd.DataFrame:
    """Per cohort: size, center shares and the thesis' condition (§4.2.2, bimodal rule).

    The condition: some planted cluster has at least ``max(25, fraction × n)`` samples in one
    center (``true_cluster`` exists for simulated cohorts only; NaN otherwise).
    """
    rows = []
    for cohort, o in obs.groupby("cohort"):
        share = o["center"].value_counts(normalize=True)
        row = {
            "cohort": cohort,
            "n": len(o),
            "centers": int(share.size),
            "smallest center %": round(100 * share.min(), 1),
            "biggest center %": round(100 * share.max(), 1),
        }
        if "true_cluster" in o:
            cells = pd.crosstab(o["center"], o["true_cluster"])
            top = int(cells.to_numpy().max())
            n10 = int(np.floor(n_min_fraction * len(o)))
            per_cluster = cells.max(axis=0)  # each cluster's largest count in one center
            row.update(
                {
                    "clusters": int(cells.shape[1]),
                    "largest cluster in one center": top,
                    "meets ≥ 25 condition": top >= 25,
                    "clusters with ≥ 25 in a center": int((per_cluster >= 25).sum()),
                    "n_min = 10 %": n10,
                    "clusters with ≥ n_min(10 %) in a center": int((per_cluster >= n10).sum()),
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


def cuts_summary(cuts: pd.DataFrame, grad: pd.DataFrame) -> pd.DataFrame:
    """Per k: FMI / ARI and silhouette / Calinski–Harabasz of the federated and pooled cuts,
    gradual sharing at each cohort's largest n_min run and simultaneous sharing at its largest
    n_min; means over cohorts."""
    if cuts.empty:
        return cuts
    cuts = cuts.copy()
    if "variant" in cuts:
        cuts.loc[cuts["variant"].astype(str) == "current", "linkage"] = APPROX
    top = grad.groupby(["cohort", "prep"])["n_min_top"].first().rename("top").reset_index()
    g = cuts[cuts.method == "gradual"].merge(top, on=["cohort", "prep"])
    g = g[g.n_min == g.top]
    s = cuts[cuts.method == "simultaneous"]
    s = s[s.n_min == s.n_min.max()]
    d = pd.concat([g.drop(columns="top"), s], ignore_index=True)
    vals = ["fmi", "ari", "silhouette_fed", "silhouette_pooled", "calinski_harabasz_fed",
            "calinski_harabasz_pooled"]  # fmt: skip
    keys = ["method", "prep", "metric", "linkage", "k"]
    out = d.groupby(keys, sort=False)[vals].mean().reset_index()
    out.insert(4, "n_min", d.groupby(keys, sort=False)["n_min"].agg(
        lambda v: "/".join(map(str, sorted(set(v))))).values)  # fmt: skip
    return out


#: columns of Table 4.1-style n_min = 10 % rows (``nmin10.tsv``)
NMIN10_COLUMNS = ("cohort", "prep", "metric", "linkage", "n", "n_min", "ccc", "fmi", "ari",
                  "rel_error", "inversions", "ccc_monotone")  # fmt: skip


def nmin10_table(t: pd.DataFrame) -> pd.DataFrame:
    d = t[(t.n_min == t.n_min_top) & (t.prep == "vst") & (t.metric == "euclidean")]
    if d.empty:
        d = t[t.n_min == t.n_min_top]
    cols = list(NMIN10_COLUMNS)
    return d[cols].sort_values(["cohort", "linkage"]).reset_index(drop=True)


def nmin10(t: pd.DataFrame):
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    cohorts = sorted(t.cohort.unique())
    links = list(dict.fromkeys(t.linkage))
    w = 0.8 / max(1, len(links))
    for ax, y in zip(axes, ("ccc", "fmi"), strict=True):
        for i, m in enumerate(links):
            d = t[t.linkage == m].set_index("cohort").reindex(cohorts)
            ax.bar(np.arange(len(cohorts)) + i * w, d[y], w, label=m, color=COLORS.get(m))
        ax.set_xticks(np.arange(len(cohorts)) + 0.4 - w / 2, cohorts)
        ax.set(ylabel=y.upper(), ylim=(0, 1.05), title=f"{y.upper()} at n_min = 10 %")
    axes[0].legend()
    fig.tight_layout()
    return fig


def monotone(t: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(6, 4))
    d = t.assign(diff=t.ccc_monotone - t.ccc)
    for m, dm in d.groupby("linkage"):
        g = dm.groupby("n_min")["diff"].mean()
        ax.plot(g.index, g.values, marker=".", color=COLORS.get(m), label=m)
    ax.axhline(0, color="k", lw=0.5)
    ax.set(xlabel="n_min", ylabel="mean CCC(monotone) − CCC(original)")
    ax.legend()
    fig.tight_layout()
    return fig


def toy_projection(t: pd.DataFrame):
    datas = list(dict.fromkeys(t["data"]))
    fig, axes = plt.subplots(2, len(datas), figsize=(5 * len(datas), 7), squeeze=False)
    for j, data in enumerate(datas):
        d = t[t["data"] == data]
        for i, y in enumerate(("ccc", "ari5")):
            ax = axes[i, j]
            for m, dm in d.groupby("linkage"):
                _band(ax, dm, "sketch", y, m, COLORS.get(m, "k"))
            ax.set(
                xscale="log",
                xlabel="sketch size d′",
                ylabel="CCC" if y == "ccc" else "ARI (5 clusters)",
                title=f"{data}",
                ylim=(-0.1, 1.05),
            )
    axes[0, 0].legend()
    fig.tight_layout()
    return fig


def min_sketch(t: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(6, 4))
    for m, d in t.groupby("linkage"):
        ax.plot(d.sigma, d.min_sketch, marker="o", color=COLORS.get(m), label=m)
    ax.set(xlabel="blob spread σ", ylabel="min sketch size for mean CCC > 0.95", yscale="log")
    ax.legend()
    fig.tight_layout()
    return fig


def _sketch_grid(t: pd.DataFrame, ys: list[str], by: str):
    keys = list(dict.fromkeys(t[by]))
    fig, axes = plt.subplots(
        len(ys), len(keys), figsize=(4.2 * len(keys), 3.3 * len(ys)), squeeze=False
    )
    for j, key in enumerate(keys):
        d = t[t[by] == key]
        for i, y in enumerate(ys):
            ax = axes[i, j]
            for m, dm in d.groupby("linkage"):
                _band(ax, dm, "sketch", y, m, COLORS.get(m, "k"))
            ax.set(xscale="log", xlabel="sketch size d′", ylabel=y, title=str(key))
    axes[0, 0].legend()
    fig.tight_layout()
    return fig


def projection_cohorts(t: pd.DataFrame):
    d = t[(t.prep == "vst") & (t.metric == "euclidean")]
    return _sketch_grid(d, ["ccc", "fmi", "dist_corr"], "cohort")


def projection_error(t: pd.DataFrame):
    d = t[(t.prep == "sf") & (t.metric == "euclidean")]
    if d.empty:
        d = t[t.metric == "euclidean"]
    return _sketch_grid(d, ["rel_error"], "cohort")


def projection_metrics(t: pd.DataFrame):
    d = t[t.prep == "vst"]
    est = d["estimator"] if "estimator" in d else "gaussian"
    panel = np.where(d.metric == "cityblock", d.metric + " (" + est + ")", d.metric)
    return _sketch_grid(d.assign(panel=panel), ["ccc", "fmi"], "panel")


def table41(grad, simu, proj, exact, cfg) -> pd.DataFrame:
    """Thesis Table 4.1 with this run's numbers (means over cohorts, linkages, panels)."""
    g = grad[(grad.n_min == grad.n_min_top) & (grad.linkage != APPROX)]
    s = simu[simu.n_min == simu.n_min.max()]
    sk = sorted(proj.sketch.unique())
    mid = sk[len(sk) // 2]
    p = proj[proj.sketch == mid]
    rows = [
        {
            "method": "centroid-based, gradual (Alg. 4)",
            "privacy parameter": "n_min = 10 % of cohort",
            "complexity (thesis)": "O(n²(d+n))",
            "communication (thesis)": "O(nM + (n/n_min)(Md + n/n_min)), O(n) rounds",
            "CCC": g.ccc.mean(),
            "FMI": g.fmi.mean(),
            "messages": g.messages.mean(),
            "floats": g.floats.mean(),
            "rounds": g.rounds.mean(),
            "seconds": g.seconds.mean(),
            "pooled seconds": g.pooled_seconds.mean() if "pooled_seconds" in g else np.nan,
        },
        {
            "method": "centroid-based, simultaneous (§3.3.2)",
            "privacy parameter": f"n_min = {int(simu.n_min.max())}",
            "complexity (thesis)": "as pooled",
            "communication (thesis)": "O(nd/n_min + n), 1 round",
            "CCC": s.ccc.mean(),
            "FMI": s.fmi.mean(),
            "messages": s.messages.mean(),
            "floats": s.floats.mean(),
            "rounds": 1,
            "seconds": np.nan,
        },
        {
            "method": "random projection (Alg. 5)",
            "privacy parameter": f"d′ = {mid}",
            "complexity (thesis)": "as pooled (+ O(n_k d d′) per center)",
            "communication (thesis)": "O(n d′), O(1) rounds",
            "CCC": p.ccc.mean(),
            "FMI": p.fmi.mean(),
            "messages": p.messages.mean(),
            "floats": p.floats.mean(),
            "rounds": 1,
            "seconds": p.seconds.mean(),
        },
    ]
    for method, e in exact.groupby("method"):
        rows.append(
            {
                "method": method,
                "privacy parameter": "—",
                "complexity (thesis)": "as pooled"
                if "perturb" in method
                else "O(n_k d²) per center",
                "communication (thesis)": "O(nd), 1 round"
                if "perturb" in method
                else "O(M d²), 1–2 rounds",
                "CCC": 1.0,
                "FMI": 1.0,
                "messages": e.messages.mean(),
                "floats": e.floats.mean(),
                "rounds": e.rounds.mean(),
                "seconds": np.nan,
            }
        )
    return pd.DataFrame(rows)


def pca(t: pd.DataFrame):
    """Figs 3.1–3.2 (variance part): cumulative explained variance per component."""
    preps = list(dict.fromkeys(t.prep))
    fig, axes = plt.subplots(1, len(preps), figsize=(5 * len(preps), 4), squeeze=False)
    for ax, prep in zip(axes[0], preps, strict=True):
        for cohort, d in t[t.prep == prep].groupby("cohort"):
            ax.plot(d.component, d.cumulative, marker=".", label=cohort)
        ax.set(
            xlabel="number of components",
            ylabel="cumulative explained variance",
            title=prep,
            ylim=(0, 1.02),
        )
    axes[0, 0].legend()
    fig.tight_layout()
    return fig


def inversions(z: np.ndarray, zp: np.ndarray, meta: dict):
    """Fig 4.6: a federated dendrogram with inversions, beside its pooled counterpart."""
    from scipy.cluster.hierarchy import dendrogram

    from .gradual import enforce_monotone

    fig, axes = plt.subplots(1, 3, figsize=(14, 4), sharey=True)
    title = f"gradual sharing, {meta['method']}, n_min = {meta['n_min']}"
    for ax, zz, t in (
        (axes[0], z, f"{title}: {meta['inversions']} inversions"),
        (axes[1], enforce_monotone(z), "same tree, monotone heights enforced"),
        (axes[2], zp, "pooled (scipy)"),
    ):
        dendrogram(zz, ax=ax, no_labels=True, color_threshold=0, above_threshold_color="k")
        ax.set(title=t, ylabel="merge height")
    fig.tight_layout()
    return fig


def outlier(x: np.ndarray, is_outlier: np.ndarray, z: np.ndarray, demo: pd.DataFrame):
    """Appendix Fig A.1: 3 blobs + outlier, its pooled dendrogram, CCC of shuffled merges."""
    from scipy.cluster.hierarchy import dendrogram

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    axes[0].scatter(*x[~is_outlier].T, s=10, color="C0", label="3 blobs")
    axes[0].scatter(*x[is_outlier].T, s=40, color="C3", marker="x", label="outlier")
    axes[0].set(title="data", xlabel="x₁", ylabel="x₂")
    axes[0].legend()
    dendrogram(z, ax=axes[1], no_labels=True, color_threshold=0, above_threshold_color="k")
    axes[1].set(title="pooled dendrogram: the outlier merges last", ylabel="merge height")
    cols = ["ccc_without_outlier", "ccc_with_outlier"]
    axes[2].boxplot([demo[c] for c in cols], tick_labels=["without outlier", "with outlier"])
    axes[2].axhline(0, color="k", lw=0.5)
    axes[2].set(
        ylabel="CCC vs pooled",
        title=f"random merges, pooled heights ({len(demo)} shufflings)",
    )
    fig.tight_layout()
    return fig
