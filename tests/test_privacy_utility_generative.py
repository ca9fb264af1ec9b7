"""SAVAE's FedAvg arm in the privacy–utility stage (issue 24): ε = ∞ is the generative stage's
federated arm exactly, the central noise on the mean update has sd z·C/K, the run's ε is
dp-accounting's RDP value, and ε = 1 is clearly worse than no noise."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant

from fedclust.config import SCHEMA, fill_defaults, load_config_file, load_yaml
from fedclust.federation import PrivacySettings
from fedclust.federation.dp import ORDERS, calibrate_gaussian
from fedclust.privacy_utility import generative as G
from fedclust.privacy_utility.experiment import run_unit
from fedclust.seeds import derive_seed

GCFG = fill_defaults(load_config_file("config/config.yaml"), load_yaml(SCHEMA))["generative"]
M = {"n_good": 80, "n_poor": 30, "n_test": 80, "rate": 0.5, "rounds": 3, "local_epochs": 5,
     "clip": 0.01}  # fmt: skip
CFG = {"epsilons": [1, None], "seeds": 1, "delta": 1e-5, "secure_aggregation": True,
       "generative": M}  # fmt: skip
SEED = 11


@pytest.fixture(scope="module")
def run():
    return run_unit("generative", None, None, None, CFG, {"generative": GCFG}, SEED)


@pytest.fixture(scope="module")
def unit():
    g = G.savae_config(GCFG, M)
    return G.Unit(G.load_table(g, SEED), g, 0.5, derive_seed(SEED, "pu", "generative", 0))


def _params(node) -> np.ndarray:
    from fedclust.generative.nets import get_parameters

    return np.concatenate([np.ravel(a) for a in get_parameters(node.model)]).astype(np.float64)


def test_infinite_epsilon_is_the_generative_stages_federated_arm_exactly(run):
    from fedclust.generative.experiment import run_savae

    curve, budget = run
    got = curve[(curve["arm"] == "federated") & np.isinf(curve["epsilon"])
                & (curve["metric"] == "c_index")]["value"]  # fmt: skip
    g = G.savae_config(GCFG, M)
    out = run_savae(G.load_table(g, SEED), g, "mds", 0.5, derive_seed(SEED, "pu", "generative", 0))
    mt = out["metrics"]
    want = mt[(mt["arm"] == "federated") & (mt["test"] == "clean") & (mt["metric"] == "c_index")]
    assert float(got.iloc[0]) == float(want["value"].iloc[0])  # bit for bit
    rec = curve[(curve["arm"] == "federated") & np.isinf(curve["epsilon"])
                & (curve["metric"] == "recon_error")]["value"]  # fmt: skip
    w = mt[(mt["arm"] == "federated") & (mt["test"] == "clean") & (mt["metric"] == "recon_error")]
    assert float(rec.iloc[0]) == float(w["value"].iloc[0])
    pooled = mt[(mt["arm"] == "pooled") & (mt["test"] == "clean") & (mt["metric"] == "c_index")]
    cp = curve[curve["arm"] == "pooled"]["value"]
    assert float(cp.iloc[0]) == float(pooled["value"].iloc[0])
    assert budget[np.isinf(budget["epsilon"])].empty


def test_central_noise_on_the_mean_update_has_sd_z_clip_over_k(unit):
    from fedclust.generative.data import observed

    one = G.Unit.__new__(G.Unit)
    one.__dict__.update(unit.__dict__)
    one.rounds = 1  # one release: global = init + (Σ clip(Δ_k) + N(0, (zC)²)) / K
    clip, eps = 0.01, 2.0
    z = calibrate_gaussian(eps, 1e-5, 1)
    quiet = _params(one.federated(PrivacySettings(False, epsilon=1e9, clip=clip, seed=1)))
    noisy = _params(one.federated(PrivacySettings(False, epsilon=eps, clip=clip, seed=2)))
    z0 = calibrate_gaussian(1e9, 1e-5, 1)
    sd = np.std(noisy - quiet)
    assert sd == pytest.approx(math.hypot(z, z0) * clip / 2, rel=0.05)  # K = 2 centres
    assert observed is not None


def test_the_runs_epsilon_is_dp_accountings_rdp_value(run):
    _, budget = run
    finite = budget[np.isfinite(budget["epsilon"])]
    assert len(finite) == 2 and (finite["releases"] == M["rounds"]).all()  # good, poor
    for eps, z, spent in finite[["epsilon", "noise_multiplier", "epsilon_spent"]].itertuples(
        index=False
    ):
        assert z == calibrate_gaussian(eps, 1e-5, M["rounds"])
        acc = RdpAccountant(list(ORDERS))
        acc.compose(dp_accounting.GaussianDpEvent(z), M["rounds"])
        assert abs(spent - acc.get_epsilon(1e-5)) < 1e-6


def test_epsilon_one_is_clearly_worse_than_no_noise(unit):
    """The C-index of these tiny runs is too noisy to separate; the model's reconstruction
    error on the clean held-out rows (the same models; the curve's ``recon_error``) is not."""
    free = G.recon_error(unit.federated(G.NO_PRIVACY), unit.test)
    private = G.recon_error(
        unit.federated(PrivacySettings(True, epsilon=1.0, clip=0.01, seed=3)), unit.test
    )
    assert private > 1.15 * free
