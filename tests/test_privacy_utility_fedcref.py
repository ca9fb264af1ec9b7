"""FedCRef in the privacy–utility stage (issue 24): ε = ∞ is the fedcref stage's own run
exactly, the group FedAvg under central DP adds the noise once to the group's sum with the
calibrated scale, a client's second cluster in a group sits out under privacy, the run's ε is
dp-accounting's RDP value, and ε = 1 is worse than no noise; secure aggregation over the
stage's member proxies decodes to the plain group FedAvg (with and without the noise)."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import yaml
from dp_accounting.rdp import RdpAccountant

from fedclust.data.glyphs import load_glyphs
from fedclust.fedcref.algorithm import Client, FedCRefParams, hash_seed, train_group
from fedclust.fedcref.experiments import run_setting
from fedclust.fedcref.model import get_parameters, make_ae
from fedclust.federation import Ledger, PrivacySettings
from fedclust.federation import privacy as PV
from fedclust.federation.dp import ORDERS, calibrate_gaussian
from fedclust.privacy_utility import experiment as E
from fedclust.privacy_utility import fedcref as PF
from fedclust.privacy_utility import workflow as W
from fedclust.seeds import derive_seed

FCFG = yaml.safe_load(open("config/config.yaml"))["fedcref"]
M = yaml.safe_load(open("config/config.yaml"))["privacy_utility"]["fedcref"]


def _cfg(**kw):
    return {"epsilons": [1, None], "seeds": 2, "delta": 1e-5, "secure_aggregation": True,
            "fedcref": {**M, **kw}}  # fmt: skip


@pytest.fixture(scope="module")
def run():
    return PF.run_fedcref(FCFG, _cfg(), 3)


@pytest.fixture(scope="module")
def digits():
    return load_glyphs({"source": "digits"})


def test_infinite_epsilon_is_the_fedcref_stages_run_exactly(run, digits):
    curve, budget = run
    stage, setting = PF.stage_cfg(FCFG, M), PF.setting_of(M)
    for arm, variant in (("federated", "fedcref"), ("isolated", "local_only")):
        got = curve[(curve["arm"] == arm) & np.isinf(curve["epsilon"])].sort_values("seed")
        assert len(got) == 2
        for sd, value in zip(got["seed"], got["value"], strict=True):
            s_seed = derive_seed(3, "pu", "fedcref", sd)
            _, summ, _ = run_setting(stage, setting, *digits, s_seed, M["theta"], [variant])
            assert value == summ[0]["acc_end"]  # bit for bit
    assert not np.isinf(budget["epsilon"]).any()


def _group(digits, hidden=(16,)):
    """Three clients; a group of four clusters, two of them client 0's."""
    x, y = digits
    p = FedCRefParams(hidden=tuple(hidden), rounds=1, first_epochs=1, later_epochs=1,
                      batch_size=16)  # fmt: skip
    clients = []
    for i, cls in enumerate(((0, 1), (0, 2), (1, 3))):
        idx = np.concatenate([np.flatnonzero(y == c)[20 * i : 20 * i + 15] for c in cls])
        lab = np.searchsorted(np.asarray(cls), y[idx])
        clients.append(Client(i, f"c{i:03d}", x[idx], lab, 2, p, 7))
    return clients, [(0, 0), (0, 1), (1, 0), (2, 0)], p


@pytest.mark.parametrize("secure", [False, True])
def test_the_noise_is_added_once_to_the_groups_secure_sum_with_the_calibrated_scale(digits, secure):
    clients, members, p = _group(digits)
    eps, delta, clip = 2.0, 1e-5, 1e-3  # a tiny clip: the clipped updates are ≪ the noise
    st = PrivacySettings(secure_aggregation=secure, epsilon=eps, delta=delta, clip=clip, seed=9)
    ledger = Ledger()
    with PV.using(st):
        new = train_group(clients, members, p, 7, "G0/it1", ledger, 1)
    init = get_parameters(make_ae(clients[0].x.shape[1], p.hidden, hash_seed(7, "G0/it1")))
    d = np.concatenate(
        [np.ravel(np.asarray(a, np.float64) - b) for a, b in zip(new, init, strict=True)]
    )
    k = 3  # one share per centre and round: client 0's second cluster sits out
    assert not ledger.abstention_records
    sigma = calibrate_gaussian(eps, delta, p.rounds) * clip / k  # N(0, (zC)²) on the sum / K
    assert abs(d.std() / sigma - 1) < 0.06  # ~2100 coordinates; the updates add ≤ C/√P each
    assert abs(d.mean()) < 4 * sigma / math.sqrt(d.size) + clip / math.sqrt(d.size)


def _updates(ledger) -> int:
    t = ledger.table()
    return int((t["kind"].astype(str).str.endswith("_update") & (t["round"] == 1)).sum())


def test_under_secure_aggregation_a_clients_second_cluster_in_a_group_sits_out(digits):
    clients, members, p = _group(digits)
    plain, private = Ledger(), Ledger()
    train_group(clients, members, p, 7, "G0/it1", plain, 1)
    with PV.using(PrivacySettings(secure_aggregation=True)):
        train_group(_group(digits)[0], members, p, 7, "G0/it1", private, 1)
    assert _updates(plain) == 4 and _updates(private) == 3


def test_the_runs_epsilon_is_dp_accountings_rdp_value(run):
    _, budget = run
    finite = budget[budget["releases"] > 0]
    top = M["max_iterations"] * M["rounds"]
    assert len(finite) and (finite["releases"] <= top).all()
    assert (finite["releases"] % M["rounds"] == 0).all()
    for z, n, spent in zip(finite["noise_multiplier"], finite["releases"],
                           finite["epsilon_spent"], strict=True):  # fmt: skip
        acc = RdpAccountant(list(ORDERS))
        acc.compose(dp_accounting.GaussianDpEvent(z), int(n))
        assert abs(spent - acc.get_epsilon(1e-5)) < 1e-6
    full = finite[finite["releases"] == top]
    assert len(full) and (abs(full["epsilon_spent"] - 1.0) < 2e-3).all()  # calibrated: ε = 1


def test_epsilon_one_is_worse_than_no_noise(run):
    curve, _ = run
    mean = curve.groupby(["arm", "epsilon"])["value"].mean()
    assert mean[("federated", 1.0)] < mean[("federated", math.inf)] - 0.03
    # the noised group models lose every vote: the refinement falls back to the local models
    assert mean[("federated", 1.0)] <= mean[("isolated", math.inf)] + 0.02
    assert mean[("pooled", math.inf)] > mean[("federated", math.inf)]
    assert E.HEADLINE_METRICS["fedcref"] == ("accuracy", True)
    assert "fedcref" in E.METHODS and "fedcref" in W.METHODS and W.inputs("fedcref", {}) == {}


def test_a_dataset_that_needs_a_download_is_a_config_error():
    from fedclust.errors import ConfigError

    cfg = {**FCFG, "datasets": {"emnist": {"source": "emnist_digits", "label": "x"}}}
    with pytest.raises(ConfigError, match="offline glyph dataset"):
        PF.stage_cfg(cfg, {**M, "dataset": "emnist"})


def test_secure_aggregation_of_a_group_equals_the_plain_group_fedavg(digits):
    clients, _, p = _group(digits)
    members = [(0, 0), (1, 0), (2, 0)]
    plain = train_group(clients, members, p, 7, "G0/it1", Ledger(), 1)
    with PV.using(PrivacySettings(secure_aggregation=True)):
        masked = train_group(_group(digits)[0], members, p, 7, "G0/it1", Ledger(), 1)
    for a, b in zip(plain, masked, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
