"""Federated RNA-seq preprocessing in the privacy–utility stage (issue 24): ε = ∞ is the data
stage's own federated run exactly, a private centre without noise is the stage's centre, the
noise at the centre has the stated scale (Δ₂ = bound·√genes), the run's ε is dp-accounting's RDP
value, and ε = 1 is clearly worse than no noise."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from dp_accounting.rdp import RdpAccountant

from fedclust.data.fedpreprocess import RnaseqSettings, federated_rnaseq
from fedclust.data.fedpreprocess.protocols import from_row
from fedclust.federation.dp import ORDERS, calibrate_gaussian
from fedclust.privacy_utility import fedprep as F
from fedclust.privacy_utility.experiment import run_unit
from fedclust.seeds import derive_seed


def _simulate(samples: int, genes: int, seed: int) -> pd.DataFrame:
    """Negative-binomial counts with library-size variation and 4 subtypes (as
    tests/test_data_fedpreprocess.py)."""
    gen = np.random.default_rng(seed)
    base = gen.normal(4.0, 1.8, size=genes)
    mu = np.exp(base)[None, :] * gen.lognormal(0, 0.4, size=(samples, 1))
    lab = gen.integers(0, 4, samples)
    mu = mu * np.exp((gen.normal(0, 1.5, (4, genes)) * (gen.random((4, genes)) < 0.2))[lab])
    n = 1.0 / (0.05 + 2.0 / (np.exp(base) + 1.0))
    return pd.DataFrame(
        gen.negative_binomial(n[None, :], n[None, :] / (n[None, :] + mu)),
        index=[f"s{i}" for i in range(samples)],
        columns=[f"g{j}" for j in range(genes)],
    )


COUNTS = _simulate(300, 100, 1)
CENTRE = pd.Series(np.repeat(["a", "b", "c"], 100), index=COUNTS.index)
M = {"cohort": "SIMA", "split": "region", "genes": 100, "top_genes": 30, "k": 4,
     "min_samples": 3, "log_bound": 12.0, "rel_bound": 3.0, "inv_sf_bound": 5.0,
     "vst_bound": 3.0}  # fmt: skip
CFG = {"epsilons": [1, 8, None], "seeds": 2, "delta": 1e-5, "fedprep": M}
SEED = 5


@pytest.fixture(scope="module")
def run():
    split = pd.DataFrame({"center": CENTRE})
    return run_unit("fedprep", COUNTS, pd.DataFrame(index=COUNTS.index), split, CFG, {}, SEED)


def _settings() -> RnaseqSettings:
    return RnaseqSettings(top_genes=30, seed=derive_seed(SEED, "pu", "fedprep", "vst"))


def test_infinite_epsilon_is_the_data_stages_federated_run_exactly(run):
    from fedclust.privacy_utility.pooled import hac_labels

    curve, budget = run
    inf = curve[np.isinf(curve["epsilon"]) & (curve["arm"] == "federated")]
    assert (inf["value"] == 1.0).all() and len(inf) == 4
    # the reference is the stage's own run: its top genes and labels, recomputed here
    own = federated_rnaseq(COUNTS, CENTRE, _settings(), 3)
    iso = curve[(curve["arm"] == "isolated") & (curve["metric"] == "top_overlap")]["value"]
    assert 0 < iso.iloc[0] <= 1
    lab = hac_labels(own.vst.to_numpy(), 4, "ward")
    assert len(set(lab)) == 4
    assert (budget[np.isinf(budget["epsilon"])]["noise_multiplier"] == 0).all()


def test_a_private_centre_without_noise_is_the_stages_centre_bit_for_bit():
    s = _settings()
    plain = federated_rnaseq(COUNTS, CENTRE, s, 3)
    priv = federated_rnaseq(COUNTS, CENTRE, s, 3, make_centre=lambda *a: F.PrivateRnaseqCentre(
        *a, noise=0.0, seed=0))  # fmt: skip
    pd.testing.assert_frame_equal(priv.vst, plain.vst, check_exact=True)
    # dispersions by moments: the MLE's start points, no likelihood rounds
    mom = F.private_run(COUNTS, CENTRE, s, 3, 0.0, {}, 0)
    np.testing.assert_array_equal(mom.fit.dispersions, plain.fit.alpha_hat)
    assert mom.fit.nb_rounds == 0 and plain.fit.nb_rounds > 0


def test_noise_at_the_centre_has_the_stated_scale():
    counts = _simulate(60, 2000, 3).to_numpy()
    z, bounds = 0.8, {"log_bound": 10.0, "rel_bound": 2.0, "inv_sf_bound": 4.0}
    c = F.PrivateRnaseqCentre("a", counts, 3, noise=z, bounds=bounds, seed=1)
    g = counts.shape[1]
    got = from_row(c.logsum(None, {})["sum_log"]) - c.clean["sum_log"]
    assert np.std(got) == pytest.approx(z * 10.0 * math.sqrt(g), rel=0.05)
    assert abs(np.mean(got)) < 4 * z * 10.0  # centred: mean of 2000 draws, sd/√2000 ≈ sd/45
    logmeans = np.log(np.maximum(counts, 1)).mean(0)
    msg = c.normed_moments(logmeans, {})
    t1 = (from_row(msg["mean"]) / c._ref - 1) * c.n_samples - c.clean["t1"]
    assert np.std(t1) == pytest.approx(z * 2.0 * math.sqrt(g), rel=0.05)
    clean = c.clean["t1"]
    assert np.all(np.abs(clean) <= 2.0 * c.n_samples)  # entries clipped to [−c, c]


def test_the_runs_epsilon_is_dp_accountings_rdp_value(run):
    _, budget = run
    finite = budget[np.isfinite(budget["epsilon"])]
    assert len(finite) and (finite["releases"] == F.RELEASES).all()
    for eps, z, spent in finite[["epsilon", "noise_multiplier", "epsilon_spent"]].itertuples(
        index=False
    ):
        assert z == calibrate_gaussian(eps, 1e-5, F.RELEASES)
        acc = RdpAccountant(list(ORDERS))
        acc.compose(dp_accounting.GaussianDpEvent(z), F.RELEASES)
        assert abs(spent - acc.get_epsilon(1e-5)) < 1e-6
        assert abs(spent - eps) < 1e-3 * eps


def test_epsilon_one_is_clearly_worse_than_no_noise(run):
    curve, _ = run
    mean = curve.groupby(["arm", "metric", "epsilon"])["value"].mean()
    assert mean[("federated", "hac_fmi", 1.0)] < 0.8 * mean[("federated", "hac_fmi", math.inf)]
    assert mean[("federated", "top_overlap", 1.0)] < 0.8
    assert mean[("federated", "hac_fmi", 1.0)] < mean[("federated", "hac_fmi", 8.0)] + 0.1
    assert mean[("pooled", "hac_fmi", math.inf)] > 0.9  # pooled pydeseq2 ≈ federated
