"""The FedCRef report section (order 60): Tables 1–8 (ours as mean (±95 % CI), the paper's
numbers beside them), per-iteration curves with CI bands (Figs 4, 6, 7), θ calibration."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from fedclust.io import read_json, save_figure, write_table
from fedclust.report import StageSection
from fedclust.report.headlines import Col, Line, Sel, Spec, lead

from . import paper


def _clients(s: Sel) -> str:
    return (
        f"this run's client systems on {s.row['dataset']}, {s.row.get('runs', '?')} run(s), "
        "beside the paper's EMNIST at N = 25, S = 500"
    )


def _t1(name: str, col: str, paper: str) -> Line:
    return Line(
        name,
        source=Col(paper, lead),
        ours=Col(col, lead),
        table="table1.",
        cause=_clients,
        note=lambda s: f"{s.row['dataset']} vs paper {s.row['paper dataset']}",
    )


def _t8(s: Sel) -> str:
    return (
        f"this run's {s.row['clients']} clients on {s.row['dataset']} beside the paper's "
        f"{s.row['paper clients']}"
    )


HEADLINE = Spec(
    doc="Seed 002 Tables 1 (Exp. 1) and 8 (Exp. 4); the paper's columns are in the same tables.",
    lines=(
        _t1("Exp. 1 ACC init (local DEC)", "ACC init (local DEC)", "paper ACC init"),
        _t1("Exp. 1 ACC end (FedCRef)", "ACC end", "paper ACC end"),
        _t1("Exp. 1 wrong links", "wrong links", "paper wrong"),
        Line(
            "Exp. 4 ACC end",
            source=Col("paper ACC end", lead),
            ours=Col("ACC end (ours)", lead),
            table="table8.",
            cause=_t8,
            pick="last",
            label=lambda s: (
                f"Exp. 4 ACC end ({s.row['clients']} clients; paper {s.row['paper clients']})"
            ),
        ),
        Line(
            "Exp. 4 improvement over local DEC, %",
            source=Col("paper improvement %", lead),
            ours=Col("improvement %", lead),
            table="table8.",
            cause=_t8,
            pick="last",
        ),
    ),
    source_label="paper (seed 002)",
    figure=("exp1_curves", "exp4_curves"),
)

SECTION = StageSection(
    "fedcref", "FedCRef — federated cluster-wise refinement (seed 002)", 60, HEADLINE
)


def ci(values: pd.Series) -> tuple[float, float]:
    """Mean and 95 % CI half-width t_{0.975,n−1}·s/√n (0 for one run)."""
    v = pd.to_numeric(values, errors="coerce").dropna().to_numpy(float)
    if len(v) == 0:
        return float("nan"), float("nan")
    if len(v) < 2:
        return float(v.mean()), 0.0
    return float(v.mean()), float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def fmt(values: pd.Series, digits: int = 3) -> str:
    m, h = ci(values)
    return f"{m:.{digits}f} (±{h:.{digits}f})" if np.isfinite(m) else "—"


def _outcomes(g: pd.DataFrame) -> dict[str, str]:
    f = g[g.variant == "fedcref"]
    return {
        "K found / real K (ideal)": f"{fmt(f.groups_end, 1)} / {fmt(f.real_k, 1)} "
        f"({fmt(f.ideal_k, 1)})",
        "wrong links": fmt(f.wrong_links_end, 1),
        "wrong clusters": fmt(f.wrong_clusters_end, 1),
        "isolated start → end": f"{fmt(f.isolated_start, 1)} → {fmt(f.isolated_end, 1)}",
        "iterations": fmt(f.iterations, 1),
        "s / iteration (wall)": fmt(f.seconds_per_iteration, 2),
        "CPU s / iteration": fmt(f.cpu_seconds_per_iteration, 2)
        if "cpu_seconds_per_iteration" in f
        else "—",
        "runs": str(len(f)),
    }


def _accuracy(g: pd.DataFrame) -> dict[str, str]:
    f = g[g.variant == "fedcref"]
    out = {
        "ACC init": fmt(f.acc_init),
        "ACC end (ours)": fmt(f.acc_end),
        "improvement %": fmt(f.improvement_pct, 2),
    }
    for v, name in (("perfect", "ACC end (perfect ass.)"), ("local_only", "ACC end (local-only)")):
        s = g[g.variant == v]
        out[name] = fmt(s.acc_end) if len(s) else "—"
    return out


def build_tables(summary: pd.DataFrame, cfg: dict, cross: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Tables 1–8 (ours + the paper's numbers) from the merged per-run summaries."""
    ds_cfg = cfg["datasets"]

    def label(ds: str) -> str:
        return ds_cfg[ds].get("label", ds)

    def pds(ds: str) -> str:
        return ds_cfg[ds].get("paper", "EMNIST")

    t: dict[str, pd.DataFrame] = {}
    s1 = summary[summary.exp == "exp1"]
    rows = []
    for ds, g in s1.groupby("dataset", sort=False):
        f = g[g.variant == "fedcref"]
        p = paper.TABLE1.get(pds(ds), {})
        rows.append(
            {
                "dataset": label(ds),
                "ACC init (local DEC)": fmt(f.acc_init),
                "ACC end": fmt(f.acc_end),
                **{k: v for k, v in _outcomes(g).items() if k != "wrong clusters"},
                "paper dataset": pds(ds),
                "paper ACC init": p.get("acc_init", "—"),
                "paper ACC end": p.get("acc_end", "—"),
                "paper K": p.get("k", "—"),
                "paper wrong": p.get("wrong", "—"),
                "paper isolated": p.get("isolated", "—"),
            }
        )
    t["table1"] = pd.DataFrame(rows)
    rows = []
    for ds, g in s1.groupby("dataset", sort=False):
        f = g[g.variant == "fedcref"]
        rows.append(
            {
                "dataset": label(ds),
                "method": "FedCRef (ours)",
                "paradigm": "decentralized",
                "ACC (mean over clients)": fmt(f.acc_end),
                "ACC pooled": "—",
                "K found / real K": f"{fmt(f.groups_end, 1)} / {fmt(f.real_k, 1)}",
            }
        )
        c = cross[cross.dataset == ds] if len(cross) else cross
        for m, cg in c.groupby("method", sort=False) if len(c) else []:
            rows.append(
                {
                    "dataset": label(ds),
                    "method": m,
                    "paradigm": cg.paradigm.iloc[0],
                    "ACC (mean over clients)": fmt(cg.acc_client_mean),
                    "ACC pooled": fmt(cg.acc_pooled),
                    "K found / real K": f"{fmt(cg.k_found, 1)} / {fmt(f.real_k, 1)}",
                }
            )
    for p in paper.TABLE2:
        rows.append(
            {
                "dataset": "paper: EMNIST",
                "method": p["method"],
                "paradigm": p["paradigm"],
                "ACC (mean over clients)": p["acc"],
                "ACC pooled": "—",
                "K found / real K": p["k"],
            }
        )
    t["table2"] = pd.DataFrame(rows)

    s2 = summary[summary.exp == "exp2"]
    r3, r4 = [], []
    for (ds, d), g in s2.groupby(["dataset", "dirtiness"], sort=False):
        p = paper.TABLE34.get((pds(ds), round(float(d), 1)))
        r3.append(
            {"dataset": label(ds), "dirtiness": d, **_outcomes(g),
             "paper dataset": pds(ds), "paper K": p[0] if p else "—",
             "paper wrong": p[1] if p else "—", "paper isolated": p[2] if p else "—"}
        )  # fmt: skip
        r4.append(
            {"dataset": label(ds), "dirtiness": d, **_accuracy(g),
             "paper ACC init": p[3] if p else "—", "paper ACC end": p[4] if p else "—",
             "paper improvement %": p[5] if p else "—", "paper perfect": p[6] if p else "—"}
        )  # fmt: skip
    t["table3"], t["table4"] = pd.DataFrame(r3), pd.DataFrame(r4)

    s3 = summary[summary.exp == "exp3"]
    r5, r6 = [], []
    for o, g in s3.groupby("overlap", sort=True):
        p = paper.TABLE56.get(round(float(o), 1))
        ds = g.dataset.iloc[0]
        r5.append(
            {"dataset": label(ds), "overlap": o, **_outcomes(g),
             "paper K (EMNIST)": p[0] if p else "—", "paper wrong": p[1] if p else "—",
             "paper isolated": p[2] if p else "—"}
        )  # fmt: skip
        r6.append(
            {"dataset": label(ds), "overlap": o, **_accuracy(g),
             "paper ACC end": p[3] if p else "—", "paper improvement %": p[4] if p else "—",
             "paper perfect": p[5] if p else "—"}
        )  # fmt: skip
    t["table5"], t["table6"] = pd.DataFrame(r5), pd.DataFrame(r6)

    s4 = summary[summary.exp == "exp4"]
    r7, r8 = [], []
    for rank, (n, g) in enumerate(s4.groupby("n_clients", sort=True)):
        p = paper.TABLE78[rank] if rank < len(paper.TABLE78) else None
        ds = g.dataset.iloc[0]
        r7.append(
            {"dataset": label(ds), "clients": n, **_outcomes(g),
             "paper clients": p[0] if p else "—", "paper K (EMNIST)": p[1] if p else "—",
             "paper wrong": p[2] if p else "—", "paper isolated": p[3] if p else "—"}
        )  # fmt: skip
        r8.append(
            {"dataset": label(ds), "clients": n, **_accuracy(g),
             "paper clients": p[0] if p else "—", "paper ACC end": p[4] if p else "—",
             "paper improvement %": p[5] if p else "—", "paper perfect": p[6] if p else "—"}
        )  # fmt: skip
    t["table7"], t["table8"] = pd.DataFrame(r7), pd.DataFrame(r8)
    return t


