"""Seed 004 fidelity (issue 16): Keras' 200-threshold AUC, the customized topology's published
flow end to end, FL_SMA's averaging, and the chapter-3 tables (Tables 3.1–3.4, Fig 3.2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from fedclust.decentral import eda, experiment, simulate
from fedclust.decentral.clients import make_client_data
from fedclust.decentral.metrics import keras_auc, keras_thresholds
from fedclust.decentral.topologies import fixed_topology, plan_round
from fedclust.federation.strategy import aggregate

N = [114, 219, 103, 113, 138]  # thesis n_train of clev, hung, long, stat, swit


# --- Keras AUC -----------------------------------------------------------------------------


def test_keras_thresholds_grid():
    t = keras_thresholds(200)
    assert len(t) == 200 and t[0] == pytest.approx(-1e-7) and t[-1] == pytest.approx(1 + 1e-7)
    np.testing.assert_allclose(t[1:-1], np.arange(1, 199) / 199)


def test_keras_auc_hand_computed_tie_inside_one_bin():
    # 0.401 (positive) and 0.402 (negative) fall in the same bin (79/199, 80/199]: Keras sees a
    # tie. ROC points over the thresholds: (1,1) -> (0.5,1) -> (0,0.5) -> (0,0); trapezoids
    # 0.5·1 + 0.5·(1+0.5)/2 + 0 = 0.875. The exact AUC ranks them: 3 of 4 pairs = 0.75.
    y, p = [0, 0, 1, 1], [0.1, 0.402, 0.401, 0.8]
    assert keras_auc(y, p) == pytest.approx(0.875, abs=1e-12)
    assert roc_auc_score(y, p) == pytest.approx(0.75)
    # scores at exactly 0 and 1 are inside the epsilon-widened end thresholds
    assert keras_auc([0, 1], [0.0, 1.0]) == pytest.approx(1.0)
    assert keras_auc([1, 0], [0.0, 1.0]) == pytest.approx(0.0)


def test_keras_auc_equals_exact_auc_on_bin_separated_scores():
    rng = np.random.default_rng(3)
    bins = rng.choice(np.arange(1, 198), 60, replace=False)
    p = (bins + 0.5) / 199  # one score per bin, strictly between thresholds: no ties
    y = rng.integers(0, 2, 60)
    assert keras_auc(y, p) == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    # many scores per bin: Keras = exact AUC of the scores binned to the threshold grid
    q = rng.random(300)
    yq = (q + 0.3 * rng.standard_normal(300) > 0.5).astype(int)
    binned = np.ceil(q * 199)  # bin index: q in ((b-1)/199, b/199]
    assert keras_auc(yq, q) == pytest.approx(roc_auc_score(yq, binned), abs=1e-12)
    assert keras_auc(yq, q) != pytest.approx(roc_auc_score(yq, q), abs=1e-6)


def test_keras_auc_single_class_is_zero_like_keras():
    assert keras_auc([1, 1, 1], [0.2, 0.5, 0.9]) == 0.0  # Keras: FPR undefined -> 0 (div_no_nan)


# --- the customized topology as published ---------------------------------------------------


def test_customized_published_plan_is_spec_4_6():
    plan = plan_round(fixed_topology("customized", 5), N, "as_published")
    n1, n2, n3, n4, n5 = N
    assert plan.entries == [
        [("old", 1), ("new", 1), ("new", 2)],
        [("old", 2), ("new", 2), ("new", 3)],
        [("old", 3), ("new", 3), ("new", 4)],
        [("old", 4), ("new", 1), ("new", 4)],
        [("old", 5), ("new", 1), ("new", 2)],  # client 5 drops its own training
    ]
    assert plan.weights == [[n4, n5, n1], [n5, n1, n2], [n1, n2, n3], [n2, n3, n4], [n3, n4, n5]]
    used = sorted((s, r) for s, r, u in plan.messages if u)
    assert used == [(1, 4), (1, 5), (2, 1), (2, 5), (3, 2), (4, 3)]
    assert sorted((s, r) for s, r, u in plan.messages if not u) == [(3, 1), (4, 2), (5, 3), (5, 4)]


def _tiny(k: int = 5, n: int = 24):
    r = np.random.default_rng(0)
    x = r.random((k * n, 20)).astype(np.float32)
    y = (x[:, 0] + 0.2 * r.standard_normal(k * n) > 0.5).astype(int)
    return make_client_data(pd.DataFrame(x), y, np.repeat([f"c{i}" for i in range(k)], n))


def test_customized_published_run_averages_what_the_plan_says(monkeypatch):
    """End to end: the states after round 1 are the spec §4.6 averages of the clients' old and
    freshly trained weights; trained on 85 % of the rows; messages as the plan."""
    seen = {}
    orig = simulate.ApproachRun.finish_round

    def spy(self, t, new):
        seen[t] = ([list(w) for w in self.states], [list(w) for w in new])
        return orig(self, t, new)

    monkeypatch.setattr(simulate.ApproachRun, "finish_round", spy)
    data = _tiny()
    n = [len(d.y_train) for d in data]
    res = experiment.run_approach(data, "customized", "as_published", rounds=2, epochs=1,
                                batch_size=8)  # fmt: skip
    got_round1 = seen[2][0]  # the states entering round 2 = the result of round 1
    old1, new1 = seen[1]
    expect = [
        aggregate([old1[0], new1[0], new1[1]], [n[3], n[4], n[0]]),
        aggregate([old1[1], new1[1], new1[2]], [n[4], n[0], n[1]]),
        aggregate([old1[2], new1[2], new1[3]], [n[0], n[1], n[2]]),
        aggregate([old1[3], new1[0], new1[3]], [n[1], n[2], n[3]]),
        aggregate([old1[4], new1[0], new1[1]], [n[2], n[3], n[4]]),
    ]
    for g, e in zip(got_round1, expect, strict=True):
        for a, b in zip(g, e, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    t = res.ledger.table()
    w = t[(t["round"] == 1) & t["kind"].str.startswith("weights")]
    sent = w[w["kind"] == "weights"]
    used = sorted(zip(sent["sender"], sent["receiver"], strict=True))
    assert used == [("c0", "c3"), ("c0", "c4"), ("c1", "c0"), ("c1", "c4"), ("c2", "c1"),
                    ("c3", "c2")]  # fmt: skip
    assert (w["kind"] == "weights_unused").sum() == 4
    # validation_split 0.15: 18 train rows -> int(18·0.85) = 15 rows -> 2 batches of 8 per epoch
    assert res.steps == 2 * 5 * 2
    assert "auc_keras" in res.metrics.columns and res.metrics["auc_keras"].between(0, 1).all()


def test_fl_sma_is_the_unweighted_mean_and_fl_the_weighted(monkeypatch):
    """FL_SMA as the thesis text reads (simple mean of the weights); the author's FL_SMA notebooks
    instead average weights n-weighted as FL and take a simple mean of validation *metrics*."""
    seen = {}
    orig = simulate.ApproachRun.finish_round

    def spy(self, t, new):
        out = orig(self, t, new)
        seen[self.approach] = ([list(w) for w in new], out[0])
        return out

    monkeypatch.setattr(simulate.ApproachRun, "finish_round", spy)
    data = make_client_data(
        pd.DataFrame(np.random.default_rng(1).random((88, 20))),
        np.random.default_rng(2).integers(0, 2, 88),
        np.repeat(["a", "b", "c"], [20, 28, 40]),
    )  # unequal sizes so the two means differ
    n = [len(d.y_train) for d in data]
    for a in ("FL", "FL_SMA"):
        experiment.run_approach(data, a, "as_described", rounds=1, epochs=1, batch_size=8)
    new, glob = seen["FL_SMA"]
    np.testing.assert_allclose(glob[0], np.mean([w[0] for w in new], axis=0), rtol=1e-6)
    new, glob = seen["FL"]
    np.testing.assert_allclose(glob[0], np.average([w[0] for w in new], axis=0, weights=n),
                               rtol=1e-5, atol=1e-7)  # fmt: skip


# --- chapter 3 tables ---------------------------------------------------------------------


def _raw_and_obs():
    """A synthetic 918-row table with the thesis' hospital slices and class counts."""
    from fedclust.data.heart import ROW_RANGE_HOSPITALS

    rng = np.random.default_rng(0)
    hosp = np.empty(918, dtype=object)
    y = np.zeros(918, int)
    pos = {"hung": 106, "swit": 158, "long": 105, "stat": 70, "clev": 69}
    for h, (a, b) in ROW_RANGE_HOSPITALS.items():
        hosp[a:b] = h
        y[a : a + pos[h]] = 1
    raw = pd.DataFrame({
        "Age": rng.integers(28, 78, 918), "RestingBP": rng.normal(132, 18, 918).round(),
        "Cholesterol": np.where(rng.random(918) < 0.19, 0, rng.normal(245, 50, 918).round()),
        "MaxHR": rng.integers(60, 203, 918), "Oldpeak": rng.normal(0.9, 1.0, 918).round(1),
        "HeartDisease": y,
    })  # fmt: skip
    obs = pd.DataFrame({"HeartDisease": y, "hospital": hosp})
    return raw, obs


