"""The curious server's attacks on the privatised ADMM and boosting messages (issue 24, item 3;
:mod:`fedclust.privacy_utility.attacks`). Without noise and without secure aggregation the
differencing attack gives every patient back; at ε = 1 its success stays below a stated bound
(chance, the best fixed guess, plus a Hoeffding margin at α = 10⁻³ over the independent noise
draws; (ε, δ)-DP bounds the expected success by e^ε · chance + δ); with secure aggregation the
ledger holds masked shares and the same attack reconstructs nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from fedclust.federation import PrivacySettings
from fedclust.privacy_utility import admm as PA
from fedclust.privacy_utility import attacks as AT
from fedclust.privacy_utility import boosting as PB
from fedclust.privacy_utility.records import noise_multiplier
from fedclust.seeds import derive_seed

CFG = yaml.safe_load(open("config/config.yaml"))
ACFG, BCFG = CFG["admm"], CFG["boosting"]
MA = {"problem": "ridge", "dataset": "diabetes", "lam": 0.1, "rho": 1.0, "n_blocks": 4,
      "iterations": 10, "bound": 0.6, "attack": True}  # fmt: skip
ALPHA = 1e-3


def _margin(n: int) -> float:
    """Hoeffding: a mean of n independent [0, 1] trials exceeds its expectation by more than
    this with probability ≤ α."""
    return math.sqrt(math.log(1 / ALPHA) / (2 * n))


def _admm(seed: int = 0):
    from fedclust.admm.pipeline import load_task

    s = PA._settings(ACFG, MA)
    task = {"problem": "ridge", "dataset": "diabetes", "n_blocks": 4}
    return s, load_task(ACFG, task, seed, "t")


# ---------------------------------------------------------------- ADMM
def test_admm_attack_recovers_every_patient_without_noise_or_secure_aggregation():
    s, data = _admm()
    errs = PA.attack_errors(data, s, True, MA["bound"], 0.0, 1)
    assert len(errs) == len(data.y)  # every patient of every centre is a target
    assert errs.max() < 1e-8  # exactly, to rounding


def test_admm_attack_needs_only_one_iteration():
    s, data = _admm()
    from dataclasses import replace

    errs = PA.attack_errors(data, replace(s, max_iter=1), True, MA["bound"], 0.0, 1)
    assert errs.max() < 1e-8


def test_admm_attack_at_epsilon_one_is_at_chance_level():
    """Success (relative error ≤ 0.2) over 5 seeds × 4 centres (independent noise per centre
    and run) ≤ e·κ + δ + Hoeffding margin, κ the best fixed guess's success; and the
    reconstruction is worse than guessing 0 (relative error 1)."""
    s, _ = _admm()
    z = noise_multiplier(1.0, 1e-5, MA["iterations"])
    succ, med = [], []
    for sd in range(5):
        _, data = _admm(sd)
        errs = PA.attack_errors(data, s, True, MA["bound"], z, derive_seed(9, "t", sd))
        succ.append(np.mean(errs <= PA.ATTACK_TOL))
        med.append(np.median(errs))
    from fedclust.admm import data as AD

    A, b = AD.pooled_blocks(data.X, data.y, "ridge", True)
    kappa = AT.prior_success(np.column_stack([A[:, :-1], b]), PA.ATTACK_TOL)
    assert kappa < 0.05
    assert np.mean(succ) <= math.e * kappa + 1e-5 + _margin(5 * 4)
    assert min(med) > 1.0


def test_admm_attack_under_secure_aggregation_has_only_masked_shares():
    from fedclust.admm.admm import admm_federated, centres_from_rows
    from fedclust.federation import privacy as PV
    from fedclust.privacy.recorder import RecordingLedger

    s, data = _admm()
    secure = PrivacySettings(secure_aggregation=True)
    errs = PA.attack_errors(data, s, True, MA["bound"], 0.0, 1, privacy=secure)
    assert len(errs) == len(data.y) and np.all(errs > 1.0)  # nothing reconstructed
    # what the ledger holds: uint64 shares, not the centres' releases
    cs = [PA.PrivateAdmmCentre(c, math.inf, 0.0, 1, privacy=secure)
          for c in centres_from_rows(data.X, data.y, data.centers, data.names, s)]  # fmt: skip
    led = RecordingLedger()
    with PV.using(secure):
        admm_federated(cs, s, led, private=True)
    shares = [m["v"] for r, m in led.kept if r["kind"] == "private_update" and "v" in m]
    assert len(shares) == len(cs) * s.max_iter
    assert all(np.asarray(v).dtype == np.uint64 for v in shares)
    V, _ = AT.admm_releases(led.kept, cs[0].cid)
    assert np.abs(V[-1] - cs[0].clean).min() > 1.0  # the last share decodes to noise


def test_round_zero_moments_give_the_row_at_any_epsilon():
    """Stated in the report: round 0 is not privatised; the same adversary differences a
    centre's column sums (its standardising moments) and gets the patient's row exactly."""
    from fedclust.admm.data import center_moments

    _, data = _admm()
    rows = np.column_stack([data.X, data.y])[data.centers == data.names[0]]
    diff = center_moments(rows)["sum"] - center_moments(rows[1:])["sum"]
    np.testing.assert_allclose(diff, rows[0], rtol=1e-9, atol=1e-9)


def test_prior_success_is_the_best_fixed_guess():
    W = np.array([[1.0, 0.0], [1.05, 0.0], [0.0, 1.0], [0.0, 5.0]])
    # guess row 0 hits row 1 (|Δ| 0.05 ≤ 0.2 · 1.05) only; row 1 hits row 0: 1 of 3 others
    assert AT.prior_success(W, 0.2) == pytest.approx(1 / 3)
    assert AT.prior_success(W, 0.01) == 0.0


def test_run_admm_writes_attack_and_chance_rows():
    cfg = {"epsilons": [1, None], "seeds": 1, "delta": 1e-5, "secure_aggregation": True,
           "admm": MA}  # fmt: skip
    curve, _ = PA.run_admm(ACFG, cfg, 3)
    att = curve[curve["arm"] == "attack"].set_index(["metric", "epsilon"])["value"]
    assert att[("attack_success", math.inf)] == 1.0 and att[("attack_success", 1.0)] == 0.0
    assert att[("attack_record_error", math.inf)] < 1e-8
    chance = curve[curve["arm"] == "chance"]
    assert list(chance["metric"]) == ["attack_success"] and chance["value"].iloc[0] < 0.05
    off, _ = PA.run_admm(ACFG, {**cfg, "admm": {**MA, "attack": False}}, 3)
    assert set(off["arm"]) == {"federated", "pooled", "isolated"}
    fed = curve[~curve["arm"].isin(["attack", "chance"])].reset_index(drop=True)
    assert fed.equals(off)  # the attack changes no utility number


# ---------------------------------------------------------------- boosting
MB = {"n_centres": 4, "trees": 2, "max_depth": 1, "attack": True}


def _boosting(epsilons, seeds, m=MB):
    cfg = {"epsilons": epsilons, "seeds": seeds, "delta": 1e-5, "boosting": m}
    curve, _ = PB.run_boosting(BCFG, cfg, 5)
    return curve


def test_boosting_attack_recovers_bins_and_label_without_noise():
    curve = _boosting([None], 1)
    att = curve[curve["arm"] == "attack"].set_index("metric")["value"]
    assert att["attack_bin_accuracy"] == 1.0 and att["attack_label_accuracy"] == 1.0
    chance = curve[curve["arm"] == "chance"].set_index("metric")["value"]
    assert chance["attack_bin_accuracy"] < 0.2 and 0.5 <= chance["attack_label_accuracy"] < 0.7


@pytest.mark.parametrize("eps", [1, 8])
def test_boosting_attack_at_small_epsilon_is_at_chance_level(eps):
    """10 seeds × 4 centres × 30 features of bins (independent noise per bin and centre):
    accuracy ≤ chance (the most frequent bin) + Hoeffding margin; labels, one noise draw per
    centre and run (40): ≤ majority share + margin. At ε = 1 the centres' guards refuse the
    histograms (counts-are-checked: noisy counts outside [floor, size]), so the attack has the
    totals only;
    at ε = 8 the histograms arrive and the argmax over the noise is still at chance."""
    seeds = 10
    curve = _boosting([eps], seeds)
    att = curve[curve["arm"] == "attack"].groupby("metric")["value"].mean()
    chance = curve[curve["arm"] == "chance"].groupby("metric")["value"].mean()
    assert att["attack_bin_accuracy"] <= chance["attack_bin_accuracy"] + _margin(seeds * 4 * 30)
    assert att["attack_label_accuracy"] <= chance["attack_label_accuracy"] + _margin(seeds * 4)


def test_boosting_bins_take_a_bin_only_the_target_fills():
    """Which bins are non-empty is not privatised: a listed bin the others leave empty is the
    target's, whatever the noise on its count."""
    n_bins = np.array([3, 3])
    rest = np.array([[5.0, 0.0, 5.0], [5.0, 5.0, 5.0]])
    noisy = [np.array([[40.0, 1.0, 9.0], [1.0, 30.0, 2.0]])]  # feature 0: bin 1 listed
    assert list(AT.boosting_bins(noisy, rest, n_bins)) == [1, 1]
    assert list(AT.boosting_bins([], rest, n_bins)) == [0, 0]  # nothing released: the mode


def test_boosting_attack_changes_no_utility_number():
    on = _boosting([1, None], 1)
    off = _boosting([1, None], 1, {**MB, "attack": False})
    kept = on[~on["arm"].isin(["attack", "chance"])].reset_index(drop=True)
    assert kept.equals(off)


# ---------------------------------------------------------------- report
def test_figure_shows_utility_and_attack_side_by_side():
    from fedclust.privacy_utility import report as R

    cfg = {"epsilons": [1, None], "seeds": 1, "delta": 1e-5, "secure_aggregation": True,
           "admm": MA}  # fmt: skip
    curve, budget = PA.run_admm(ACFG, cfg, 3)
    fig = R.figure("admm", R.summary(curve))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [R.METRIC_NAMES[m] for m in
                      ("objective_gap", "attack_success", "attack_record_error")]  # fmt: skip
    labels = fig.axes[1].get_legend_handles_labels()[1]
    assert "attack" in labels and "chance" in labels
    thr = R.thresholds(R.summary(curve), budget, 0.05)
    assert set(thr["metric"]) == {"objective_gap"}  # the headline ignores the attack rows
    assert "Attack panels" in R.caption("admm", {**cfg, "admm": MA})
