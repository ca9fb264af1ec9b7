"""The data report section: summary table rows and the PCA figure."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fedclust.data.report import build_data_report
from fedclust.data.summary import pca_figure
from fedclust.io import write_table


def test_build_data_report(tmp_path):
    feats = pd.DataFrame(np.zeros((6, 3)), index=[f"s{i}" for i in range(6)])
    feats.columns = ["a", "b", "c"]
    write_table(tmp_path / "f.parquet", feats)
    write_table(tmp_path / "nans.tsv", pd.DataFrame({"nans_imputed": [2, 0, 5]}))
    split = pd.DataFrame({"sample_id": feats.index, "center": ["c00"] * 4 + ["c01"] * 2})
    write_table(tmp_path / "s.tsv", split, index=False)
    summary = build_data_report(
        datasets={
            "mds": {
                "features": tmp_path / "f.parquet",
                "nans": tmp_path / "nans.tsv",
                "splits": {"uniform2": tmp_path / "s.tsv"},
            },
            "mnist": {"features": tmp_path / "f.parquet", "nans": None, "splits": {}},
        },
        sources={"mds": "simulated", "mnist": "real"},
        figures=[],
        summary_path=str(tmp_path / "summary.tsv"),
        section_path=str(tmp_path / "data.json"),
        texts=["hello"],
    )
    assert summary.to_dict("records") == [
        {
            "dataset": "mds",
            "source": "simulated",
            "rows": 6,
            "features": 3,
            "nans_imputed": 7,
            "split": "uniform2",
            "samples_per_center": "c00: 4, c01: 2",
        },
        {
            "dataset": "mnist",
            "source": "real",
            "rows": 6,
            "features": 3,
            "nans_imputed": 0,
            "split": "",
            "samples_per_center": "",
        },
    ]
    section = json.loads((tmp_path / "data.json").read_text())
    assert section["id"] == "data" and section["order"] == 10
    assert section["tables"][0]["path"].endswith("summary.tsv") and section["text"] == ["hello"]


def test_pca_figure_panels():
    gen = np.random.default_rng(0)
    x = pd.DataFrame(gen.normal(size=(20, 8)))
    fig = pca_figure(x, x * 2, pd.Series(["a", "b"] * 10, name="center"), "T")
    axes = fig.get_axes()
    assert len(axes) == 3 and axes[0].get_title() == "T: size factors"
    cum = axes[2].get_lines()[0].get_ydata()
    assert np.all(np.diff(cum) >= 0) and cum[-1] == pytest.approx(1.0)  # all 8 components
