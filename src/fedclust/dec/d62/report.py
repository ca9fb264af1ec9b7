"""Report of D6.2 ch. 7 (seed 003 §6.5): Figs 7.2–7.9 redrawn from this run, the unit table,
Table 7.1 as run, the HDP comparison and the section headline. D6.2 prints no number for these
experiments (figures only): its qualitative findings become bounds in the headline, each with
the threshold this project reads them with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from fedclust.io import read_json, read_table, save_figure, write_table
from fedclust.report import StageSection, by_name
from fedclust.report.headlines import Col, Line, Spec

from .pooled import agreement

#: D6.2 Table 7.1, as printed (AE epochs, dropout, random flip, UnitNorm)
TABLE_7_1 = {
    "a": (2500, 0.2, 0.2, False),
    "b": (2500, 0.05, 0.05, False),
    "c": (2500, 0.2, 0.2, True),
    "d": (2500, 0.1, 0.1, True),
    "e": (2500, 0.05, 0.05, True),
    "f": (2500, 0.01, 0.01, True),
    "g": (5000, 0.01, 0.01, True),
}
METRICS = {
    "sae_accuracy": "SAE accuracy (1 − mean |x − x̂|)",
    "sae_rounded_accuracy": "SAE rounded accuracy",
    "G_ae": "G metric, autoencoder (train / eval loss)",
    "G_dec": "G metric, clustering (train / eval KL)",
    "cycle_accuracy": "cycle accuracy",
    "changed_last_round": "label changes, last round (fraction)",
}


def table_7_1(cfg: Mapping[str, Any]) -> pd.DataFrame:
    """Table 7.1 as this run used it, D6.2's printed row beside each."""
    rows = []
    for conf, s in cfg["configurations"].items():
        d = TABLE_7_1.get(conf)
        ep = cfg["autoencoder"].get("epochs")
        rows.append({
            "configuration": conf,
            "AE epochs (ours)": int(ep if ep is not None else s["ae_epochs"]),
            "dropout": s["dropout"], "random flip": s["flip"], "UnitNorm": bool(s["unit_norm"]),
            "AE epochs (D6.2)": d[0] if d else np.nan,
            "as D6.2": bool(d) and (d[1], d[2], d[3]) == (s["dropout"], s["flip"],
                                                          bool(s["unit_norm"])),
        })  # fmt: skip
    return pd.DataFrame(rows)


