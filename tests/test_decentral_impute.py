"""Per-center class-conditional imputation of the heart data (issue 13; seed 004 §2.4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.data.heart import impute_class_conditional
from fedclust.decentral.imputation import impute_per_center
from fedclust.federation import Ledger


def _table(seed: int = 0, n: int = 60):
    r = np.random.default_rng(seed)
    df = pd.DataFrame({
        "Cholesterol": r.integers(150, 300, n).astype(float),
        "RestingBP": r.integers(100, 160, n).astype(float),
        "HeartDisease": r.integers(0, 2, n),
    })  # fmt: skip
    df.loc[r.random(n) < 0.2, "Cholesterol"] = 0.0
    df.loc[r.random(n) < 0.1, "RestingBP"] = 0.0
    missing = df[["Cholesterol", "RestingBP"]] == 0
    return df, missing


@pytest.mark.parametrize("how", ["median", "mean"])
def test_one_center_equals_the_pooled_imputation(how):
    df, missing = _table()
    pooled, _ = impute_class_conditional(df, how)
    feats = df[["Cholesterol", "RestingBP"]]
    out, info = impute_per_center(feats, missing, df.HeartDisease, np.repeat("a", len(df)), how)
    pd.testing.assert_frame_equal(out, pooled[["Cholesterol", "RestingBP"]], check_dtype=False)
    assert set(info.source) == {"local"}


def test_each_center_uses_its_own_rows_and_nothing_leaves():
    df, missing = _table(1)
    g = np.where(np.arange(len(df)) < 30, "a", "b")
    led = Ledger()
    feats = df[["Cholesterol", "RestingBP"]]
    out, info = impute_per_center(feats, missing, df.HeartDisease, g, ledger=led)
    for center in "ab":
        rows = g == center
        ref, _ = impute_class_conditional(df[rows])
        np.testing.assert_allclose(out[rows].to_numpy(), ref[["Cholesterol", "RestingBP"]])
    assert led.n_messages == 0  # every center had observed values: all local


def test_center_without_observed_values_gets_a_federated_fill_and_small_centers_abstain():
    df, missing = _table(2, 90)
    g = np.repeat(["a", "b", "swiss"], 30)
    df.loc[g == "swiss", "Cholesterol"] = 0.0  # never recorded
    df.loc[(g == "b") & (df.HeartDisease == 1).to_numpy(), "Cholesterol"] = 0.0
    df.loc[np.flatnonzero((g == "b") & (df.HeartDisease == 1).to_numpy())[:3], "Cholesterol"] = (
        200.0
    )
    missing = df[["Cholesterol", "RestingBP"]] == 0
    led = Ledger()
    feats = df[["Cholesterol", "RestingBP"]]
    out, info = impute_per_center(feats, missing, df.HeartDisease, g, min_samples=5, ledger=led)
    fed = info[info.source == "federated"].set_index("class")
    assert set(fed.center) == {"swiss"}
    obs_a1 = df.Cholesterol[(g == "a") & (df.HeartDisease == 1).to_numpy() & ~missing.Cholesterol]
    # class 1: b has 3 observed values < 5 and abstains, so the fill is a's class median
    assert fed.loc[1, "fill"] == pytest.approx(np.median(obs_a1))
    a = led.abstentions()
    reason = "3 observed Cholesterol values in class 1 < 5"
    assert a.to_dict("records") == [
        {"round": 0, "center": "b", "protocol": "heart_impute_stats", "reason": reason}
    ]
    # class 0: count-weighted mean of a's and b's medians, sent through the ledger
    stats = led.messages().query("kind == 'impute_stats'")
    assert set(stats.sender) == {"a", "b"} and (stats.fields == "n,stat").all()
    meds, ns = [], []
    for c in "ab":
        v = df.Cholesterol[(g == c) & (df.HeartDisease == 0).to_numpy() & ~missing.Cholesterol]
        meds.append(np.median(v))
        ns.append(len(v))
    assert fed.loc[0, "fill"] == pytest.approx(np.average(meds, weights=ns))
    swiss = (g == "swiss") & (df.HeartDisease == 0).to_numpy()
    assert (out.Cholesterol[swiss] == fed.loc[0, "fill"]).all()
