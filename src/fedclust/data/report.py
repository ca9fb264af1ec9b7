"""The data stage's report section: summary table (rows, features, NaNs imputed, samples per
center, real vs simulated source) and the PCA figures (seed 001 Figs 3.1–3.2)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..io import read_table, write_table
from ..report import Section, headlines, write_section
from .summary import summary_row


def build_data_report(
    datasets: dict[str, dict],
    sources: dict[str, str],
    figures: list[dict],
    summary_path: str,
    section_path: str,
    texts: list[str],
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
    write_section(
        section_path,
        Section(
            id="data",
            title="Data",
            order=10,
            text=texts,
            figures=figures,
            tables=[
                {
                    "path": str(Path(summary_path)),
                    "caption": "Datasets of this run: rows (samples), features (RNA-seq: genes "
                    "kept after VST gene selection), binary NaNs imputed by column frequency of "
                    "ones (seed 000 §2.3), and samples per center for every configured split. "
                    "'source' says whether the data are real or simulated.",
                    "max_rows": 200,
                }
            ],
            headline=headlines.data([{"path": str(Path(summary_path))}], figures),
        ),
    )
    return summary
