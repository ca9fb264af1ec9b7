"""The data stage's report section: summary table (rows, features, NaNs imputed, samples per
center, real vs simulated source), the PCA figures (seed 001 Figs 3.1–3.2) and the federated vs
pooled preprocessing tables (issue 23)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..io import read_json, read_table, write_table
from ..report import StageSection
from ..report.headlines import Col, Line, Sel, Spec, starts
from .summary import summary_row

RNA_COLUMNS = ["dataset", "split", "samples", "centres", "size_factors_max_rel", "vst_max_abs",
               "top_genes_swapped"]  # fmt: skip
TABLE_COLUMNS = ["dataset", "step", "quantity", "pooled", "federated", "difference",
                 "floats_per_centre_max", "abstentions"]  # fmt: skip


def federated_tables(agreement: list[str], heart: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(RNA-seq agreement rows, table rows: MDS and heart fill values) from the federated runs."""
    rna, tab = [], []
    for path in agreement:
        t = pd.read_csv(path, sep="\t")
        (rna if str(t["dataset"].iloc[0]).startswith("rnaseq/") else tab).append(t)
    rows = []
    for t in tab:  # MDS: one row
        r = t.iloc[0]
        rows.append({"dataset": "mds", "step": f"NaN → column frequency ({r['split']})",
                     "quantity": "max |fill federated − pooled|", "pooled": None,
                     "federated": None, "difference": r["fill_max_abs"],
                     "floats_per_centre_max": r["floats_per_centre_max"],
                     "abstentions": r["abstentions"]})  # fmt: skip
    if heart:
        h = read_json(heart)
        for col, classes in h.get("federated_vs_pooled", {}).items():
            for cls, v in classes.items():
                rows.append({"dataset": "heart", "step": f"zeros → class {h['imputation']}",
                             "quantity": f"{col}, class {cls} ({v['count']} cells)",
                             "pooled": v["pooled"], "federated": v["federated"],
                             "difference": v["difference"],
                             "floats_per_centre_max": None,
                             "abstentions": h.get("federated_abstentions")})  # fmt: skip
    rna_t = pd.concat(rna, ignore_index=True) if rna else pd.DataFrame(columns=RNA_COLUMNS)
    return rna_t, pd.DataFrame(rows, columns=TABLE_COLUMNS)


def federated_text(prep: dict, rna: pd.DataFrame, modes: dict[str, str]) -> str:
    """One paragraph: what runs federated in this config and how it compares."""
    done = ", ".join(f"{k}: {v}" for k, v in modes.items())
    text = (
        "Preprocessing pooled vs federated (issue 23; this run: "
        f"{done}). The federated path runs after the split, each centre answering the "
        "server's requests through the federation core (fedclust.data.fedpreprocess; no "
        f"message summarises fewer than {prep.get('min_samples', 3)} samples, a smaller centre "
        "abstains but still preprocesses its own rows). RNA-seq: pydeseq2's size factors (the "
        "pooled log geometric means from per-centre sums, each centre's own median of ratios), "
        "genewise dispersions (scipy's L-BFGS-B on log α driven in lockstep by summed "
        "likelihood terms), pydeseq2's trend code at the server, the VST closed form at each "
        "centre and the top-N genes from merged VST moments."
    )
    if len(rna):
        worst = rna["vst_max_abs"].max()
        text += (
            " Difference to pooled pydeseq2: size factors ≤ "
            f"{rna['size_factors_max_rel'].max():.1e} relative, VST ≤ {worst:.1e} (log2), "
            "top-N genes swapped: "
            f"{int(rna['top_genes_swapped'].max())}."
        )
    text += (
        " Tables: MDS NaN → frequency of ones is a ratio of sums (equal to pooled unless a "
        "centre's cell falls under the floor); heart class medians come from binned counts "
        f"({prep.get('bins', 50)} bins, small cells suppressed), so they may differ from the "
        "pooled medians, shown below. Not federated yet: the PCA figure and the HAC stage's "
        "cut-quality scores are computed on the pooled matrices (evaluations); DEC's "
        "hyper-parameters are tuned on pooled data (see the DEC section)."
    )
    return text


def _counts(cell: Any) -> list[int]:
    """``"c00: 25, c01: 288"`` -> [25, 288]."""
    return [int(x.split(":")[1]) for x in str(cell).split(",")]


def _mds_cohort(s: Sel) -> str:
    return (
        f"this run's MDS cohort is {s.row['source']} ({int(s.row['rows'])} patients), not EUROMDS"
    )


