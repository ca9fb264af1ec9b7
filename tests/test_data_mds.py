"""MDS: IPSS-M loader (mirror and tiny fixtures) and the MDS-like simulator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.data.mds import CYTO_MAP, load_ipssm
from fedclust.data.simulate import TABLE_3_1, simulate_mds
from fedclust.errors import InputDataError


def test_table_3_1_has_54_variables():
    assert len(TABLE_3_1) == len(set(TABLE_3_1)) == 54


def test_ipssm_from_mirror(mirror):
    d = mirror / "ipssm"
    if not (d / "df_clinical.tsv").is_file():
        pytest.skip("IPSS-M not in the mirror")
    feats, obs, n_nan = load_ipssm(d / "df_clinical.tsv", d / "df_mut.tsv", d / "df_cna.tsv")
    assert feats.shape == (2957, 49) and len(obs) == 2957
    assert set(np.unique(feats.to_numpy())) == {0.0, 1.0} and n_nan.sum() == 0
    assert list(obs.columns) == ["label", "OS_YEARS", "OS_STATUS", "LFS_YEARS", "LFS_STATUS",
                                 "AMLt_YEARS", "AMLt_STATUS"]  # fmt: skip
    assert obs["AMLt_STATUS"].isna().sum() == 324 and set(obs["AMLt_STATUS"].dropna()) == {0, 1}
    counts = obs["label"].value_counts()
    assert counts["Low"] == 889 and counts["unknown"] == 256 and len(counts) == 7
    assert set(obs["OS_STATUS"].dropna()) == {0, 1}
    assert [c for c in TABLE_3_1 if c in feats.columns] == list(feats.columns)  # Table 3.1 order
    assert {"PIGA", "FBXW7", "PRPF40B", "CBLB", "idicXq13"}.isdisjoint(feats.columns)


def _fixture(tmp_path, drop=None):
    ids = ["p1", "p2", "p3"]
    clin = pd.DataFrame(
        {
            "IPSSM": ["Low", None, "High"],
            "OS_YEARS": [1.0, 2.0, 3.0],
            "OS_STATUS": [1, 0, 1],
            "LFS_YEARS": [0.5, 2.0, 3.0],
            "LFS_STATUS": [1, 0, 0],
        },
        index=pd.Index(ids, name="ID"),
    )
    genes = [g for g in TABLE_3_1 if g[0].isupper() and not g.startswith(("LOCHR", "GOCHR"))]
    genes = [g for g in genes if g != "ICHR17qort17p"]
    mut = pd.DataFrame(0, index=clin.index, columns=genes)
    mut.loc["p1", "TP53"] = 1
    mut.loc["p3", "TP53"] = np.nan
    cna_cols = sorted({c for cols in CYTO_MAP.values() for c in cols} | {"plus21"})
    cna = pd.DataFrame(0, index=clin.index, columns=cna_cols)
    cna.loc["p1", ["del7", "del5q"]] = 1  # del(5q) + another abnormality
    cna.loc["p2", "del5q"] = 1  # isolated del(5q)
    if drop:
        clin = clin.drop(columns=drop)
    paths = []
    for name, df in (("clinical", clin), ("mut", mut), ("cna", cna)):
        p = tmp_path / f"df_{name}.tsv"
        df.to_csv(p, sep="\t")
        paths.append(p)
    return paths


def test_ipssm_mapping_and_imputation(tmp_path):
    feats, obs, n_nan = load_ipssm(*_fixture(tmp_path))
    assert feats.loc["p1", "LOCHR7OD7q"] == 1 and feats.loc["p2", "LOCHR7OD7q"] == 0
    assert feats.loc["p1", "LOCHR5OD5qPLUSother"] == 1
    assert feats.loc["p2", "LOCHR5OD5qPLUSother"] == 0 and feats.loc["p2", "del5q"] == 1
    assert feats.loc["p3", "TP53"] == pytest.approx(0.5)  # NaN → frequency of ones (1 of 2)
    assert n_nan["TP53"] == 1 and n_nan.sum() == 1
    assert obs["label"].tolist() == ["Low", "unknown", "High"]


def test_ipssm_missing_column(tmp_path):
    with pytest.raises(InputDataError, match="missing column\\(s\\) LFS_STATUS"):
        load_ipssm(*_fixture(tmp_path, drop=["LFS_STATUS"]))
    with pytest.raises(InputDataError, match="missing column\\(s\\) WHO_2016"):
        load_ipssm(*_fixture(tmp_path), label="WHO_2016")


def test_simulate_mds():
    x, obs = simulate_mds(seed=1, n_samples=400, nan_rate=0.1)
    assert x.shape == (400, 54) and list(x.columns) == TABLE_3_1
    nan_share = x.isna().to_numpy().mean()
    assert 0.05 < nan_share < 0.15
    assert set(np.unique(x.to_numpy()[~x.isna().to_numpy()])) == {0.0, 1.0}
    assert (obs["LFS_YEARS"] <= obs["OS_YEARS"] + 1e-9).all() and (obs["OS_YEARS"] > 0).all()
    assert set(obs["OS_STATUS"]) == {0, 1} and obs["label"].nunique() == 6
    # cluster-dependent hazards: median OS differs between clusters
    med = obs.groupby("label")["OS_YEARS"].median()
    assert med.max() / med.min() > 1.5
    x2, obs2 = simulate_mds(seed=1, n_samples=400, nan_rate=0.1)
    assert x2.equals(x) and obs2.equals(obs)
