"""The seed-001 property-inference and reconstruction attacks on privatised releases (issue 24,
item 3): at ε = ∞ each is the attacks stage's own number on the same input, at ε = 1 each is at
chance (stated bounds), the noise has the calibrated scale and the ε spent is dp-accounting's
RDP value."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pandas as pd
import pytest
import torch
from dp_accounting.rdp import RdpAccountant

from fedclust.attacks.property_inference import run_property_inference
from fedclust.attacks.reconstruction import run_reconstruction
from fedclust.federation.dp import ORDERS
from fedclust.privacy_utility import experiment as E
from fedclust.privacy_utility import inference as INF
from fedclust.privacy_utility import workflow as W
from fedclust.privacy_utility.records import noise_multiplier


def planted(n: int = 200, d: int = 40, seed: int = 0, shift: float = 2.0):
    """NB counts with a strong planted sex signal (first 4 genes ×e^shift in males)."""
    g = np.random.default_rng(seed)
    sex = g.choice(["female", "male"], size=n, p=[0.6, 0.4])
    base = g.uniform(3, 7, size=d)
    lfc = np.zeros((n, d))
    lfc[sex == "male", :4] = shift
    mu = np.exp(base[None, :] + lfc) * g.lognormal(0, 0.3, size=n)[:, None]
    counts = g.negative_binomial(10, 10 / (10 + mu)) + 1
    idx = [f"s{i}" for i in range(n)]
    return (
        pd.DataFrame(counts, index=idx, columns=[f"g{j}" for j in range(d)]),
        pd.DataFrame({"sex": sex, "cohort": "SIMA"}, index=idx),
    )


PI = {"cohort": "X", "preprocessing": "vst", "genes": "all", "max_genes": None,
      "projection": "gaussian", "k": 10, "bound": 30.0, "d_nn": 16, "lrs": [1e-2],
      "epochs": 15, "batch_size": 32}  # fmt: skip
RC = {"cohort": "X", "preprocessing": "vst", "max_genes": None, "k": 50, "bound": 30.0,
      "lr": 1e-3, "optimizer": "adam", "epochs": 3, "batch_size": 64,
      "sigma_factors": [1.0]}  # fmt: skip
CFG = {"epsilons": [1, None], "seeds": 2, "delta": 1e-5, "property_inference": PI,
       "reconstruction": RC}  # fmt: skip


@pytest.fixture(scope="module")
def data():
    torch.set_num_threads(1)
    return planted()


@pytest.fixture(scope="module")
def pi_run(data):
    return E.run_unit("property_inference", *data, None, CFG, {}, 0)


@pytest.fixture(scope="module")
def rc_run(data):
    return E.run_unit("reconstruction", *data, None, CFG, {}, 0)


def test_property_inference_at_infinity_is_the_attacks_stage(data, pi_run):
    curve, _ = pi_run
    ref = run_property_inference(
        *data,
        conditions=[{"kind": "gaussian", "k": 10}],
        n_runs=2,
        spec=INF.train_spec(PI),
        seed=0,
        preprocessing="vst",
        genes="all",
    )
    got = curve[(curve.arm == "attack") & np.isinf(curve.epsilon)]
    for cls, metric in (("fixed", "pi_accuracy"), ("invariant", "pi_accuracy_invariant")):
        a = got[got.metric == metric].sort_values("seed")["value"].to_numpy()
        b = ref[ref.classifier == cls].sort_values("run")["test_accuracy"].to_numpy()
        assert len(a) == 2 and np.array_equal(a, b)
    assert got[got.metric == "pi_accuracy"]["value"].min() > 0.8  # the planted signal is found


def test_property_inference_at_epsilon_one_is_at_chance(pi_run):
    curve, _ = pi_run
    m = curve.groupby(["arm", "metric", "epsilon"])["value"].mean()
    chance = m[("chance", "pi_accuracy", math.inf)]
    assert 0.5 <= chance < 0.75
    for metric in ("pi_accuracy", "pi_accuracy_invariant"):
        # 2 runs × 40 test rows: a coin at chance stays within ±0.2 of the majority share
        # (the classifier may flip to the minority class: 1 − chance is as uninformed)
        assert m[("attack", metric, 1.0)] <= chance + 0.1
    # the fixed attacker (knows Q) loses what it had without noise (> 0.8, test above)
    assert m[("attack", "pi_accuracy", 1.0)] < m[("attack", "pi_accuracy", math.inf)] - 0.15


def test_reconstruction_at_infinity_is_the_attacks_stage(data, rc_run):
    curve, _ = rc_run
    cfg = {"n_runs": 2, "max_genes_no_zero": None, "max_genes_all": None, "batch_size": 64,
           "sigma_factors": [1.0], "n_projections": 0, "fig4_17_projections": [],
           "fig4_18_k": [], "fig4_18_pinv_k": [], "fig4_19_k": [50],
           "decoders": {"linear": {"lr": 1e-3, "epochs": 3, "optimizer": "adam"}},
           "combined": {"k": 50, "d_nn": 4, "lrs": [1e-3], "epochs": 1,
                        "batch_size": 32}}  # fmt: skip
    ref = run_reconstruction(*data, cfg, seed=0, pinv=False)["errors"]
    ref = ref[ref.preprocessing == "vst"].groupby("run")["rel_error"].median().to_numpy()
    got = curve[(curve.arm == "attack") & np.isinf(curve.epsilon)]
    got = got[got.metric == "recon_rel_error"].sort_values("seed")["value"].to_numpy()
    assert len(got) == 2 and np.array_equal(got, ref)


def test_reconstruction_at_epsilon_one_is_no_better_than_the_mean_row(rc_run):
    curve, _ = rc_run
    m = curve.groupby(["arm", "metric", "epsilon"])["value"].mean()
    chance = m[("chance", "recon_rel_error", math.inf)]
    # without noise the pseudo-inverse (k = 50 ≥ d = 40: exact) and the decoder beat the mean row...
    assert m[("attack", "recon_rel_error", math.inf)] < chance
    # ...at ε = 1 (noise sd ≈ 2·z·bound per entry, z ≈ 4.7) both are far worse than it
    for metric in ("recon_rel_error", "recon_pinv_rel_error"):
        assert m[("attack", metric, 1.0)] > 2 * chance


def test_noise_scale_and_the_accountants_epsilon(pi_run, rc_run):
    y = np.zeros((4000, 5))
    got = INF.privatise(y, 1.0, 1e-5, 3.0, np.random.default_rng(0))
    z = noise_multiplier(1.0, 1e-5, 1)
    assert abs(got.std() / (z * 2 * 3.0) - 1) < 0.03  # 20 000 draws: sd of the ratio ≈ 0.005
    assert np.array_equal(INF.privatise(y + 1, math.inf, 1e-5, 3.0, None), y + 1)  # no clip
    for _, budget in (pi_run, rc_run):
        assert len(budget) == 2 and (budget.releases == 1).all()
        for zz, spent in zip(budget.noise_multiplier, budget.epsilon_spent, strict=True):
            acc = RdpAccountant(list(ORDERS))
            acc.compose(dp_accounting.GaussianDpEvent(zz), 1)
            assert abs(spent - acc.get_epsilon(1e-5)) < 1e-6
            assert abs(spent - 1.0) < 1e-3


def test_wiring():
    for m in ("property_inference", "reconstruction"):
        assert m in E.METHODS and m in W.METHODS and m in E.RUNNERS and m in E.HEADLINE_METRICS
        assert W.inputs(m, {m: {"cohort": "COAD"}}) == {
            "features": "results/data/rnaseq/COAD/counts.parquet",
            "obs": "results/data/rnaseq/COAD/obs.tsv",
        }
