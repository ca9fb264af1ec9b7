"""Issue 15: a grouped job (``survival.fanout`` / ``fedcref.fanout: repetition`` /
``admm.fanout: all``) runs several
units in one process; every unit's numbers must equal the unit run alone, whatever ran before it
and whatever the global RNG state."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import torch

from fedclust.admm import pipeline as ADMM
from fedclust.admm import workflow as ADMM_WF
from fedclust.config import load_yaml, validate_config
from fedclust.data.glyphs import synthetic_glyphs
from fedclust.fedcref import workflow as FW
from fedclust.fedcref.experiments import run_setting, run_units, settings, unit_seed
from fedclust.survival import workflow as SW
from fedclust.survival.cohort import simulate_cohort
from fedclust.survival.experiment import run_job
from fedclust.survival.experiment import run_units as surv_units

SURV_CFG = {
    "test_fraction": 0.25, "n_centres": 3, "hub_fraction": 0.4, "isolated_folds": 2,
    "model": {"hidden": [4], "activation": "relu", "l1": 1e-3, "l2": 1e-3,
              "optimizer": "adam", "lr_floor": 1e-3},
    "grid": {"federated_epochs": [2], "internal_epochs": [1], "batches": [1], "lr": [0.01, 0.05]},
}  # fmt: skip


def _scramble() -> None:
    """Move every global generator a grouped job might share between its units."""
    torch.rand(17)
    np.random.random(13)  # noqa: NPY002  (the legacy global state, on purpose)


def _same(a: tuple, b: tuple) -> None:
    ra, rb = ({k: v for k, v in r.items() if k != "wall_s"} for r in (a[0], b[0]))
    assert ra == rb
    for x, y in zip(a[1:], b[1:], strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)


def test_survival_grouped_equals_per_unit():
    x, obs = simulate_cohort(seed=1, n=240, min_carriers=10)
    units = [("noniid_bm_blast", "isolated"), ("iid_balanced", "weights_averaging")]
    alone = [run_job(x, obs, "OS", sc, st, 1, SURV_CFG, 5) for sc, st in units]
    _scramble()
    grouped = surv_units(x, obs, "OS", units, 1, SURV_CFG, 5)
    _scramble()
    reverse = surv_units(x, obs, "OS", units[::-1], 1, SURV_CFG, 5)[::-1]
    for a, g, r in zip(alone, grouped, reverse, strict=True):
        _same(a, g)
        _same(a, r)
    assert alone[0][0]["test_c_index"] != alone[1][0]["test_c_index"]  # distinct units


def test_fanout_job_lists(repo):
    cfg = validate_config(load_yaml(repo / "config" / "config.yaml"), source="config.yaml")
    surv, fcr = cfg["survival"], cfg["fedcref"]
    assert SW.fanout(surv) == "repetition" and FW.fanout(fcr) == "repetition"
    pairs = SW.unit_pairs(surv)  # every (endpoint, rep) job covers the same units
    jobs = SW.jobs(surv)
    assert sorted(jobs) == sorted(
        (e, sc, st, r)
        for e in surv["endpoints"]
        for r in range(surv["repetitions"])
        for sc, st in pairs
    )
    st, runs, _, calibrated = FW.plan(fcr)
    assert len(runs) == len(FW.unit_pairs(st)) * fcr["repetitions"]
    assert FW.group_inputs(st, calibrated)["data"] == ["results/fedcref/data/digits.npz"]
    thesis = validate_config(load_yaml(repo / "config" / "thesis.yaml"), source="thesis.yaml")
    assert SW.fanout(thesis["survival"]) == FW.fanout(thesis["fedcref"]) == "unit"


def test_fedcref_grouped_equals_per_unit(repo):
    cfg = validate_config(load_yaml(repo / "config" / "config.yaml"), source="config.yaml")
    fcr = copy.deepcopy(cfg["fedcref"])
    fcr["system"].update(n_clients=3, samples_per_class=8)
    fcr["autoencoder"].update(epochs=2, hidden=[16, 8])
    fcr["federated"].update(rounds=1)
    fcr["stopping"].update(max_iterations=1)
    fcr["association"]["theta"] = 0.5
    st = settings(fcr)
    pairs = [("exp2", "digits_d030"), ("exp4", "digits_n004")]
    x, y = synthetic_glyphs(5, 60, 3, side=8)
    alone = [run_setting(fcr, st[e][s], x, y, unit_seed(9, e, s, 1), 0.5) for e, s in pairs]
    _scramble()
    grouped = run_units(fcr, [(e, s, st[e][s], x, y, 0.5) for e, s in pairs], 9, 1)
    for a, g in zip(alone, grouped, strict=True):
        drop = [c for c in a[0] if "second" in c]  # timings
        assert len(a[0]) > 1
        pd.testing.assert_frame_equal(a[0].drop(columns=drop), g[0].drop(columns=drop))
        for ra, rg in zip(a[1], g[1], strict=True):
            keys = [k for k in ra if "second" not in k]
            assert {k: ra[k] for k in keys} == {k: rg[k] for k in keys}
        pd.testing.assert_frame_equal(a[2], g[2])
    assert unit_seed(9, *pairs[0], 1) != unit_seed(9, *pairs[0], 0)


def test_admm_grouped_equals_per_unit(repo):
    cfg = validate_config(load_yaml(repo / "config" / "config.yaml"), source="config.yaml")
    admm = copy.deepcopy(cfg["admm"])
    admm["max_iter"] = 40
    admm["tasks"] = {k: v for k, v in admm["tasks"].items() if v["dataset"] != "mds"}
    units = [("svm_breast_cancer", "distributed"), ("ridge_diabetes", "centralized"),
             ("svm_breast_cancer", "centralized"), ("lasso_diabetes", "distributed")]  # fmt: skip
    alone = [ADMM.run_units(admm, [u], 5)[0] for u in units]
    _scramble()
    grouped = ADMM.run_units(admm, units, 5)
    for (ra, ia), (rg, ig) in zip(alone, grouped, strict=True):
        pd.testing.assert_frame_equal(ra.history, rg.history, check_exact=True)
        pd.testing.assert_frame_equal(ra.ledger.table(), rg.ledger.table(), check_exact=True)
        for arr in ("z", "reference_x"):
            np.testing.assert_array_equal(ia.pop(arr), ig.pop(arr))
        assert {k: v for k, v in ia.items() if k != "seconds"} == {
            k: v for k, v in ig.items() if k != "seconds"
        }
    assert alone[0][1]["objective"] != alone[2][1]["objective"]  # distinct units
    assert [i["task"] for _, i in grouped] == [t for t, _ in units]
    # the default config runs all (task, mode) in one job, the thesis one job per run
    assert ADMM_WF.fanout(cfg["admm"]) == "all" and ADMM_WF.fanout({}) == "unit"
    thesis = validate_config(load_yaml(repo / "config" / "thesis.yaml"), source="thesis.yaml")
    assert ADMM_WF.fanout(thesis["admm"]) == "unit"
    assert ADMM_WF.group_inputs(cfg["admm"]["tasks"])["split"] == [
        "results/data/mds/splits/equal8.tsv"
    ]
