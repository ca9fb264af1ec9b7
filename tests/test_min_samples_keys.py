"""The ledger's min_samples where it was missing: FedCRef's client messages carry their sample
counts n (local models, association statistics, status), and ``survival.min_samples``,
``admm.min_samples``, ``survival.engine`` reach the library. A center below the minimum is
rejected with DisclosureError naming it and the rule; the defaults change no number."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.admm import pipeline as PL
from fedclust.config import defaults_at
from fedclust.fedcref.algorithm import FedCRefParams, run_fedcref
from fedclust.fedcref.model import get_parameters, make_ae
from fedclust.survival.cohort import simulate_cohort
from fedclust.survival.experiment import run_job
from fedclust.survival.strategies import Federation

# ---------------------------------------------------------------- FedCRef
P = FedCRefParams(theta=1.0, hidden=(8, 4), epochs=2, batch_size=8, rounds=1, first_epochs=1,
                  later_epochs=1, max_iterations=1, patience=None)  # fmt: skip


def _fedcref_system(sizes=((12, 12), (12, 12), (3, 12))):
    """Clients holding two well-separated clusters of the given sizes (client 2's first is
    small)."""
    g = np.random.default_rng(0)
    xs, labels = [], []
    for n0, n1 in sizes:
        y = np.repeat([0, 1], [n0, n1])
        xs.append(np.clip(g.normal(0.3 + 0.4 * y[:, None], 0.1, (len(y), 10)), 0, 1))
        labels.append(y)
    return xs, labels, [2] * len(sizes)


def _run(min_samples: int):
    xs, labels, ks = _fedcref_system()
    p = FedCRefParams(**{**P.__dict__, "min_samples": min_samples})
    return run_fedcref(xs, labels, ks, p, 3, "fedcref")


def test_fedcref_messages_carry_counts_and_defaults_are_unchanged():
    res = _run(1)
    t = res.ledger.table()
    sent = t[t.kind.isin(["local_models", "association_stats", "status"])]
    assert set(sent.protocol) == {"fedcref_local_models", "fedcref_association_stats",
                                  "fedcref_status"}  # fmt: skip
    assert sent.fields.str.split(",").map(lambda f: "n" in f).all()
    # a local-models message: whole models plus one count per model, and the two live clusters
    nparams = sum(a.size for a in get_parameters(make_ae(10, P.hidden, 0)))
    lm = t[t.kind == "local_models"]
    assert (lm.floats == 2 * (nparams + 1) + 2).all()
    # status: stable, acc_prev, n
    assert (t[t.kind == "status"].floats == 3).all()
    # the smallest cluster has 3 samples: a minimum of 3 passes and changes no number
    same = _run(3)
    assert same.ledger.table().equals(t)
    for a, b in zip(res.labels, same.labels, strict=True):
        np.testing.assert_array_equal(a, b)
    assert res.history[1] == {**same.history[1], "seconds": res.history[1]["seconds"],
                              "cpu_seconds": res.history[1]["cpu_seconds"]}  # fmt: skip


def test_fedcref_cluster_below_min_samples_stays_at_its_client():
    """min_samples 4 and a 3-sample cluster at c002: the client keeps that cluster's model and
    statistics to itself (the guard would refuse the message); nothing below 4 is sent."""
    res = _run(4)
    t = res.ledger.table()
    nparams = sum(a.size for a in get_parameters(make_ae(10, P.hidden, 0)))
    lm = t[t.kind == "local_models"].set_index("sender").floats
    assert lm.to_dict() == {"c000": 2 * (nparams + 1) + 2, "c001": 2 * (nparams + 1) + 2,
                            "c002": nparams + 1 + 2}  # fmt: skip
    st = t[t.kind == "association_stats"].set_index("sender").floats
    assert st["c002"] < st["c000"]  # one own cluster's row instead of two
    assert res.ledger.n_abstentions == 0


# ---------------------------------------------------------------- survival
SURV = {
    "test_fraction": 0.25, "n_centres": 3, "hub_fraction": 0.4, "isolated_folds": 2,
    "model": {"hidden": [4], "activation": "relu", "l1": 1e-3, "l2": 1e-3,
              "optimizer": "adam", "lr_floor": 1e-3},
    "grid": {"federated_epochs": [2], "internal_epochs": [1], "batches": [1], "lr": [0.05]},
}  # fmt: skip


@pytest.fixture(scope="module")
def cohort():
    return simulate_cohort(seed=1, n=160, min_carriers=5)


def _job(cohort, strategy, **keys):
    x, obs = cohort
    return run_job(x, obs, "OS", "iid_unbalanced", strategy, 0, {**SURV, **keys}, 5)


def test_config_keys_validate_with_todays_values(repo):
    from fedclust.config import load_yaml, validate_config

    for name in ("config.yaml", "thesis.yaml"):
        c = validate_config(load_yaml(repo / "config" / name), repo / "config/schema.yaml")
        assert Federation.from_config(c["survival"]) == Federation(2)
        assert c["admm"]["min_samples"] == 1
        assert FedCRefParams.from_config(c["fedcref"], 0.2).min_samples == 1
    assert Federation.from_config({}) == Federation()  # a config without the keys: as before


def test_survival_min_samples_above_a_centre_makes_it_abstain(cohort):
    base = _job(cohort, "ensemble")[0]
    assert base == {**_job(cohort, "ensemble", min_samples=2)[0], "wall_s": base["wall_s"]}
    sizes = base["centre_sizes"]
    m = min(sizes) + 1
    small = sum(n < m for n in sizes)
    # refused at the centre, before the ledger (issue 22): the centre's floor is max(m, policy);
    # it abstains (was: the whole job raised DisclosureError) and Ensemble goes on without it
    res = _job(cohort, "ensemble", min_samples=m)[0]
    assert 0 < small < len(sizes)
    assert res["messages_final"] == base["messages_final"] - small
    assert np.isfinite(res["test_c_index"]) and res["test_c_index"] != base["test_c_index"]
    # the round loop's fit protocol: every centre refuses its update at the centre
    with pytest.raises(RuntimeError, match="every center abstained"):
        _job(cohort, "weights_averaging", min_samples=max(sizes) + 1)


def test_survival_engine_flower_equals_inprocess(cohort):
    pytest.importorskip("flwr")
    from fedclust.transports import get

    x, obs = cohort
    a = run_job(x, obs, "OS", "iid_unbalanced", "weights_averaging", 0, SURV, 5)[0]
    b = run_job(x, obs, "OS", "iid_unbalanced", "weights_averaging", 0, SURV, 5,
                get("flower-simulation"))[0]  # fmt: skip
    drop = ("wall_s",)
    assert {k: v for k, v in a.items() if k not in drop} == {
        k: v for k, v in b.items() if k not in drop
    }


# ---------------------------------------------------------------- ADMM
def _admm_data(sizes=(40, 5, 30)):
    g = np.random.default_rng(2)
    n = sum(sizes)
    X = g.normal(size=(n, 3))
    y = X @ np.array([1.0, -0.5, 0.2]) + 0.1 * g.normal(size=n)
    names = [f"c{i}" for i in range(len(sizes))]
    centers = np.repeat(names, sizes)
    return PL.TaskData(X, y, centers, names, "test")


def test_admm_min_samples_key():
    cfg = defaults_at({"rho": 1.0, "max_iter": 30, "eps_abs": None, "eps_rel": 1e-5}, ["admm"])
    task = defaults_at({"problem": "ridge", "dataset": "diabetes", "lam": 0.1},
                       ["admm", "tasks", "*"])  # fmt: skip
    data = _admm_data()
    a = PL.run_job(cfg, task, "distributed", data)
    b = PL.run_job({**cfg, "min_samples": 5}, task, "distributed", data)
    np.testing.assert_array_equal(a[0].z, b[0].z)
    pd.testing.assert_frame_equal(a[0].ledger.table(), b[0].ledger.table())
    # c1's 5 rows are below the model's floor (4 parameters / nfilter_glm = 13 rows, issue 22):
    # it abstains from the start; admm.min_samples can only raise the floor
    assert list(a[0].ledger.abstentions()["center"]) == ["c1"]
    c = PL.run_job({**cfg, "min_samples": 35}, task, "distributed", data)
    assert list(c[0].ledger.abstentions()["center"]) == ["c1", "c2"]
