"""Federated survival (seed 003 §7, D6.2 ch. 8): Cox loss, C-index, DeepCox strategies, the exact
federated Cox-PH / Kaplan–Meier / log-rank references, scenarios and bad inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from lifelines import CoxPHFitter, KaplanMeierFitter
from lifelines.statistics import logrank_test, multivariate_logrank_test
from lifelines.utils import concordance_index

from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import Ledger
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.survival.cohort import fit_preprocess, select_endpoint, simulate_cohort
from fedclust.survival.cox import RiskSets, c_index, cox_loss, cox_loss_masked
from fedclust.survival.coxph import fit_federated_coxph
from fedclust.survival.experiment import run_job
from fedclust.survival.km import distance_to_exact, federated_km, grid_edges, merge_cells
from fedclust.survival.model import get_parameters
from fedclust.survival.scenarios import partition
from fedclust.survival.strategies import (
    SurvivalClient,
    run_sequential,
    run_weights_averaging,
    train_strategy,
)
from fedclust.survival.train import HyperParams, LrRule, ModelConfig, train_centralized


def _data(n=240, p=4, seed=0, ties=True):
    g = np.random.default_rng(seed)
    x = g.normal(size=(n, p))
    beta = np.array([0.8, -0.5, 0.3, 0.0][:p])
    t = g.exponential(np.exp(-x @ beta))
    t = np.round(t, 1) if ties else t
    e = (g.random(n) < 0.7).astype(int)
    return x, t, e


# ---------------------------------------------------------------- loss and C-index
def test_c_index_equals_lifelines_with_ties():
    x, t, e = _data(300)
    risk = np.round(x[:, 0], 1)  # tied risks
    assert np.unique(t).size < len(t)
    assert c_index(t, risk, e) == pytest.approx(concordance_index(t, -risk, e), abs=1e-12)


def test_masked_loss_is_sum_of_centre_losses_and_one_centre_is_unmasked():
    x, t, e = _data(200)
    r, tt, ee = torch.as_tensor(x[:, 0]), torch.as_tensor(t), torch.as_tensor(e)
    c = torch.as_tensor(np.arange(200) % 3)
    masked = cox_loss_masked(r, tt, ee, c, reduction="sum")
    parts = sum(
        cox_loss_masked(r[c == k], tt[c == k], ee[c == k], reduction="sum") for k in range(3)
    )
    assert float(masked) == pytest.approx(float(parts), rel=1e-12)
    assert float(cox_loss(r, tt, ee, c, "sum")) == pytest.approx(float(masked), rel=1e-12)
    one = torch.zeros(200, dtype=torch.long)
    assert float(cox_loss(r, tt, ee, one)) == pytest.approx(float(cox_loss(r, tt, ee)), rel=1e-12)
    assert float(cox_loss(r, tt, ee)) == pytest.approx(float(cox_loss_masked(r, tt, ee)), rel=1e-12)
    assert float(RiskSets(tt, ee).loss(r)) == pytest.approx(float(cox_loss(r, tt, ee)), rel=1e-12)
    # the mask changes the loss: risk sets really are restricted
    assert abs(float(cox_loss(r, tt, ee, reduction="sum")) - float(masked)) > 1.0


def test_breslow_loss_equals_lifelines_partial_likelihood_at_its_optimum():
    """Without ties Breslow = Efron: our loss at lifelines' β̂ is its −log partial likelihood."""
    x, t, e = _data(150, 3, ties=False)
    df = pd.DataFrame(x, columns=["a", "b", "c"]).assign(T=t, E=e)
    cph = CoxPHFitter().fit(df, "T", "E")
    risk = torch.as_tensor(x @ cph.params_.to_numpy())
    ours = -float(cox_loss(risk, torch.as_tensor(t), torch.as_tensor(e), reduction="sum"))
    assert ours == pytest.approx(cph.log_likelihood_, rel=1e-9)


