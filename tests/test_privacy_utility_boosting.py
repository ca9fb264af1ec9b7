"""Federated boosting in the privacy–utility stage (issue 24): ε = ∞ is the boosting stage's
histogram protocol exactly (= XGBoost on the pooled binned rows), the noise is added at the
centre with the stated sensitivities (a private centre's message minus a twin plain centre's),
the run's ε is dp-accounting's RDP value over trees × (2 + 6·depth) releases, and ε = 1 is
worse than no noise."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import yaml
from dp_accounting.rdp import RdpAccountant

from fedclust.boosting import data as BD
from fedclust.boosting import grid as GR
from fedclust.boosting import server as BS
from fedclust.boosting.centre import Centre, without_floor
from fedclust.boosting.experiment import params_of, scores
from fedclust.boosting.protocols import protocols
from fedclust.federation import Ledger, federate
from fedclust.federation.disclosure import configured_policy
from fedclust.federation.dp import ORDERS
from fedclust.privacy_utility import boosting as PB
from fedclust.privacy_utility import experiment as E
from fedclust.seeds import derive_seed

BCFG = yaml.safe_load(open("config/config.yaml"))["boosting"]
M = {"n_centres": 4, "trees": 3, "max_depth": 2, "attack": False}
CFG = {"epsilons": [1, None], "seeds": 2, "delta": 1e-5, "boosting": M}


@pytest.fixture(scope="module")
def run():
    return PB.run_boosting(BCFG, CFG, 5)


def test_infinite_epsilon_is_the_histogram_protocol_and_pooled_xgboost(run):
    curve, budget = run
    params = params_of({"params": {**BCFG["params"], "max_depth": 2}})
    ds = BD.load_breast_cancer()
    for sd in range(2):
        centre = BD.centres(ds, "iid", {"kind": "equal", "n_centres": 4},
                            derive_seed(5, "pu", "boosting"), sd)  # fmt: skip
        test = BD.test_rows(ds.y, centre, BCFG["test_fraction"], 5, ds.name, "pu", sd)
        Xtr, ytr, ctr = ds.X[~test], ds.y[~test], centre[~test]
        cs = [Centre(c, Xtr[ctr == c], ytr[ctr == c], params, 1,
                     without_floor(configured_policy(c))) for c in sorted(set(ctr))]  # fmt: skip
        gcfg = {"max_bin": BCFG["grid"]["max_bin"], "sketch_bins": BCFG["grid"]["sketch_bins"],
                "method": BCFG["grid"]["method"], "range_sd": BCFG["grid"]["range_sd"]}  # fmt: skip
        model = federate(cs, lambda ps, g=gcfg: BS.boost(ps, protocols(1), params, 3, grid_cfg=g),
                         ledger=Ledger())  # fmt: skip
        auc = scores(ds.y[test], model.margin(GR.encode(ds.X[test], model.grid)))[0]
        row = curve[(curve["seed"] == sd) & np.isinf(curve["epsilon"])].set_index("arm")
        assert row.loc["federated", "value"] == auc  # the stage's protocol, bit for bit
        assert abs(row.loc["pooled", "value"] - auc) < 1e-12  # = xgboost on the pooled rows
    assert (budget[np.isinf(budget["epsilon"])]["noise_multiplier"] == 0).all()


def test_noise_is_added_at_the_centre_with_the_stated_sensitivities():
    params = params_of({"params": {"max_depth": 2}})
    ds = BD.load_breast_cancer()
    X, y = ds.X[:200], ds.y[:200]
    z, d = 0.8, X.shape[1]
    got: dict[str, list] = {"plain": [], "private": []}

    def server(ps, key):
        BS.build_grid(ps, protocols(1), max_bin=16)
        P = protocols(1)
        for _ in range(40):  # the same root statistics, drawn 40 times
            tot = ps[0].call("totals", {}, 1, "totals", P.totals, P.node_request)
            req = {"feature": np.array([-1]), "cut": np.array([0]), "left": np.array([-1]),
                   "right": np.array([-1]), "nodes": np.array([0], np.int32)}  # fmt: skip
            h = ps[0].call("histograms", req, 1, "histogram", P.histogram, P.node_request)
            got[key].append((tot["g"], np.ravel(h["bin_g"][0]), np.ravel(h["bin_h"][0])))

    pol = without_floor(configured_policy("c"))
    federate([Centre("c", X, y, params, 1, pol)], lambda ps: server(ps, "plain"), ledger=Ledger())
    private = PB.PrivateBoostingCentre("c", X, y, params, 1, pol, noise=z, seed=3)
    federate([private], lambda ps: server(ps, "private"), ledger=Ledger())
    dg = np.array([p[0] - q[0] for p, q in zip(got["private"], got["plain"], strict=True)])
    hg = np.concatenate([p[1] - q[1] for p, q in zip(got["private"], got["plain"], strict=True)])
    assert abs(dg.std() / (z * PB.G_BOUND) - 1) < 0.35  # 40 draws of Σg: Δ₂ = 1
    sigma = z * math.sqrt(d) * PB.G_BOUND  # a level's histogram: Δ₂ = √d
    assert abs(hg.std() / sigma - 1) < 0.05 and abs(hg.mean()) < 4 * sigma / math.sqrt(hg.size)
    assert all((p[2] >= 0).all() for p in got["private"])  # post-processing: Σh ≥ 0


def test_the_runs_epsilon_is_dp_accountings_rdp_value(run):
    _, budget = run
    finite = budget[np.isfinite(budget["epsilon"])]
    releases = M["trees"] * (2 + 6 * M["max_depth"])
    assert len(finite) and (finite["releases"] == releases).all()
    assert PB.releases_per_tree(2) == 14
    for z, spent in zip(finite["noise_multiplier"], finite["epsilon_spent"], strict=True):
        acc = RdpAccountant(list(ORDERS))
        acc.compose(dp_accounting.GaussianDpEvent(z), releases)
        assert abs(spent - acc.get_epsilon(1e-5)) < 1e-6
        assert abs(spent - 1.0) < 1e-3


def test_epsilon_one_is_worse_than_no_noise(run):
    curve, _ = run
    mean = curve.groupby(["arm", "epsilon"])["value"].mean()
    assert mean[("federated", math.inf)] > 0.95  # breast cancer is easy
    assert mean[("federated", 1.0)] < mean[("federated", math.inf)] - 0.1
    assert E.HEADLINE_METRICS["boosting"] == ("auc", True)
