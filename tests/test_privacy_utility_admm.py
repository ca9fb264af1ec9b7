"""Consensus ADMM in the privacy–utility stage (issue 24): ε = ∞ is the ADMM stage's own run
exactly, the noise is added at the centre with the calibrated scale (the message the server
receives minus the centre's clipped iterate), the run's ε is dp-accounting's RDP value, and
ε = 1 is worse than no noise."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import yaml
from dp_accounting.rdp import RdpAccountant

from fedclust.admm import protocols as AP
from fedclust.admm.admm import admm_federated, centres_from_rows
from fedclust.admm.protocols import LOCAL_REQUEST, PRIVATE_UPDATE
from fedclust.federation import Ledger, PrivacySettings, federate
from fedclust.federation import privacy as PV
from fedclust.federation.dp import ORDERS
from fedclust.privacy_utility import admm as PA
from fedclust.privacy_utility import experiment as E

CLEAR = PrivacySettings(secure_aggregation=False)  # the tests read the plain messages
ACFG = yaml.safe_load(open("config/config.yaml"))["admm"]
M = {"problem": "ridge", "dataset": "diabetes", "lam": 0.1, "rho": 1.0, "n_blocks": 4,
     "iterations": 8, "bound": 0.6, "attack": False}  # fmt: skip


def _cfg(**kw):
    return {"epsilons": [1, None], "seeds": 2, "delta": 1e-5, "secure_aggregation": True,
            "admm": {**M, **kw}}  # fmt: skip


@pytest.fixture(scope="module")
def run():
    return PA.run_admm(ACFG, _cfg(), 3)


def _blocks(seed=0):
    from fedclust.admm.pipeline import load_task

    s = PA._settings(ACFG, M)
    task = {"problem": "ridge", "dataset": "diabetes", "n_blocks": 4}
    return s, load_task(ACFG, task, seed, "t")


def test_infinite_epsilon_is_the_admm_stages_run_exactly(run):
    from fedclust.admm import data as AD
    from fedclust.admm import problems as AP
    from fedclust.admm.reference import reference_solution
    from fedclust.seeds import derive_seed

    curve, budget = run
    got = curve[(curve["arm"] == "federated") & np.isinf(curve["epsilon"])].sort_values("seed")
    for sd, value in zip(got["seed"], got["value"], strict=True):
        s, data = _blocks(derive_seed(3, "pu", "admm", sd))
        res = admm_federated(centres_from_rows(data.X, data.y, data.centers, data.names, s), s)
        A, b = AD.pooled_blocks(data.X, data.y, "ridge", True)
        f = [AP.objective("ridge", A, b, x, 0.1) for x in (res.z, reference_solution(
            "ridge", A, b, 0.1))]  # fmt: skip
        assert value == (f[0] - f[1]) / abs(f[1])  # bit for bit
    assert (budget[np.isinf(budget["epsilon"])]["noise_multiplier"] == 0).all()


def test_a_private_centre_without_noise_or_clipping_is_the_plain_iteration():
    s, data = _blocks()
    plain = admm_federated(centres_from_rows(data.X, data.y, data.centers, data.names, s), s)
    cs = [PA.PrivateAdmmCentre(c, 1e9, 0.0, 0, privacy=CLEAR)
          for c in centres_from_rows(data.X, data.y, data.centers, data.names, s)]  # fmt: skip
    with PV.using(CLEAR):
        priv = admm_federated(cs, s, private=True)
    np.testing.assert_allclose(priv.z, plain.z, rtol=0, atol=1e-12)
    assert priv.iterations == s.max_iter and priv.history["objective"].isna().all()


def test_noise_is_added_at_the_centre_with_the_calibrated_scale():
    s, data = _blocks()
    z_mult, bound = 0.7, 0.6
    c = PA.PrivateAdmmCentre(
        centres_from_rows(data.X, data.y, data.centers, data.names, s)[0],
        bound,
        z_mult,
        11,
        privacy=CLEAR,
    )
    diffs = []

    def server(ps):
        p = ps[0]
        mean, sd = c.X.mean(0), c.X.std(0)  # any public design will do here
        p.call("design", {"mean": mean, "sd": sd, "y_mean": 0.0, "y_sd": 1.0, "n_total": 400},
               0, "design", AP.DESIGN_ACK, AP.DESIGN)  # fmt: skip
        for k in range(1, 301):
            msg = p.call("private_update", {}, k, "private_update", PRIVATE_UPDATE, LOCAL_REQUEST)
            diffs.append(np.asarray(msg["v"]) - c.clean)  # the message as the server got it
            assert np.linalg.norm(c.clean) <= bound + 1e-12
            p.call("consensus", {"z": np.zeros(len(mean) + 1)}, k, "objective",
                   AP.CONSENSUS_ACK, AP.CONSENSUS)  # fmt: skip

    ledger = Ledger()
    with PV.using(CLEAR):
        federate([c], server, ledger=ledger)
    assert "admm_private_update" in set(ledger.messages()["protocol"])
    d = np.concatenate(diffs)
    sigma = z_mult * 2 * bound  # Δ₂ = 2C
    assert abs(d.mean()) < 4 * sigma / math.sqrt(d.size)
    assert abs(d.std() / sigma - 1) < 0.05  # 3300 draws: sd of the ratio ≈ 0.012


def test_the_runs_epsilon_is_dp_accountings_rdp_value(run):
    _, budget = run
    finite = budget[np.isfinite(budget["epsilon"])]
    assert len(finite) and (finite["releases"] == M["iterations"]).all()
    for z, spent in zip(finite["noise_multiplier"], finite["epsilon_spent"], strict=True):
        acc = RdpAccountant(list(ORDERS))
        acc.compose(dp_accounting.GaussianDpEvent(z), M["iterations"])
        assert abs(spent - acc.get_epsilon(1e-5)) < 1e-6
        assert abs(spent - 1.0) < 1e-3  # calibrated to spend ε = 1


def test_epsilon_one_is_worse_than_no_noise_and_the_baselines(run):
    curve, _ = run
    mean = curve.groupby(["arm", "epsilon"])["value"].mean()
    assert mean[("federated", 1.0)] > 10 * max(mean[("federated", math.inf)], 1e-6)
    assert mean[("federated", math.inf)] < 0.01  # 8 iterations: close to the optimum
    assert mean[("pooled", math.inf)] == 0.0 and mean[("isolated", math.inf)] > 0
    assert E.HEADLINE_METRICS["admm"] == ("objective_gap", False)