CURVES = [
    ("groups", "|G| communities"),
    ("isolated", "|I| isolated"),
    ("wrong_links", "wrong links"),
    ("acc", "mean ACC"),
    ("active", "|A| active"),
]


def curves_figure(history: pd.DataFrame, title: str, variant: str = "fedcref"):
    """Per-iteration mean ± 95 % CI over repetitions, one line per setting (a run that stopped
    early carries its last value forward)."""
    import matplotlib.pyplot as plt

    h = history[history.variant == variant]
    fig, axes = plt.subplots(1, len(CURVES), figsize=(3.2 * len(CURVES), 2.8))
    last = int(h.iteration.max()) if len(h) else 0
    for setting, g in h.groupby("setting", sort=False):
        runs = []
        for _, r in g.groupby("repetition"):
            r = r.set_index("iteration").reindex(range(last + 1)).ffill()
            runs.append(r)
        for ax, (col, name) in zip(axes, CURVES, strict=True):
            m = np.vstack([r[col].to_numpy(float) for r in runs])
            mean = np.nanmean(m, 0)
            half = np.array([ci(pd.Series(m[:, i]))[1] for i in range(m.shape[1])])
            it = np.arange(last + 1)
            ax.plot(it, mean, marker="o", ms=3, label=setting)
            ax.fill_between(it, mean - half, mean + half, alpha=0.2)
            ax.set_title(name, fontsize=9)
            ax.set_xlabel("iteration")
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def calibration_figure(pairs: pd.DataFrame, cal: dict, dataset: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    bins = np.linspace(0, 1, 41)
    ax.hist(pairs.stat[pairs.same_class], bins, alpha=0.6, density=True, label="same class")
    ax.hist(pairs.stat[~pairs.same_class], bins, alpha=0.6, density=True, label="different class")
    ax.axvline(cal["theta"], color="k", label=f"calibrated θ = {cal['theta']:.3f}")
    ax.axvline(cal["paper_theta"], color="r", ls="--", label=f"paper θ = {cal['paper_theta']}")
    ax.set_xlabel("max(stat_ab, stat_ba): α-th pct of min-max |ΔE|")
    ax.set_title(f"{dataset}: association statistic (validation system)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def build_section(
    section_path: str,
    *,
    tables_dir: str,
    figures_dir: str,
    summaries: list[str],
    histories: list[str],
    cross: list[str],
    calibrations: list[str],
    calibration_figures: list[str],
    cfg: dict,
) -> None:
    tdir, fdir = Path(tables_dir), Path(figures_dir)
    tdir.mkdir(parents=True, exist_ok=True)
    fdir.mkdir(parents=True, exist_ok=True)
    summary = pd.concat([pd.read_csv(p, sep="\t") for p in summaries], ignore_index=True)
    history = pd.concat([pd.read_csv(p, sep="\t") for p in histories], ignore_index=True)
    cr = [pd.read_csv(p, sep="\t") for p in cross]
    crossdf = pd.concat(cr, ignore_index=True) if cr else pd.DataFrame()
    if len(crossdf):
        crossdf["dataset"] = crossdf.setting.str.replace("_dec", "", regex=False)
    write_table(tdir / "runs.tsv", summary, index=False)
    tables = build_tables(summary, cfg, crossdf)
    cal = pd.DataFrame([read_json(p) for p in calibrations])
    tables["calibration"] = cal
    captions = {
        "table1": "Table 1 layout: FedCRef with per-client DEC as the initial clustering.",
        "table2": "Table 2 layout: FedCRef beside centralized references on the same client "
        "system (pooled k-means with K = |U|; global DEC with K chosen by the silhouette on a "
        "2-D t-SNE). Centralized methods see the pooled data by design.",
        "table3": "Table 3 layout: communities found vs the real global K (and the ideal K = "
        "classes held by ≥ 2 clients), wrong associations (links between clusters of different "
        "mapped classes; and clusters outside their group's majority class), isolated clusters "
        "start → end, vs dirtiness.",
        "table4": "Table 4 layout: ACC init → end vs dirtiness, FedCRef beside Perfect "
        "Associations (ideal graph injected) and local-only refinement (no association).",
        "table5": "Table 5 layout: outcomes vs overlap (dirtiness fixed).",
        "table6": "Table 6 layout: ACC vs overlap.",
        "table7": "Table 7 layout: outcomes vs number of clients (paper rows matched by rank: "
        "the default config uses fewer clients than the paper's 20–50).",
        "table8": "Table 8 layout: ACC vs number of clients.",
        "calibration": "θ calibration: the association statistic on a labelled validation "
        "system (oracle partition), same-class vs different-class pairs; calibrated θ (the largest "
        "with at most calibration.max_wrong_links expected wrong links per system) with its "
        "TPR/FPR, and the paper's θ = 0.2 with its TPR/FPR on the same pairs.",
    }
    tab_entries = []
    for name, df in tables.items():
        path = tdir / f"{name}.tsv"
        write_table(path, df, index=False)
        if len(df):
            tab_entries.append({"path": str(path), "caption": captions[name], "max_rows": 40})
    fig_entries = []
    repro = {"exp1": "Fig. 4", "exp2": "Fig. 4 (dirtiness)", "exp3": "Fig. 6", "exp4": "Fig. 7"}
    for exp, h in history.groupby("exp", sort=True):
        path = fdir / f"{exp}_curves.png"
        save_figure(curves_figure(h, f"{exp}: FedCRef per iteration (mean ± 95 % CI)"), path)
        fig_entries.append(
            {
                "path": str(path),
                "caption": f"{exp}: |G|, |I|, wrong links, mean ACC and active clients per "
                "iteration; mean ± 95 % CI over repetitions, one line per setting.",
                "reproduces": f"seed 002 {repro.get(exp, '')}",
            }
        )
    for p in calibration_figures:
        fig_entries.append({"path": p, "caption": "θ calibration: statistic distributions."})
    labels = "; ".join(
        f"{k}: {v.get('label', v['source'])}"
        + (" — SYNTHETIC" if v["source"] == "synthetic" else "")
        for k, v in cfg["datasets"].items()
    )
    scale = (
        "Default configuration: small offline client systems (few clients, few samples per "
        "class, reduced AE epochs and FedAvg rounds, 2 repetitions): the numbers exercise the "
        "method and the table layout; they do not reproduce the paper, which used EMNIST/KMNIST/"
        "KMNIST-49 with N = 25, S = 500 and 5 runs."
        if cfg["reduced"]
        else "Paper-size configuration (config/thesis.yaml)."
    )
    text = [
        "FedCRef (seed 002): each client trains one autoencoder per local cluster; models travel "
        "all-to-all (samples never leave a client: each client evaluates received models on its "
        "own data); two clusters of different clients are associated when the α-th percentile "
        "of the min-max normalised |ΔE| is ≤ θ in both directions (eq. 2); connected components "
        "with ≥ 2 clusters form groups, each trains one AE by FedAvg; active clients re-partition "
        "their data with ClusterRefine (Algorithm 2); a client stops when the Hungarian ACC "
        "between consecutive partitions is ≥ τ. The estimate of the global K is |G|.",
        scale,
        f"Datasets: {labels}.",
        "θ: the paper's θ = 0.2 is not portable across cluster sizes (the min-max statistic "
        "depends on S); the runs use the θ from the calibration utility when association.theta "
        "is 'calibrated' (see the calibration table: the paper's θ and its TPR/FPR are beside).",
        "Handling of edge cases: a zero-range |ΔE| vector normalises to 0 (passes); an empty "
        "cluster (ClusterRefine can leave one) gets no AE and no graph node and is counted in "
        "the history's empty_clusters; ties in ClusterRefine go to the lowest model index "
        "(local models first). Wrong links = links between clusters whose Hungarian-mapped true "
        "classes differ (authors' code); wrong clusters = clusters outside their group's "
        "majority class (paper wording).",
        "Ours: mean (±95 % CI, t-distribution) over repetitions; the paper's numbers are from its "
        "Tables 1–8 on different datasets and sizes (its EMNIST rows are the reference for the "
        "digit stand-ins).",
    ]
    SECTION.write(section_path, text=text, figures=fig_entries, tables=tab_entries)