def test_linear_deepcox_approximates_lifelines():
    x, t, e = _data(300, 3, seed=1, ties=False)
    df = pd.DataFrame(x, columns=["a", "b", "c"]).assign(T=t, E=e)
    ref = CoxPHFitter().fit(df, "T", "E").params_.to_numpy()
    mc = ModelConfig(hidden=(), l1=0.0, l2=0.0, optimizer="adam", lr_floor=1e-3)
    torch.manual_seed(0)
    init = get_parameters(mc.build(3))
    params, hist = train_centralized(x, t, e, init, HyperParams(10, 30, 1, 0.1), mc, seed=0)
    np.testing.assert_allclose(params[0].ravel(), ref, atol=1e-3)
    assert hist[-1] < hist[0]


# ---------------------------------------------------------------- strategies
@pytest.mark.parametrize("runner", ["weights_averaging", "sequential"])
def test_one_centre_equals_centralized(runner):
    x, t, e = _data(120)
    mc = ModelConfig(hidden=(8, 4), l1=1e-3, l2=1e-3)
    torch.manual_seed(3)
    init = get_parameters(mc.build(4))
    hp = HyperParams(fe=4, ie=3, batches=2, lr=0.02)  # minibatch shuffling on
    ref, _ = train_centralized(x, t, e, init, hp, mc, seed=11)
    client = SurvivalClient("c0", x, t, e, mc, seed=11)
    ledger = Ledger()
    if runner == "weights_averaging":
        model = run_weights_averaging([client], init, hp, mc, ledger)
    else:
        model = run_sequential([client], init, hp, mc, ledger, np.random.default_rng(0))
    for a, b in zip(model[0][0], ref, strict=True):
        np.testing.assert_array_equal(a, b)
    assert ledger.n_messages > 0 and "x" not in set(ledger.table()["fields"])
    for name in ("centralized", "centralized_steps"):  # K × batches = batches for K = 1
        pooled = train_strategy(name, [client], init, hp, mc, Ledger(), None)
        for a, b in zip(pooled[0][0], ref, strict=True):
            np.testing.assert_array_equal(a, b)


