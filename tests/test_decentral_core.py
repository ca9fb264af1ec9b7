"""Heart on the federation core: per-center imputation, optimizer state by mode, protocols."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.data.heart import impute_class_conditional
from fedclust.decentral import imputation
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
    # every center had observed values: all local; the server learnt only that no class
    # needs help (one empty list per center and column), no statistic left a center
    msgs = led.messages()
    assert set(msgs.kind) == {"impute_needs_request", "impute_needs"}
    assert (msgs[msgs.kind == "impute_needs"].floats == 0).all() and len(msgs) == 8


def test_the_server_sees_only_messages_and_learns_the_labels_the_centers_report(monkeypatch):
    """Issue 30: the classes came from the pooled target column and the other centers'
    statistics were read from the pooled table on the server side. The server function now gets
    only proxies and settings (a spy checks that no array or table reaches it), and it learns a
    class only when a center reports it cannot fill it: here hospital "c" holds only class-1
    rows (the pooled label set is {0, 1}) and never recorded cholesterol, "b" holds only class 0,
    so the server asks for class 1 only and never for class 0."""
    df, missing = _table(3, 90)
    g = np.repeat(["a", "b", "c"], 30)
    y = df.HeartDisease.to_numpy().copy()
    y[g == "b"], y[g == "c"] = 0, 1
    df.loc[g == "c", "Cholesterol"] = 0.0
    missing = df[["Cholesterol", "RestingBP"]] == 0
    seen = []
    real = imputation.impute_server

    def spy(proxies, columns, min_samples):
        for arg in (columns, min_samples):
            assert not isinstance(arg, np.ndarray | pd.DataFrame | pd.Series)
        assert all(type(p).__name__ == "LedgerClientProxy" for p in proxies)
        seen.append([p.cid for p in proxies])
        return real(proxies, columns, min_samples)

    monkeypatch.setattr(imputation, "impute_server", spy)
    led = Ledger()
    feats = df[["Cholesterol", "RestingBP"]]
    out, info = impute_per_center(feats, missing, y, g, ledger=led)
    assert seen == [["a", "b", "c"]]
    msgs = led.messages()
    needs = msgs[msgs.kind == "impute_needs"]
    assert list(needs.protocol.unique()) == ["heart_impute_needs"]
    asked = msgs[msgs.kind == "impute_stats_request"]
    assert set(asked.receiver) == {"a", "b"} and len(asked) == 2  # Cholesterol, class 1 only
    fed = info[info.source == "federated"]
    assert fed[["center", "column", "class"]].values.tolist() == [["c", "Cholesterol", 1]]
    obs_a1 = df.Cholesterol[(g == "a") & (y == 1) & ~missing.Cholesterol.to_numpy()]
    # b has no class-1 rows: it abstains, the fill is a's class-1 median
    assert fed.fill.iloc[0] == pytest.approx(np.median(obs_a1))
    assert (out.Cholesterol[g == "c"] == np.median(obs_a1)).all()
    assert set(led.abstentions().center) == {"b"}


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
    reason = "too few observed Cholesterol values in the class"  # no count in it (issue 22)
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


# ---------------------------------------------------------------- heart on the federation core
def _clients(k: int = 3, n: int = 24):
    from fedclust.decentral.clients import make_client_data

    r = np.random.default_rng(0)
    x = r.random((k * n, 20)).astype(np.float32)
    y = (x[:, 0] + 0.2 * r.standard_normal(k * n) > 0.5).astype(int)
    return make_client_data(pd.DataFrame(x), y, np.repeat([f"c{i}" for i in range(k)], n))


def test_shared_adam_state_only_as_published():
    from fedclust.decentral.experiment import run_approach
    from fedclust.decentral.simulate import optimizer_state_for
    from fedclust.errors import ConfigError

    assert optimizer_state_for("as_published") == "shared"
    assert optimizer_state_for("as_published", "per_client") == "shared"
    assert optimizer_state_for("as_described") == "per_client"
    assert optimizer_state_for("as_described", "fresh_each_fit") == "fresh_each_fit"
    with pytest.raises(ConfigError, match="only available in as_published"):
        optimizer_state_for("as_described", "shared")
    data = _clients()
    kw = dict(rounds=2, epochs=1, batch_size=8)
    default = run_approach(data, "FL", "as_described", **kw)
    per_client = run_approach(data, "FL", "as_described", optimizer_state="per_client", **kw)
    pd.testing.assert_frame_equal(default.metrics, per_client.metrics)
    # the policy reaches the trainer: resetting Adam every fit changes round 2
    fresh = run_approach(data, "FL", "as_described", optimizer_state="fresh_each_fit", **kw)
    r1, r2 = (default.metrics["round"] == 1), (default.metrics["round"] == 2)
    assert np.allclose(default.metrics[r1].loss_total, fresh.metrics[r1].loss_total)
    assert not np.allclose(default.metrics[r2].loss_total, fresh.metrics[r2].loss_total)


def test_heart_messages_obey_their_protocols():
    from fedclust.decentral.experiment import run_approach

    res = run_approach(_clients(), "customized", "as_described", rounds=1, epochs=1, batch_size=8)
    t = res.ledger.table()
    w = t[t.kind == "weights"]
    assert (w.protocol == "heart_peer_weights").all() and (w.fields == "n,weights").all()
    ev = t[t.kind == "eval_metrics"]
    assert (ev.protocol == "heart_eval_metrics").all() and ev.fields.str.contains("n").all()
    fl = run_approach(_clients(), "FL", "as_described", rounds=1, epochs=1, batch_size=8)
    assert set(fl.ledger.table().protocol) == {"heart_fl_global", "heart_fl_update",
                                               "heart_eval_metrics"}  # fmt: skip


def test_the_curious_server_learns_no_patient_from_the_label_messages_by_differencing():
    """Curious server on ``heart_impute_needs`` (issue 30's new message): two runs that differ
    in one patient of hospital "a" (not the last of its class there) give the server exactly
    the same label messages — they carry a centre's set of unfillable classes, no count and no
    value — so differencing the releases of the two runs recovers nothing about that patient."""
    from fedclust.privacy.recorder import RecordingLedger

    df, _ = _table(3, 90)
    g = np.repeat(["a", "b", "c"], 30)
    y = df.HeartDisease.to_numpy().copy()
    y[g == "b"], y[g == "c"] = 0, 1
    df.loc[g == "c", "Cholesterol"] = 0.0
    feats = df[["Cholesterol", "RestingBP"]]
    target = int(np.flatnonzero((g == "a") & (y == 1))[0])
    keep = np.arange(len(df)) != target

    def label_messages(rows):
        led = RecordingLedger()
        f = feats[rows].reset_index(drop=True)
        impute_per_center(f, f == 0, y[rows], g[rows], ledger=led)
        got = led.received(protocol="heart_impute_needs")
        assert got, "the run sent no label message"
        return [(r["sender"], sorted(map(str, m["labels"]))) for r, m in got]

    with_patient, without = label_messages(np.ones(len(df), bool)), label_messages(keep)
    assert with_patient == without
    assert ("c", ["1"]) in with_patient  # c asks for class 1 only: the message is not empty