def test_table_3_4_reproduces_the_thesis_counts():
    raw, obs = _raw_and_obs()
    t = eda.table_3_4(obs)
    assert t.loc["Total", "total_ours"] == 918 and t.loc["Total", "positives_ours"] == 508
    assert (t["pct_positive_difference"].abs() <= 0.05).all()
    assert t.loc["clev", "total_ours"] == 152
    t1 = eda.table_3_1(obs)
    assert t1.loc["clev", "difference"] == 1 and (t1.drop("clev")["difference"] == 0).all()


def test_outliers_and_describe_against_numpy():
    raw, _ = _raw_and_obs()
    t = eda.table_3_3(raw)
    x = raw["Cholesterol"].to_numpy(float)
    q1, q3 = np.percentile(x, [25, 75])
    k = ((x < q1 - 1.5 * (q3 - q1)) | (x > q3 + 1.5 * (q3 - q1))).sum()
    assert t.loc["Cholesterol", "outliers"] == k
    assert t.loc["Cholesterol", "ours"] == pytest.approx(round(100 * k / 918, 2))
    d = eda.table_3_2(raw)
    assert d.loc[("MaxHR", "std"), "ours"] == pytest.approx(round(raw["MaxHR"].std(ddof=1), 2))


def test_spearman_matches_scipy():
    rng = np.random.default_rng(0)
    f = pd.DataFrame(rng.random((50, 3)), columns=["a", "b", "Oldpeak"])
    f["b"] = f["a"] ** 3  # monotone: rho = 1
    obs = pd.DataFrame({"HeartDisease": (f["Oldpeak"] > 0.5).astype(int)}, index=f.index)
    c = eda.spearman(f, obs)
    assert c.loc["a", "b"] == pytest.approx(1.0)
    rho = spearmanr(f["Oldpeak"], obs["HeartDisease"]).statistic
    assert c.loc["Oldpeak", "HeartDisease"] == pytest.approx(rho)
    tc = eda.target_correlations(c)
    assert tc.index[0] == "Oldpeak" and bool(tc.loc["Oldpeak", "thesis_names_it_0.3_to_0.6"])
