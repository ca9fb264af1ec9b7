"""The data stage's report section: summary table (rows, features, NaNs imputed, samples per
center, real vs simulated source) and the PCA figures (seed 001 Figs 3.1–3.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..io import read_table, write_table
from ..report import StageSection
from ..report.headlines import Col, Line, Sel, Spec, starts
from .summary import summary_row


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
    ),
    figure=("SIMA", "pca"),
)

SECTION = StageSection("data", "Data", 10, HEADLINE)


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
    table = {
        "path": str(Path(summary_path)),
        "caption": "Datasets of this run: rows (samples), features (RNA-seq: genes kept after VST "
        "gene selection), binary NaNs imputed by column frequency of ones (seed 000 §2.3), and "
        "samples per center for every configured split. 'source' says whether the data are "
        "real or simulated.",
        "max_rows": 200,
    }
    SECTION.write(section_path, text=texts, figures=figures, tables=[table])
    return summary
