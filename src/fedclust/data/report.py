"""The data stage's report section: summary table (rows, features, NaNs imputed, samples per
center, real vs simulated source), the PCA figures (seed 001 Figs 3.1–3.2) and the federated vs
pooled preprocessing tables (issue 23)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..io import read_json, read_table, write_table
from ..report import Section, headlines, write_section
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


def build_data_report(
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
    write_section(
        section_path,
        Section(
            id="data",
            title="Data",
            order=10,
            text=text,
            figures=figures,
            tables=tables,
            headline=headlines.data(tables, figures),
        ),
    )
    return summary