def units_table(results: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    table = pd.DataFrame(list(results))
    return table.sort_values(["configuration", "clients", "k"], kind="mergesort").reset_index(
        drop=True
    )


def g_by_normalisation(units: pd.DataFrame) -> pd.DataFrame:
    """D6.2 Fig. 7.3's finding: the G metric with and without UnitNorm (one client)."""
    one = units[units["clients"] == 1]
    out = one.groupby("unit_norm")[["G_ae", "G_dec", "cycle_accuracy"]].agg(["mean", "std",
                                                                           "count"])  # fmt: skip
    out.columns = [f"{a}_{b}" for a, b in out.columns]
    return out.reset_index()


def hdp_comparison(
    units: pd.DataFrame,
    labels: Mapping[str, np.ndarray],
    hdp: pd.DataFrame,
    x: np.ndarray,
    ks: Sequence[int],
    conf: str,
    silhouettes,
) -> pd.DataFrame:
    """Per (k, clients): silhouettes of DEC's and HDP's clusters in the same spaces (cosine and
    Hamming on the features) and the agreement (ARI, AMI, NMI) between them (D6.2 Figs 7.8,
    7.9: HDP is the ground truth). ``silhouettes(labels) -> (cosine, hamming)``."""
    rows = []
    for k in ks:
        h = hdp[f"hdp_k{k}"].to_numpy()
        h_cos, h_ham = silhouettes(h)
        sel = units[(units["k"] == k) & (units["configuration"] == conf)].sort_values("clients")
        for _, r in sel.iterrows():
            d = labels[r["unit"]]
            rows.append({
                "k": int(k), "clients": int(r["clients"]),
                "silhouette DEC (cosine)": r["sil_data"], "silhouette HDP (cosine)": h_cos,
                "silhouette DEC (Hamming)": r["sil_hamming"], "silhouette HDP (Hamming)": h_ham,
                **{m.upper(): v for m, v in agreement(h, d).items()},
            })  # fmt: skip
    return pd.DataFrame(rows)


def headline_table(
    units: pd.DataFrame, hdp_cmp: pd.DataFrame, cl: Mapping[str, Any]
) -> pd.DataFrame:
    """The quantities the headline compares with D6.2's qualitative findings."""
    rows = []
    one = units[units["clients"] == 1]
    if one["unit_norm"].nunique() == 2:
        g = one.groupby("unit_norm")["G_dec"].mean()
        rows.append({
            "quantity": "G metric (clustering): mean without UnitNorm − with UnitNorm, 1 client",
            "source": "not reported", "value": float(g[False] - g[True]),
            "note": "D6.2 Fig. 7.3: 'the only major difference' is between no normalisation "
                    "(a, b) and normalisation (c–g); no number",
            "cause": "D6.2 gives the difference as a figure only",
        })  # fmt: skip
    fed = units[units["configuration"] == cl["configuration"]]
    if fed["clients"].nunique() > 1:
        for metric, label in (
            ("cycle_accuracy", "cycle accuracy"),
            ("sil_feat", "silhouette (feature space)"),
        ):
            piv = fed.pivot_table(index="k", columns="clients", values=metric)
            lo, hi = int(piv.columns.min()), int(piv.columns.max())
            rows.append({
                "quantity": f"{label}: {hi} clients − {lo} client(s), mean over k",
                "source": "> -0.05", "value": float((piv[hi] - piv[lo]).mean()),
                "note": "D6.2 §7.5: 'no significant loss of clustering quality' from "
                        "federation; −0.05 is this project's reading of 'significant'",
                "cause": "federation costs clustering quality at this size",
            })  # fmt: skip
    for k, g in hdp_cmp.groupby("k") if len(hdp_cmp) else []:
        rows.append({
            "quantity": f"silhouette (Hamming) DEC − HDP, k = {k}, mean over client counts",
            "source": "> 0",
            "value": float((g["silhouette DEC (Hamming)"] - g["silhouette HDP (Hamming)"]).mean()),
            "note": "D6.2 Figs 7.8/7.9: DEC's silhouette 'significantly improved' over HDP's",
            "cause": "HDP's clusters are the more compact ones on the features here",
        })  # fmt: skip
        if g["clients"].nunique() > 1:
            rows.append({
                "quantity": f"ARI(DEC, HDP), k = {k}: max − min over client counts",
                "source": "< 0.1", "value": float(g["ARI"].max() - g["ARI"].min()),
                "note": "D6.2: agreement 'not optimal' but 'consistent across federation "
                        "layouts'; 0.1 is this project's reading of 'consistent'",
                "cause": "the agreement with HDP moves with the number of clients here",
            })  # fmt: skip
    return pd.DataFrame(rows, columns=["quantity", "source", "value", "note", "cause"])


HEADLINE = Spec(
    doc="Seed 003 §6.5 (D6.2 ch. 7) prints figures only: its findings as bounds.",
    lines=(
        Line(
            "D6.2 ch. 7 finding",
            source=Col("source"),
            ours=Col("value", float),
            table="dec/d62/tables/headline",
            each=True,
            label=lambda s: str(s.row["quantity"]),
            note=lambda s: str(s.row["note"]),
            cause=lambda s: str(s.row["cause"]),
        ),
    ),
    source_label="D6.2 (qualitative)",
    figure=("fig_7_5",),
)

SECTION = StageSection("dec_d62", "Federated DEC on MDS: D6.2 ch. 7 experiments", 46, HEADLINE)


# ------------------------------------------------------------------------------------ figures
def _lines(ax, df: pd.DataFrame, by: str, metric: str, title: str) -> None:
    for key, g in df.groupby(by):
        g = g.sort_values("k")
        ax.plot(g["k"], g[metric], marker="o", ms=3, label=str(key))
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("k (clusters = bottleneck width)", fontsize=7)
    ax.tick_params(labelsize=6)


def sweep_figure(units: pd.DataFrame, metrics: Sequence[str], by: str, title: str):
    """One panel per metric vs k, one line per configuration (Figs 7.2–7.4) or client count
    (Figs 7.5–7.7)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(metrics), figsize=(3.3 * len(metrics), 2.9), squeeze=False)
    for ax, m in zip(axes[0], metrics, strict=True):
        _lines(ax, units, by, m, METRICS.get(m, m))
    axes[0][-1].legend(fontsize=6, title=by, title_fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def hdp_figure(cmp: pd.DataFrame, k: int, title: str):
    """Figs 7.8 / 7.9: left, silhouettes of DEC and HDP per client count; right, the three
    agreement scores between them."""
    import matplotlib.pyplot as plt

    g = cmp[cmp["k"] == k].sort_values("clients")
    fig, (a, b) = plt.subplots(1, 2, figsize=(8.5, 3.0))
    pos = np.arange(len(g))
    for i, (col, lab) in enumerate((("silhouette DEC (Hamming)", "DEC"),
                                    ("silhouette HDP (Hamming)", "HDP"))):  # fmt: skip
        a.bar(pos + (i - 0.5) * 0.38, g[col], 0.38, label=lab)
    a.set_xticks(pos, [str(c) for c in g["clients"]])
    a.set_xlabel("clients (1 = centralized)", fontsize=7)
    a.set_title(f"silhouette (Hamming), k = {k}", fontsize=8)
    a.legend(fontsize=6)
    for m in ("ARI", "AMI", "NMI"):
        b.plot(g["clients"], g[m], marker="o", ms=3, label=m)
    b.set_xlabel("clients (1 = centralized)", fontsize=7)
    b.set_title(f"agreement DEC vs HDP, k = {k}", fontsize=8)
    b.legend(fontsize=6)
    for ax in (a, b):
        ax.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------ section
def build_section(
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    *,
    cfg: dict,
    units: list[str],
    mds_source: str,
    hdp_note: str = "",
) -> None:
    """Rule ``dec_d62_report``: D6.2 ch. 7's figures (7.2–7.9), the unit table, Table 7.1 as
    run, the HDP comparison and the dec_d62 section. ``inputs``/``outputs``: the rule's named
    files; per-unit files are found by name (``<unit>/labels``, ``<unit>/ledger``), the HDP
    figures by ``fig_hdp_k<k>``. ``units``: the sweep's unit ids; ``mds_source``:
    ``data.mds.source``; ``hdp_note``: why HDP is left out, when it is."""
    from fedclust.metrics.assignment import internal_scores

    from .experiment import hamming_silhouette  # torch: imported when the section is built

    inp, out = SimpleNamespace(**inputs), SimpleNamespace(**outputs)
    table = units_table([read_json(p) for p in inp.result])
    labels_of, ledger_of = by_name(inp.labels, parts=2), by_name(inp.ledger, parts=2)
    labels = {u: read_table(labels_of[f"{u}/labels"])["cluster"].to_numpy() for u in units}
    x = read_table(inp.features)
    xs = x.to_numpy()
    cl, sw = cfg["clients"], cfg["sweep"]
    hdp_ks = [int(k) for k in cfg["hdp"]["k"]] if inp.hdp else []
    max_pts = cfg["silhouette_max_points"]

    def silhouettes(lab: np.ndarray) -> tuple[float, float]:
        return (
            internal_scores(xs, xs, lab, max_pts)["sil_data"],
            hamming_silhouette(xs, lab, max_pts),
        )

    hdp = read_table(inp.hdp[0]) if inp.hdp else None
    cmp = (
        hdp_comparison(table, labels, hdp, xs, hdp_ks, cl["configuration"], silhouettes)
        if hdp is not None
        else pd.DataFrame()
    )
    head = headline_table(table, cmp, cl)
    msgs = pd.concat(
        [read_table(ledger_of[f"{u}/ledger"]).reset_index().assign(unit=u) for u in units]
    )
    msg_tab = (
        msgs.groupby(["unit", "kind"]).size().rename("messages").reset_index()
        if "kind" in msgs.columns
        else msgs.groupby("unit").size().rename("messages").reset_index()
    )
    write_table(out.units, table, index=False)
    write_table(out.table_7_1, table_7_1(cfg), index=False)
    write_table(out.g_norm, g_by_normalisation(table), index=False)
    write_table(out.hdp, cmp, index=False)
    write_table(out.headline, head, index=False)
    write_table(out.messages, msg_tab, index=False)
    reduced = cfg["autoencoder"]["epochs"] is not None
    size = (
        f"REDUCED: {cfg['autoencoder']['epochs']} AE epochs instead of Table 7.1's 2500/5000, "
        f"{cfg['clustering']['epochs']} clustering epochs instead of 10 000"
        if reduced
        else f"D6.2's sizes: Table 7.1's AE epochs, {cfg['clustering']['epochs']} clustering epochs"
    )
    data = (
        f"{mds_source} MDS cohort, {len(x)} patients × {x.shape[1]} binary "
        "features (data stage; D6.2: 2043 private EUROMDS patients × 54)"
    )
    one = table[table["clients"] == 1]
    sweep_units = one[one["configuration"].isin(sw["configurations"])]
    fig = sweep_figure(
        sweep_units, ["sae_accuracy", "sae_rounded_accuracy", "G_ae", "G_dec", "cycle_accuracy"],
        "configuration", f"Table 7.1 configurations, 1 client (centralized) — {size}",
    )  # fmt: skip
    save_figure(fig, out.fig_sweep)
    fed = table[(table["configuration"] == cl["configuration"]) & table["k"].isin(cl["k"])]
    fig = sweep_figure(
        fed, ["sae_accuracy", "G_ae", "G_dec", "cycle_accuracy"], "clients",
        f"configuration {cl['configuration']}, clients 1 (centralized) to "
        f"{max(cl['counts'])} — {size}",
    )  # fmt: skip
    save_figure(fig, out.fig_clients)
    figures = [
        {
            "path": out.fig_sweep,
            "reproduces": "D6.2 Figs 7.2 (SAE metrics), 7.3 (G metric), 7.4 (cycle accuracy)",
            "caption": "SAE accuracy and rounded accuracy on the clients' held-out parts, G "
            "metric of the autoencoder and of the clustering step (training / held-out loss, "
            "last round) and cycle accuracy vs k, one line per Table 7.1 configuration, one "
            f"client. {data}; {size}.",
        },
        {
            "path": out.fig_clients,
            "reproduces": "D6.2 Figs 7.5–7.7 (the same metrics vs k per number of clients)",
            "caption": f"Configuration {cl['configuration']} over 1 (centralized) to "
            f"{max(cl['counts'])} clients (D6.2's equal split, remainder to the last client), "
            f"FedAvg weighted by sample count. {data}; {size}.",
        },
    ]
    fig_hdp = by_name(out.fig_hdp)
    for k in hdp_ks:
        path = fig_hdp[f"fig_hdp_k{k}"]
        save_figure(
            hdp_figure(cmp, k, f"DEC ({cl['configuration']}) vs HDP, k = {k} — {size}"), path
        )
        figures.append({
            "path": path,
            "reproduces": f"D6.2 Fig. {'7.8' if k == 6 else '7.9' if k == 8 else '7.8/7.9'} "
            f"({k} clusters)",
            "caption": "Left: silhouette (Hamming distance on the features) of DEC's and "
            "HDP's clusters per number of clients; right: ARI, AMI and NMI between them (D6.2's "
            "three unnamed agreement scores), HDP as the reference. HDP: tomotopy on the pooled "
            f"features, its patients' topic distributions cut into k clusters by k-means. {data}.",
        })  # fmt: skip
    hinfo = read_json(inp.hdp_info[0]) if inp.hdp_info else None
    text = [
        "D6.2 chapter 7's experiments (seed 003 §6.4–6.5; federated DEC on MDS, the work of "
        "seed 000) through the DEC stage's tied autoencoder, DEC model, local k-means and max–min "
        "centroid aggregation and the federation core's FedAvg: the encoder widths "
        f"{cfg['model']['hidden']} + k (bottleneck = k, D6.2), sigmoid output and binary cross-"
        "entropy; Table 7.1's configurations (dropout after the hidden layers, the random-flip "
        "input layer — an entry redrawn with the rate from Bernoulli(p₁ⱼ), p₁ⱼ = its column's "
        "frequency of ones over all centres, one federated count, as the author's Keras "
        "FlippingNoise — and UnitNorm = Keras' UnitNorm(axis=0) constraint on every encoder "
        "kernel, the author's u_norm option). Clients: D6.2's equal split, 20 % held out at each "
        "client; one client = the centralized run (same code). Clustering: "
        f"{cfg['clustering']['epochs']} epochs of SGD (lr {cfg['clustering']['lr']}), the target "
        f"distribution recomputed every {cfg['clustering']['update_interval']} epochs, "
        f"{cfg['local_epochs']} local epochs per FedAvg round. G metric = training loss (with "
        "the noise layers on, as Keras reports it) / held-out loss (noise off), n-weighted over "
        "the clients, last round. Evaluation (SAE accuracy on the held-out parts, cycle "
        "accuracy, silhouettes, every patient's cluster) uses the pooled data: an evaluation, "
        f"not part of the protocol. {data}; {size}.",
        "D6.2 prints no number for these experiments, only figures: the headline turns its "
        "findings into bounds and says which threshold reads each word ('significant', "
        "'consistent').",
    ]
    if hdp_note:
        text.append(hdp_note)
    if hinfo:
        text.append(
            f"HDP (tomotopy HDPModel, {hinfo['iterations']} Gibbs iterations, one worker, "
            f"seeded): {hinfo['live_topics']} live topics on {hinfo['patients']} patients "
            f"({hinfo['empty_documents']} without any alteration: uniform topic weights). D6.2 "
            "does not say how its 8-cluster HDP solution was made; here k-means on the topic "
            "distributions gives k clusters [derived]. Silhouettes are computed for DEC's and "
            "HDP's labels in the same spaces (cosine and Hamming on the features), so the "
            "comparison is like for like."
        )
    tables = [
        {"path": out.headline, "caption": "The headline's quantities (D6.2's findings as "
         "bounds)."},
        {"path": out.table_7_1, "caption": "Table 7.1 (D6.2) as this run used it."},
        {"path": out.units, "max_rows": 40, "caption": "Every unit: configuration, k, "
         "clients, SAE / clustering metrics, G, silhouettes, messages."},
        {"path": out.g_norm, "caption": "G metric and cycle accuracy without / with UnitNorm "
         "(one client, mean over configurations and k): D6.2 Fig. 7.3's finding."},
        {"path": out.hdp, "caption": "DEC vs HDP per (k, clients): silhouettes and agreement "
         "(Figs 7.8, 7.9)."},
        {"path": out.messages, "max_rows": 20, "caption": "Ledger messages per unit and kind."},
    ]  # fmt: skip
    SECTION.write(out.section, text=text, figures=figures, tables=tables)
