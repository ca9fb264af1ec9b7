"""Rule `dec_d62_report`: D6.2 ch. 7's figures (7.2–7.9), the unit table, Table 7.1 as run,
the HDP comparison and the report section."""

import numpy as np
import pandas as pd
from _common import run

from fedclust.dec.d62 import report as R
from fedclust.dec.d62.experiment import hamming_silhouette
from fedclust.io import read_json, read_table, save_figure, write_table
from fedclust.metrics.assignment import internal_scores
from fedclust.report import Section, write_section
from fedclust.report.headlines import build


def main() -> None:
    cfg, inp, out = snakemake.params.cfg, snakemake.input, snakemake.output
    units = R.units_table([read_json(p) for p in inp.result])
    labels = {
        u: read_table(p)["cluster"].to_numpy()
        for u, p in zip(snakemake.params.units, inp.labels, strict=True)
    }
    x = read_table(inp.features)
    xs = x.to_numpy()
    cl, sw = cfg["clients"], cfg["sweep"]
    hdp_ks = [int(k) for k in cfg["hdp"]["k"]] if inp.hdp else []
    max_pts = cfg.get("silhouette_max_points")

    def silhouettes(lab: np.ndarray) -> tuple[float, float]:
        return (
            internal_scores(xs, xs, lab, max_pts)["sil_data"],
            hamming_silhouette(xs, lab, max_pts),
        )

    hdp = read_table(inp.hdp[0]) if inp.hdp else None
    cmp = (
        R.hdp_comparison(units, labels, hdp, xs, hdp_ks, cl["configuration"], silhouettes)
        if hdp is not None
        else pd.DataFrame()
    )
    head = R.headline_table(units, cmp, cl)
    msgs = pd.concat(
        [read_table(p).reset_index().assign(unit=u) for u, p in zip(snakemake.params.units,
                                                                     inp.ledger, strict=True)]
    )  # fmt: skip
    msg_tab = (
        msgs.groupby(["unit", "kind"]).size().rename("messages").reset_index()
        if "kind" in msgs.columns
        else msgs.groupby("unit").size().rename("messages").reset_index()
    )
    write_table(out.units, units, index=False)
    write_table(out.table_7_1, R.table_7_1(cfg), index=False)
    write_table(out.g_norm, R.g_by_normalisation(units), index=False)
    write_table(out.hdp, cmp, index=False)
    write_table(out.headline, head, index=False)
    write_table(out.messages, msg_tab, index=False)
    reduced = cfg["autoencoder"].get("epochs") is not None
    size = (
        f"REDUCED: {cfg['autoencoder']['epochs']} AE epochs instead of Table 7.1's 2500/5000, "
        f"{cfg['clustering']['epochs']} clustering epochs instead of 10 000"
        if reduced
        else f"D6.2's sizes: Table 7.1's AE epochs, {cfg['clustering']['epochs']} clustering epochs"
    )
    data = (
        f"{snakemake.params.mds_source} MDS cohort, {len(x)} patients × {x.shape[1]} binary "
        "features (data stage; D6.2: 2043 private EUROMDS patients × 54)"
    )
    one = units[units["clients"] == 1]
    sweep_units = one[one["configuration"].isin(sw["configurations"])]
    fig = R.sweep_figure(
        sweep_units, ["sae_accuracy", "sae_rounded_accuracy", "G_ae", "G_dec", "cycle_accuracy"],
        "configuration", f"Table 7.1 configurations, 1 client (centralized) — {size}",
    )  # fmt: skip
    save_figure(fig, out.fig_sweep)
    fed = units[(units["configuration"] == cl["configuration"]) & units["k"].isin(cl["k"])]
    fig = R.sweep_figure(
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
    for k, path in zip(hdp_ks, out.fig_hdp, strict=True):
        save_figure(
            R.hdp_figure(cmp, k, f"DEC ({cl['configuration']}) vs HDP, k = {k} — {size}"), path
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
    if snakemake.params.hdp_note:
        text.append(snakemake.params.hdp_note)
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
    write_section(
        out.section,
        Section(
            id="dec_d62",
            title="Federated DEC on MDS: D6.2 ch. 7 experiments",
            order=46,
            text=text,
            figures=figures,
            tables=tables,
            headline=build(R.HEADLINE, tables, figures),
        ),
    )


run(main, snakemake)