HEADLINE = Spec(
    doc="Cohort sizes vs the source documents (seed 000: 2043 × 54 EUROMDS, 60 000 MNIST; seed "
    "000 Fig 4.2 skewed split; seed 001: TCGA biggest center 22–58 %).",
    lines=(
        Line(
            "MDS patients",
            source=2043,
            ours=Col("rows", int),
            table="summary",
            cause=_mds_cohort,
            where={"dataset": "mds"},
            note="EUROMDS (private) vs ours",
        ),
        Line(
            "MDS binary features",
            source=54,
            ours=Col("features", int),
            table="summary",
            cause=_mds_cohort,
            where={"dataset": "mds"},
        ),
        Line(
            "largest center of the skewed MDS split",
            source=495,
            ours=lambda s: max(_counts(s.row["samples_per_center"])),
            table="summary",
            cause=lambda s: (
                f"the skewed split of this run's {int(s.row['rows'])} patients is drawn with "
                "this config's seed, not Fig 4.2's draw of EUROMDS' 2043"
            ),
            where=lambda t: t[
                (t["dataset"] == "mds") & t["split"].astype(str).str.startswith("skewed")
            ],
            note="seed 000 Fig 4.2 (n = 2043, seed 51550)",
        ),
        Line(
            "MNIST images",
            source=60000,
            ours=Col("rows", int),
            table="summary",
            cause=lambda s: (
                f"this run's MNIST is {s.row['source']} ({int(s.row['rows'])} images), "
                "not the full 60 000"
            ),
            where={"dataset": "mnist"},
            note="thesis: full MNIST",
        ),
        Line(
            "biggest center share, % (RNA-seq)",
            source="22–58",
            ours=lambda s: (
                100
                * max(_counts(s.row["samples_per_center"]))
                / sum(_counts(s.row["samples_per_center"]))
            ),
            table="summary",
            cause=lambda s: (
                f"{s.row['dataset']} is {s.row['source']}: its centers are not the thesis' "
                "TCGA regions"
            ),
            where=starts("dataset", "rnaseq/"),
            label=lambda s: f"biggest center share, % ({s.row['dataset']})",
            note="seed 001, real TCGA regions",
        ),
        Line(
            "federated − pooled VST, max |Δ| (log2)",
            source=0,
            ours=Col("vst_max_abs", float),
            table="federated_rnaseq",
            cause=lambda s: (
                "pydeseq2 falls back to a grid search (0.5 % steps in α) for genes whose "
                "L-BFGS-B stops on rounding; the federated sums round differently, so that set of "
                f"genes differs slightly ({s.row['dataset']}, {int(s.row['centres'])} centres)"
            ),
            each=True,
            label=lambda s: f"federated − pooled VST, max |Δ| ({s.row['dataset']})",
            note="issue 23: equal to pooled up to rounding",
            tol=1e-5,
            digits=8,
        ),
    ),
    figure=("SIMA", "pca"),
)

SECTION = StageSection("data", "Data", 10, HEADLINE)


def build_data_report(
    *,
    datasets: dict[str, dict],
    sources: dict[str, str],
    figures: list[dict],
    summary_path: str,
    section_path: str,
    texts: list[str],
    agreement: list[str] | None = None,
    heart: str | None = None,
    rnaseq_path: str | None = None,
    tables_path: str | None = None,
    prep: dict | None = None,
    modes: dict[str, str] | None = None,
) -> pd.DataFrame:
    """``datasets``: name → {features, nans (optional), splits: {split: path}}."""
    rows = []
    for name, files in datasets.items():
        feats = read_table(files["features"])
        n_nan = int(read_table(files["nans"])["nans_imputed"].sum()) if files.get("nans") else 0
        if not files.get("splits"):
            rows.append(summary_row(name, feats, sources[name], n_nan))
        for split, path in files.get("splits", {}).items():
            table = pd.read_csv(path, sep="\t")
            per_center = table["center"].value_counts().sort_index()
            rows.append(summary_row(name, feats, sources[name], n_nan, per_center, split))
    summary = pd.DataFrame(rows)
    write_table(summary_path, summary, index=False)
    tables = [
        {
            "path": str(Path(summary_path)),
            "caption": "Datasets of this run: rows (samples), features (RNA-seq: genes "
            "kept after VST gene selection), binary NaNs imputed by column frequency of "
            "ones (seed 000 §2.3), and samples per center for every configured split. "
            "'source' says whether the data are real or simulated.",
            "max_rows": 200,
        }
    ]
    text = list(texts)
    if rnaseq_path and tables_path:
        rna, tab = federated_tables(agreement or [], heart)
        write_table(rnaseq_path, rna, index=False)
        write_table(tables_path, tab, index=False)
        text.append(federated_text(prep or {}, rna, modes or {}))
        tables += [
            {
                "path": str(Path(rnaseq_path)),
                "caption": "Federated vs pooled pydeseq2 preprocessing per RNA-seq cohort "
                "(centres: the split's regions): largest relative difference of the size "
                "factors, normalised means, genewise dispersions (genes where pydeseq2's "
                "L-BFGS-B stops on rounding take a 0.5 %-step grid search, pooled or federated) "
                "and trend coefficients, largest absolute VST difference (log2), top-N genes "
                "swapped, L-BFGS-B rounds, messages, floats sent by the busiest centre, "
                "abstentions (centres under the floor).",
            },
            {
                "path": str(Path(tables_path)),
                "caption": "Federated vs pooled imputation of the tables: MDS NaN → column "
                "frequency of ones (ratio of sums) and heart zeros → class median over the "
                "hospitals from binned counts with small cells suppressed.",
            },
        ]
    SECTION.write(section_path, text=text, figures=figures, tables=tables)
    return summary
