"""PVI in the privacy–utility stage (issue 24): ε = ∞ is the bayes stage's own federated unit
exactly, a private centre without noise or clipping changes nothing, the noise is added at the
centre with the calibrated scale (the message the server receives minus the centre's clipped
Δη), the run's ε is dp-accounting's RDP value, and ε = 1 is worse than no noise."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import yaml
from dp_accounting.rdp import RdpAccountant

from fedclust.bayes import centre as BC
from fedclust.bayes import protocols as BPR
from fedclust.bayes.experiment import run_federated_unit
from fedclust.federation import Ledger, federate
from fedclust.federation.dp import ORDERS
from fedclust.privacy_utility import bayes as PB
from fedclust.privacy_utility import experiment as E
from fedclust.privacy_utility import workflow as W
from fedclust.seeds import derive_seed

BCFG = yaml.safe_load(open("config/config.yaml"))["bayes"]
M = {"source": "digits", "method": "virtual", "split": "iid", "rounds": 3, "epochs": 2,
     "hidden": [], "pooled_epochs": 4, "clip": 300.0, "mechanisms": ["update_noise"]}  # fmt: skip
UNIT = "virtual__iid"


def _cfg(**kw):
    return {"epsilons": [1, None], "seeds": 2, "delta": 1e-5, "bayes": {**M, **kw}}


@pytest.fixture(scope="module")
def run():
    return PB.run_bayes(BCFG, _cfg(), 3)


def test_infinite_epsilon_is_the_bayes_stages_unit_exactly(run):
    curve, budget = run
    got = curve[(curve["arm"] == "federated") & np.isinf(curve["epsilon"])].sort_values("seed")
    bc = PB._bayes_cfg(BCFG, M)
    for sd, value in zip(got["seed"], got["value"], strict=True):
        s_seed = derive_seed(3, "pu", "bayes", sd)
        _, _, res = run_federated_unit(bc, PB.load_data(BCFG, M, s_seed), UNIT, s_seed)
        assert value == res["server_accuracy"]  # bit for bit
    assert not np.isinf(budget["epsilon"]).any()  # no budget row without noise


def test_a_private_centre_without_noise_or_clipping_is_the_plain_unit():
    bc = PB._bayes_cfg(BCFG, M)
    data = PB.load_data(BCFG, M, 5)
    plain, _, _ = run_federated_unit(bc, data, UNIT, 5)
    made = []

    def wrap(c):
        made.append(PB.PrivatePVICentre(c, 1e12, 0.0, 0))
        return made[-1]

    priv, _, _ = run_federated_unit(bc, data, UNIT, 5, wrap=wrap)
    np.testing.assert_array_equal(priv["server_accuracy"], plain["server_accuracy"])
    assert sum(c.releases for c in made) == M["rounds"] * 2  # VIRTUAL: 2 centres per round


def test_noise_is_added_at_the_centre_with_the_calibrated_scale():
    g = np.random.default_rng(0)
    x = g.standard_normal((40, 4))
    y = x @ np.ones(4) + 0.1 * g.standard_normal(40)
    z_mult, bound = 0.8, 5.0
    c = PB.PrivatePVICentre(BC.ConjugateCentre("c00", 0, x, y, 0.01), bound, z_mult, 11)
    prior = [np.zeros(4), -0.5 * np.eye(4)]
    diffs = []

    def server(ps):
        p = ps[0]
        for k in range(1, 301):
            out = p.fit(prior, {"damping": 0.5}, k, "pvi", BPR.pvi_delta(3))
            got = np.concatenate([np.ravel(a) for a in out[0]])  # as the server got it
            assert np.linalg.norm(c.clean) <= bound + 1e-9
            diffs.append(got - c.clean)

    ledger = Ledger()
    federate([c], server, ledger=ledger)
    assert "bayes_pvi_delta" in set(ledger.messages()["protocol"])
    d = np.concatenate(diffs)  # 300 releases × 20 numbers
    sigma = z_mult * 2 * bound  # Δ₂ = 2C
    assert abs(d.mean()) < 4 * sigma / math.sqrt(d.size)
    assert abs(d.std() / sigma - 1) < 0.05  # 6000 draws: sd of the ratio ≈ 0.009
    assert c.releases == 300


def test_the_centre_keeps_the_factor_the_server_holds():
    g = np.random.default_rng(1)
    x = g.standard_normal((30, 3))
    y = x.sum(1)
    inner = BC.ConjugateCentre("c00", 0, x, y, 0.5)
    c = PB.PrivatePVICentre(inner, 2.0, 0.3, 4)
    eta_q = [np.zeros(3), -0.5 * np.eye(3)]
    released = [np.zeros(3), np.zeros((3, 3))]
    for _ in range(3):
        out, _, _ = c.fit(eta_q, {"damping": 1.0})
        released = [a + b for a, b in zip(released, out, strict=True)]
        eta_q = [a + b for a, b in zip(eta_q, out, strict=True)]
    for f, r in zip(inner.factor, released, strict=True):
        np.testing.assert_allclose(f, r, rtol=0, atol=1e-12)


def test_the_runs_epsilon_is_dp_accountings_rdp_value(run):
    _, budget = run
    finite = budget[budget["releases"] > 0]
    assert len(finite) and (finite["releases"] <= M["rounds"]).all()
    assert (budget[budget["releases"] == 0]["epsilon_spent"] == 0).all()
    for z, n, spent in zip(finite["noise_multiplier"], finite["releases"],
                           finite["epsilon_spent"], strict=True):  # fmt: skip
        acc = RdpAccountant(list(ORDERS))
        acc.compose(dp_accounting.GaussianDpEvent(z), int(n))
        assert abs(spent - acc.get_epsilon(1e-5)) < 1e-6
    full = finite[finite["releases"] == M["rounds"]]
    assert len(full) and (abs(full["epsilon_spent"] - 1.0) < 1e-3).all()  # calibrated: ε = 1


def test_epsilon_one_is_worse_than_no_noise_and_the_baselines(run):
    curve, _ = run
    mean = curve.groupby(["arm", "epsilon"])["value"].mean()
    assert mean[("federated", math.inf)] > 0.8  # digits, Bayesian logistic regression
    assert mean[("federated", 1.0)] < mean[("federated", math.inf)] - 0.3
    assert mean[("pooled", math.inf)] > mean[("isolated", math.inf)] > 0.5
    assert E.HEADLINE_METRICS["bayes"] == ("test_accuracy", True)
    assert "bayes" in E.METHODS and "bayes" in W.METHODS and W.inputs("bayes", {}) == {}


def test_a_method_that_is_not_pvi_is_a_config_error():
    from fedclust.errors import ConfigError

    with pytest.raises(ConfigError, match="not a PVI method"):
        PB._bayes_cfg(BCFG, {**M, "method": "fedavg"})


def test_a_local_fit_that_diverges_releases_zero_plus_noise():
    from fedclust.errors import ConfigError

    class Diverging:
        cid, index, n_samples, n_train, cavity_clipped = "c09", 9, 20, 20, 0
        factor = [np.zeros(3), np.zeros(3)]

        def fit(self, parameters, config):
            raise ConfigError("training diverged (minibatch loss inf in epoch 1)", where="t")

    c = PB.PrivatePVICentre(Diverging(), 1.0, 0.5, 2)
    out, n, metrics = c.fit([np.ones(3), -np.ones(3)], {})
    assert c.diverged == 1 and n == 20 and metrics == {"client": 9}
    assert np.linalg.norm(c.clean) == 0 and np.abs(np.concatenate(out)).sum() > 0
    np.testing.assert_array_equal(np.concatenate(c.centre.factor), np.concatenate(out))

    class Broken(Diverging):
        def fit(self, parameters, config):
            raise ConfigError("something else", where="t")

    with pytest.raises(ConfigError, match="something else"):
        PB.PrivatePVICentre(Broken(), 1.0, 0.5, 2).fit([np.ones(3), -np.ones(3)], {})