def test_centralized_bound_takes_one_centres_optimiser_path():
    """Issue 28 item 9: ``centralized`` = one centre holding all data (``batches`` minibatches
    per epoch); ``centralized_steps`` = K × batches minibatches (as many steps as Sequential)."""
    x, t, e = _data(160)
    mc = ModelConfig(hidden=(8, 4), l1=1e-3, l2=1e-3)
    torch.manual_seed(4)
    init = get_parameters(mc.build(4))
    hp = HyperParams(fe=3, ie=2, batches=1, lr=0.02)
    cl = [SurvivalClient(f"c{k}", x[k::2], t[k::2], e[k::2], mc, seed=7 + k) for k in range(2)]
    xs = np.concatenate([x[0::2], x[1::2]])
    ts, es = np.concatenate([t[0::2], t[1::2]]), np.concatenate([e[0::2], e[1::2]])
    one, _ = train_centralized(xs, ts, es, init, hp, mc, seed=7)
    steps, _ = train_centralized(xs, ts, es, init, HyperParams(3, 2, 2, 0.02), mc, seed=7)
    got = train_strategy("centralized", cl, init, hp, mc, Ledger(), None)[0][0]
    got_steps = train_strategy("centralized_steps", cl, init, hp, mc, Ledger(), None)[0][0]
    for a, b, c, d in zip(got, one, got_steps, steps, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(c, d)
    assert not np.array_equal(got[0], got_steps[0])  # the two paths differ


def test_weights_averaging_uses_fedavg_weights_and_ensemble_weights():
    x, t, e = _data(200)
    mc = ModelConfig()
    init = get_parameters(mc.build(4))
    cl = [
        SurvivalClient("a", x[:150], t[:150], e[:150], mc, 1),
        SurvivalClient("b", x[150:], t[150:], e[150:], mc, 2),
    ]
    hp = HyperParams(1, 1, 1, 0.05)
    wa = run_weights_averaging(cl, init, hp, mc, Ledger())[0][0]
    pa, _, _ = SurvivalClient("a", x[:150], t[:150], e[:150], mc, 1).fit(
        init, {"epochs": 1, "batches": 1, "lr": 0.05}
    )
    pb, _, _ = SurvivalClient("b", x[150:], t[150:], e[150:], mc, 2).fit(
        init, {"epochs": 1, "batches": 1, "lr": 0.05}
    )
    np.testing.assert_allclose(wa[0], 0.75 * pa[0] + 0.25 * pb[0], rtol=1e-6)
    ens = train_strategy("ensemble", cl, init, hp, mc, Ledger(), None)
    assert [w for _, w in ens] == pytest.approx([0.75, 0.25])


def test_lr_rule():
    r = LrRule(0.1, 0.001)
    assert r.update(1.0, 0) == 0.1
    assert r.update(0.9, 1) == 0.1  # loss fell: unchanged
    assert r.update(1.2, 4) == pytest.approx(0.05)  # rose at epoch 4: lr / sqrt(4)
    r2 = LrRule(0.0015, 0.001)
    r2.update(1.0, 0)
    assert r2.update(2.0, 9) == 0.001  # floor
    r3 = LrRule(0.0005, 0.001)
    r3.update(1.0, 0)
    assert r3.update(2.0, 1) == 0.0005  # the floor never raises a smaller lr


# ---------------------------------------------------------------- exact federated references
def test_federated_stratified_coxph_equals_lifelines():
    x, t, e = _data(500, 4, seed=2)  # ties in time: Efron matters
    c = np.random.default_rng(0).integers(0, 4, 500)
    ledger = Ledger()
    beta, se, path = fit_federated_coxph(
        [(x[c == k], t[c == k], e[c == k]) for k in range(4)], ledger
    )
    df = pd.DataFrame(x, columns=list("abcd")).assign(T=t, E=e, centre=c)
    cph = CoxPHFitter().fit(df, "T", "E", strata=["centre"], fit_options={"precision": 1e-12})
    np.testing.assert_allclose(beta, cph.params_.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(se, cph.standard_errors_.to_numpy(), atol=1e-6)
    assert path[-1] == pytest.approx(cph.log_likelihood_, abs=1e-8)
    assert set(ledger.table()["kind"]) == {"coxph_sums_request", "coxph_sums"}
    assert set(ledger.table()["protocol"]) == {"survival_coxph_request", "survival_coxph_sums"}


def test_federated_coxph_small_stratum_abstains():
    """A stratum of two patients would disclose x_event − x_other: the centre abstains, the
    others' strata give lifelines' fit on their data."""
    x, t, e = _data(302, seed=3)
    c = np.r_[np.zeros(2, int), np.arange(300) % 3 + 1]
    e[:2] = [1, 0]
    ledger = Ledger()
    beta, _, _ = fit_federated_coxph([(x[c == k], t[c == k], e[c == k]) for k in range(4)], ledger)
    assert set(ledger.abstentions()["center"]) == {"centre0"}
    df = pd.DataFrame(x, columns=list("abcd")).assign(T=t, E=e, centre=c)[c > 0]
    cph = CoxPHFitter().fit(df, "T", "E", strata=["centre"], fit_options={"precision": 1e-12})
    np.testing.assert_allclose(beta, cph.params_.to_numpy(), atol=1e-6)


OPEN = DisclosurePolicy(nfilter_tab=1, nfilter_subset=1)


def test_merge_cells():
    assert merge_cells(np.array([1, 0, 2, 1, 0, 3, 1]), 1).tolist() == [1, 0, 2, 1, 0, 3, 1]
    out = merge_cells(np.array([1, 0, 2, 1, 0, 3, 1]), 3)
    assert out.sum() == 8 and set(out[out > 0]) <= set(range(3, 9))
    assert out.tolist() == [0, 0, 3, 0, 0, 5, 0]  # pools {0,2,2} -> cell 2; {3,5,5,5,6} -> 5
    assert merge_cells(np.array([1, 1, 0]), 3) is None


def test_federated_km_and_logrank_equal_lifelines():
    """On a grid at every distinct time with a floor of 1, the grid protocol is the exact
    pooled KM and log-rank (lifelines); the default floor keeps every cell 0 or ≥ 3."""
    x, t, e = _data(400, seed=4)
    c = np.arange(400) % 3
    grp = np.where(x[:, 0] > 0.3, "high", "low")
    exact = np.unique(t)
    cents = [(t[c == k], e[c == k], grp[c == k]) for k in range(3)]
    km, (chi2, p, df) = federated_km(cents, exact, ["high", "low"], policies=[OPEN] * 3)
    for g in ("high", "low"):
        ref = KaplanMeierFitter().fit(t[grp == g], e[grp == g]).survival_function_.iloc[:, 0]
        mine = km[km.group == g].set_index("time")["survival"]
        np.testing.assert_allclose(mine.loc[ref.index[1:]], ref.iloc[1:], rtol=0, atol=1e-12)
    lt = logrank_test(t[grp == "high"], t[grp == "low"], e[grp == "high"], e[grp == "low"])
    assert chi2 == pytest.approx(lt.test_statistic, rel=1e-10)
    assert p == pytest.approx(lt.p_value, rel=1e-8) and df == 1
    g3 = np.array(["a", "b", "c"])[np.random.default_rng(1).integers(0, 3, 400)]
    _, (chi3, p3, df3) = federated_km(
        [(t[c == k], e[c == k], g3[c == k]) for k in range(3)], exact, ["a", "b", "c"],
        policies=[OPEN] * 3,
    )  # fmt: skip
    mv = multivariate_logrank_test(t, g3, e)
    assert chi3 == pytest.approx(mv.test_statistic, rel=1e-10) and df3 == 2
    assert distance_to_exact(km, exact, t, e, grp) == 0.0
    # the default policy on the public grid: every released cell 0 or >= 3, the curve close
    edges = grid_edges({"step": 0.25, "max": 10})
    led = Ledger()
    km3, (chi, _, _) = federated_km(cents, edges, ["high", "low"], led)
    for m in led.messages().query("kind == 'km_counts'").itertuples():
        assert m.protocol == "survival_km_counts"
    assert distance_to_exact(km3, edges, t, e, grp, min_at_risk=20) < 0.05
    assert chi == pytest.approx(lt.test_statistic, rel=0.1)
    # a request on another grid is refused (two grids would difference each other's cells)
    from fedclust.federation import LedgerClientProxy
    from fedclust.survival.km import KM_COUNTS, KM_REQUEST, KMCentre

    led = Ledger()
    px = LedgerClientProxy("centre0", KMCentre("centre0", *cents[0], edges), led)
    req = {"parameters": edges + 0.1, "labels": ["high", "low"]}
    assert px.call("km_counts", req, 1, "km_counts", KM_COUNTS, KM_REQUEST) is None
    assert "grid" in led.abstentions()["reason"].iloc[0]


# ---------------------------------------------------------------- scenarios
def test_scenarios():
    g = np.random.default_rng(0)
    t, bm = g.exponential(size=1000), g.integers(0, 20, 1000).astype(float)
    hub = partition("iid_unbalanced", 8, g, time=t, hub_fraction=0.4)
    assert np.bincount(hub)[0] == 400 and len(np.unique(hub)) == 8
    bal = partition("iid_balanced", 8, g, time=t)
    assert set(np.bincount(bal)) == {125}
    for v, scen in ((t, "noniid_time"), (bm, "noniid_bm_blast")):
        part = partition(scen, 8, g, time=t, bm_blast=bm)
        assert set(np.bincount(part)) == {125}
        hi = [v[part == k].max() for k in range(8)]
        lo = [v[part == k].min() for k in range(8)]
        assert all(hi[k] <= lo[k + 1] for k in range(7))  # contiguous, non-overlapping bins


# ---------------------------------------------------------------- bad inputs
def test_bad_inputs_fail_clearly():
    x, t, e = _data(50)
    mc = ModelConfig()
    r = torch.as_tensor(x[:, 0])
    e0 = np.zeros(50, int)
    with pytest.raises(InputDataError, match="no event"):
        cox_loss(r, torch.as_tensor(t), torch.as_tensor(e0))
    e1 = e.copy()
    e1[:25] = 0
    with pytest.raises(InputDataError, match=r"centre\(s\) \[0\] have no event"):
        half = torch.as_tensor((np.arange(50) >= 25).astype(int))
        cox_loss(r, torch.as_tensor(t), torch.as_tensor(e1), half)
    with pytest.raises(InputDataError, match="no event among its"):
        SurvivalClient("c", x, t, e0, mc, 0)
    with pytest.raises(InputDataError, match="holds 1 patient"):
        SurvivalClient("c", x[:1], t[:1], np.ones(1), mc, 0)
    tn = t.copy()
    tn[3] = -1.0
    with pytest.raises(InputDataError, match="negative"):
        SurvivalClient("c", x, tn, e, mc, 0)
    tn[3] = np.nan
    with pytest.raises(InputDataError, match="missing"):
        fit_federated_coxph([(x, tn, e)])
    xc = pd.DataFrame(x).assign(const=1.0)
    with pytest.raises(InputDataError, match="constant in the training part"):
        fit_preprocess(xc, where="train")
    with pytest.raises(ConfigError, match="unknown scenario"):
        partition("noniid_age", 8, np.random.default_rng(0), time=t)
    with pytest.raises(ConfigError, match="unknown strategy"):
        train_strategy(
            "fedprox", [SurvivalClient("c", x, t, e, mc, 0)], None, None, mc, Ledger(), None
        )


# ---------------------------------------------------------------- one job end to end
def test_run_job_on_simulated_cohort():
    x, obs = simulate_cohort(seed=1, n=400, min_carriers=10)
    xs, t, e, drop = select_endpoint(x, obs, "OS", "sim")
    assert drop == 0 and 0.15 < e.mean() < 0.6
    cfg = {
        "test_fraction": 0.25, "n_centres": 4, "hub_fraction": 0.4, "isolated_folds": 2,
        "model": {"hidden": [8, 4], "activation": "relu", "l1": 1e-3, "l2": 1e-3,
                  "optimizer": "adam", "lr_floor": 1e-3},
        "grid": {"federated_epochs": [6], "internal_epochs": [2], "batches": [1],
                 "lr": [0.01, 0.05]},
    }  # fmt: skip
    res, cv, pred = run_job(x, obs, "OS", "noniid_bm_blast", "weights_averaging", 0, cfg, 5)
    assert res["n_train"] + res["n_test"] == 400 and len(pred) == res["n_test"]
    assert len(cv) == 2 and cv["cv_c_index"].between(0, 1).all()
    assert 0.55 < res["test_c_index"] <= 1.0  # BM_BLAST and friends carry signal
    assert res["messages_cv"] > 0
    res2, _, _ = run_job(x, obs, "OS", "noniid_bm_blast", "weights_averaging", 0, cfg, 5)
    assert res2["test_c_index"] == res["test_c_index"]  # deterministic
    with pytest.raises(ConfigError, match="unknown scenario"):
        run_job(x, obs, "OS", "bogus", "sequential", 0, cfg, 5)
    with pytest.raises(ConfigError, match="unknown strategy"):
        run_job(x, obs, "OS", "iid_balanced", "bogus", 0, cfg, 5)


# ---------------------------------------------------------------- workflow helpers and config
def test_workflow_jobs_and_source(repo, monkeypatch, tmp_path):
    from fedclust.config import load_yaml, validate_config
    from fedclust.survival import workflow as SW

    cfg = validate_config(load_yaml(repo / "config" / "config.yaml"), source="config.yaml")
    jobs = SW.jobs(cfg["survival"])
    reps = cfg["survival"]["repetitions"]
    n_central = sum(
        st in ("centralized", "centralized_steps") for st in cfg["survival"]["strategies"]
    )
    assert len(jobs) == reps * (4 * 4 + n_central)  # each centralized bound once per repetition
    assert {sc for _, sc, st, _ in jobs if st.startswith("centralized")} == {
        SW.CENTRALIZED_SCENARIO
    }
    monkeypatch.delenv("FEDCLUST_DATA_MIRROR", raising=False)
    assert SW.source(cfg) == "simulated" and SW.cohort_inputs(cfg) == {}
    monkeypatch.setenv("FEDCLUST_DATA_MIRROR", str(tmp_path))  # a mirror without IPSS-M
    assert SW.source(cfg) == "simulated"
    (tmp_path / "ipssm").mkdir()
    for name in SW.IPSSM_FILES:
        (tmp_path / "ipssm" / name).write_text("ID\n")
    assert SW.source(cfg) == "ipssm" and set(SW.cohort_inputs(cfg)) == {"clinical", "mut", "cna"}
    bad = load_yaml(repo / "config" / "config.yaml")
    bad["survival"]["scenarios"] = ["iid_balanced", "noniid_age"]
    with pytest.raises(ConfigError, match="survival.scenarios"):
        validate_config(bad, source="config.yaml")


def test_ipssm_survival_cohort(mirror):
    from fedclust.survival.cohort import load_ipssm_survival

    d = mirror / "ipssm"
    clin = ["AGE", "SEX", "BM_BLAST", "HB", "PLT", "CYTO_IPSSR", "complex"]
    x, obs = load_ipssm_survival(str(d / "df_clinical.tsv"), str(d / "df_mut.tsv"),
                                 str(d / "df_cna.tsv"), clin, min_carriers=20)  # fmt: skip
    assert len(x) == 2957 and list(x.columns[:7]) == clin and "TP53" in x.columns
    xs, t, e, dropped = select_endpoint(x, obs, "OS", "ipssm")
    assert dropped == 146 and len(t) == 2811 and e.sum() == 1354
    assert set(np.unique(x["SEX"])) == {0.0, 1.0} and x["BM_BLAST"].isna().sum() == 104


def test_tables_layout_and_d62_numbers():
    from fedclust.survival import tables

    res = pd.DataFrame(
        [
            {
                "endpoint": "OS",
                "scenario": sc,
                "strategy": st,
                "rep": r,
                "test_c_index": v + 0.01 * r,
            }
            for sc in ("iid_balanced", "iid_unbalanced")
            for st, v in (("isolated", 0.6), ("weights_averaging", 0.7))
            for r in range(3)
        ]
    )
    summ = tables.summarise(res)
    tab = tables.table_8_x(summ, "OS", ["iid_balanced", "iid_unbalanced"],
                           ["isolated", "weights_averaging"], "IID centres")  # fmt: skip
    assert list(tab["IID centres"]) == ["Isolated nodes (Lower bound)", "Weights Averaging"]
    assert tab.loc[1, "Balanced sizes: Concordance (ours)"] == pytest.approx(0.71)
    assert tab.loc[1, "Balanced sizes: SD (ours)"] == pytest.approx(0.01)
    assert tab.loc[1, "Unbalanced sizes: Concordance (D6.2)"] == 0.75  # D6.2 Table 8.2
    assert tables.D62[("weights_averaging", "noniid_time")] == (0.68, 0.03)  # D6.2 Table 8.3
    central = pd.DataFrame(
        [{"endpoint": "OS", "scenario": "iid_balanced", "strategy": st, "rep": 0,
          "test_c_index": v} for st, v in (("centralized", 0.7), ("centralized_steps", 0.72))]
    )  # fmt: skip
    t81 = tables.table_8_1(tables.summarise(central), "OS", "iid_balanced",
                           ("centralized", "centralized_steps"))  # fmt: skip
    assert list(t81["Case"]) == ["Centralized case (Upper bound)",
                                 "Centralized, K × batches minibatches per epoch"]  # fmt: skip
    assert list(t81["Concordance (ours)"]) == [0.7, 0.72] and set(t81["Concordance (D6.2)"]) == {
        0.75
    }
    groups = tables.risk_groups(np.arange(9.0))
    assert list(groups) == ["low"] * 3 + ["intermediate"] * 3 + ["high"] * 3


def test_fig_8_7_centre_distributions_show_the_scenarios():
    """D6.2 Fig. 8.7: non-IID centres hold non-overlapping time / BM_BLAST ranges; the hub of
    the unbalanced scenario holds 40 %; the table's counts add up to the training part."""
    from fedclust.survival.figures import centre_distributions
    from fedclust.survival.prepare import prepare

    x, obs = simulate_cohort(seed=2, n=300, min_carriers=10)
    cfg = {"test_fraction": 0.25, "n_centres": 4, "hub_fraction": 0.4}
    parts = {sc: prepare(x, obs, "OS", sc, 0, cfg, 3) for sc in
             ("iid_balanced", "iid_unbalanced", "noniid_time", "noniid_bm_blast")}  # fmt: skip
    fig, tab = centre_distributions(parts, "OS")
    assert len(fig.axes) == 8 and len(tab) == 16
    n_train = len(parts["iid_balanced"]["t_train"])
    assert (tab.groupby("scenario")["n"].sum() == n_train).all()
    hub = tab[(tab.scenario == "iid_unbalanced") & (tab.centre == 0)]["n"].item()
    assert hub == round(0.4 * n_train)
    t = tab[tab.scenario == "noniid_time"].sort_values("centre")
    assert (t["time_max"].to_numpy()[:-1] <= t["time_min"].to_numpy()[1:]).all()
    b = tab[tab.scenario == "noniid_bm_blast"].sort_values("centre")
    assert (b["bm_blast_max"].to_numpy()[:-1] <= b["bm_blast_min"].to_numpy()[1:]).all()
    i = tab[tab.scenario == "iid_balanced"]
    assert (i["time_max"].to_numpy()[:-1] > i["time_min"].to_numpy()[1:]).all()  # overlapping


def test_training_length_table_and_sentence():
    """Issue 28 item 7: the fixed-length measurement's table (mean, SD per length, D6.2 beside)
    and the report's sentence (the run's grid length; shortest → longest per strategy)."""
    from fedclust.survival import tables

    rows = [
        {"source": "ipssm", "endpoint": "OS", "rep": r, "scenario": sc, "strategy": st,
         "fe": fe, "ie": ie, "batches": 1, "lr": 0.01, "test_c_index": v - 0.001 * r}
        for r in range(2)
        for (fe, ie), drop in (((6, 3), 0.0), ((50, 10), 0.07))
        for st, sc, v in (("isolated", "iid_balanced", 0.71 - drop),
                          ("isolated", "noniid_time", 0.65 - drop),
                          ("ensemble", "noniid_time", 0.71 - drop),
                          ("weights_averaging", "iid_balanced", 0.73),
                          ("weights_averaging", "noniid_time", 0.72))
    ]  # fmt: skip
    points = pd.DataFrame(rows)
    tab = tables.training_length(points)
    iso = tab[(tab.strategy == "Isolated nodes (Lower bound)") & (tab.scenario == "Balanced sizes")]
    assert iso["6 × 3 epochs"].item() == pytest.approx(0.7095)
    assert iso["50 × 10 epochs"].item() == pytest.approx(0.6395) and iso["D6.2"].item() == 0.62
    assert iso["6 × 3: SD"].item() == pytest.approx(np.std([0.71, 0.709], ddof=1))
    assert tab.columns[-1] == "D6.2" and set(tab["50 × 10: reps"]) == {2}
    grid = {"federated_epochs": [6], "internal_epochs": [3], "batches": [1], "lr": [0.01]}
    text = tables.training_length_sentence(points, grid)
    assert "at most 18 epochs" in text and "6 × 3 → 50 × 10" in text
    assert "Isolated nodes / Balanced sizes 0.710 → 0.639 (D6.2 0.62)" in text
    assert tables.training_length_sentence(pd.DataFrame(), grid).endswith("its grid.")
