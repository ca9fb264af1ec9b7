"""Issue 14 fan-out of the hac and attacks stages: per-unit parts, merged, equal the all-in-one
tables (row for row, cell for cell, timing columns aside), whatever the grouping."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch

from fedclust.attacks import workflow as aw
from fedclust.attacks.known_io import known_io_curve
from fedclust.attacks.property_inference import TrainSpec, run_property_inference
from fedclust.attacks.reconstruction import run_reconstruction
from fedclust.errors import ConfigError
from fedclust.hac import experiments as ex
from fedclust.hac import pooled
from fedclust.hac import workflow as hw
from fedclust.io import TIMING_COLUMNS, read_table, write_table

# generated data, not patients: the protocols' own rules (tests/conftest.py, issue 22)
pytestmark = pytest.mark.usefixtures("synthetic_centres")

# ---- hac ---------------------------------------------------------------------------------------

HAC_CFG = {
    "linkages": ["single", "average", "ward"],
    "k_max": 4,
    "gradual": {
        "panels": [["sf", "euclidean"], ["vst", "cosine"]],
        "n_min": [2, 3, 30],  # 30 > largest center: skipped rows
        "fraction": 0.5,
        "d_min": 0.0,
        "average_delta": ["stored", "current"],
    },
    "simultaneous": {"preprocessing": "sf", "n_min": [1, 2, 30]},
    "projection": {
        "panels": [["vst", "euclidean"], ["vst", "cityblock"]],
        "sketch_sizes": [3, 6],
        "seeds": 3,
        "estimator": "geometric",
        "compare_median": True,
        "kind": "gaussian",
        "density": None,
        "dtype": "float32",
        "threads": 1,
    },
}


@pytest.fixture(scope="module")
def cohort():
    g = np.random.default_rng(3)
    centers = np.repeat([0, 1, 2], [10, 8, 6])
    x = g.standard_normal((24, 6)) + 3.0 * (np.arange(24) % 2)[:, None]
    return {"sf": np.abs(x) + 0.1, "vst": x}, centers


def _all_in_one(data, centers, cfg, seed):
    """The former hac_cohort script's loops (one process, every variant)."""
    n, links, k_max = len(centers), cfg["linkages"], cfg["k_max"]
    g = cfg["gradual"]
    tabs, cuts = [], []
    for prep, metric in g["panels"]:
        rows: list[dict] = []
        t = ex.gradual_table(
            data[prep], centers, links, metric, ex.nmin_grid(n, g["n_min"], g["fraction"]),
            k_max, 0.0, tuple(g["average_delta"]), rows,
        )  # fmt: skip
        tabs.append(t.assign(cohort="C", prep=prep, n=n, n_min_top=t.loc[~t.skipped].n_min.max()))
        cuts.append(pd.DataFrame(rows).assign(method="gradual", prep=prep))
    grad = pd.concat(tabs, ignore_index=True)
    s, rows = cfg["simultaneous"], []
    simu = ex.simultaneous_table(data["sf"], centers, links, "euclidean", s["n_min"], k_max, rows)
    simu = simu.assign(cohort="C", prep="sf")
    cuts.append(pd.DataFrame(rows).assign(method="simultaneous", prep="sf"))
    p, tabs = cfg["projection"], []
    for prep, metric in p["panels"]:
        for est in ["geometric"] + (["median"] if metric == "cityblock" else []):
            t = ex.projection_table(
                data[prep], centers, links, metric, p["sketch_sizes"], p["seeds"], seed, k_max, est
            )
            tabs.append(t.assign(cohort="C", prep=prep))
    proj = pd.concat(tabs, ignore_index=True)
    return grad, simu, pd.concat(cuts, ignore_index=True).assign(cohort="C"), proj


def _by_parts(data, centers, cfg, seed, tmp_path):
    """Every job of the DAG, each through a parquet file as in the workflow, then merged."""
    out: dict[str, list] = {"gradual": [], "gcuts": [], "simultaneous": [], "scuts": []}
    out["projection"] = []
    for variant in hw.VARIANTS:
        for part in hw.parts(cfg, variant):
            tabs, cuts = [], []
            for u in hw.units_of_part(cfg, variant, part):
                if variant == "projection":
                    tabs.append(hw.run_projection(data, centers, cfg, u, "C", seed))
                    continue
                run = hw.run_gradual if variant == "gradual" else hw.run_simultaneous
                t, c = run(data, centers, cfg, u, "C")
                tabs.append(t)
                cuts.append(c)
            path = tmp_path / f"{variant}-{part}.parquet"
            write_table(path, pd.concat(tabs, ignore_index=True), index=False)
            out[variant].append(read_table(path))
            if cuts:
                cpath = tmp_path / f"{variant}-{part}_cuts.parquet"
                write_table(cpath, pd.concat(cuts, ignore_index=True), index=False)
                out["gcuts" if variant == "gradual" else "scuts"].append(read_table(cpath))
    return (
        hw.merge_rows(out["gradual"]),
        hw.merge_rows(out["simultaneous"]),
        hw.merge_cuts(out["gcuts"], out["scuts"], "C"),
        hw.merge_projection(out["projection"], cfg),
    )


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    drop = [c for c in TIMING_COLUMNS if c in a.columns]
    assert list(a.columns) == list(b.columns)
    pd.testing.assert_frame_equal(a.drop(columns=drop), b.drop(columns=drop), check_exact=True)


@pytest.mark.parametrize("per_unit,seed_block", [(True, 2), (False, None), (False, 1)])
def test_hac_parts_merged_equal_all_in_one(cohort, tmp_path, per_unit, seed_block):
    data, centers = cohort
    cfg = {**HAC_CFG, "fanout": {"per_unit": per_unit, "seed_block": seed_block}}
    want = _all_in_one(data, centers, cfg, seed=7)
    got = _by_parts(data, centers, cfg, 7, tmp_path)
    assert want[0].skipped.any() and want[1].skipped.any()  # skipped rows survive the merge
    for a, b in zip(want, got, strict=True):
        _same(a, b)


def test_hac_parts_listing():
    cfg = {**HAC_CFG, "fanout": {"per_unit": True, "seed_block": 2}}
    assert hw.parts(cfg, "gradual") == [
        "sf-euclidean-single", "sf-euclidean-average", "sf-euclidean-ward",
        "vst-cosine-single", "vst-cosine-average",
    ]  # fmt: skip
    assert hw.parts(cfg, "simultaneous") == ["single", "average", "ward"]
    assert hw.parts(cfg, "projection") == [
        "vst-euclidean-geometric-b0", "vst-euclidean-geometric-b1",
        "vst-cityblock-geometric-b0", "vst-cityblock-geometric-b1",
        "vst-cityblock-median-b0", "vst-cityblock-median-b1",
    ]  # fmt: skip
    seeds = [u.seeds for u in hw.units_of_part(cfg, "projection", "vst-cityblock-median-b1")]
    assert seeds == [(2, 3)]
    grouped = {**HAC_CFG, "fanout": {"per_unit": False, "seed_block": None}}
    assert [hw.parts(grouped, v) for v in hw.VARIANTS] == [["all"], ["all"], ["all-b0"]]
    assert len(hw.units_of_part(grouped, "projection", "all-b0")) == 3
    assert hw.part_paths(grouped, "gradual", "SIMA", "cuts", "parquet") == [
        "results/hac/SIMA/parts/gradual/all_cuts.parquet"
    ]
    with pytest.raises(ConfigError, match="not defined by the config"):
        hw.units_of_part(cfg, "gradual", "vst-cosine-ward")  # ward: Euclidean only
    assert hw.EUCLIDEAN_ONLY == pooled.EUCLIDEAN_ONLY


def test_seed_blocks_cover_every_seed_once():
    for n, b in [(100, 25), (100, 30), (3, None), (5, 1), (1, 10)]:
        got = [s for lo, hi in hw.seed_blocks(n, b) for s in range(lo, hi)]
        assert got == list(range(n))
        assert [s for lo, hi in aw.blocks(n, b) for s in range(lo, hi)] == list(range(n))
    with pytest.raises(ConfigError, match="seed_block"):
        hw.fanout({"fanout": {"seed_block": 0}})


# ---- attacks -----------------------------------------------------------------------------------


def _counts(n: int = 60, d: int = 12, seed: int = 0):
    g = np.random.default_rng(seed)
    sex = g.choice(["female", "male"], size=n)
    mu = np.exp(g.uniform(3, 6, size=d)[None, :] + 1.5 * (sex == "male")[:, None] * (
        np.arange(d) < 3))  # fmt: skip
    counts = g.negative_binomial(10, 10 / (10 + mu)) + 1
    idx = [f"s{i}" for i in range(n)]
    obs = pd.DataFrame({"sex": sex, "cohort": np.where(np.arange(n) < n // 2, "A", "B")}, idx)
    return pd.DataFrame(counts, index=idx, columns=[f"g{j}" for j in range(d)]), obs


ATT = {
    "fanout": {"per_projection": True, "run_block": 1, "seed_block": 2},
    "known_io": {"preprocessings": ["size_factors", "vst"], "fractions": [0.1, 0.5], "n_seeds": 3},
    "property_inference": {"n_runs": 2, "orthogonal": True, "gaussian_k": [4]},
    "reconstruction": {
        "n_runs": 2,
        "max_genes_no_zero": None,
        "max_genes_all": None,
        "batch_size": 20,
        "sigma_factors": [1.0],
        "n_projections": 2,
        "fig4_17_projections": [{"kind": "orthogonal"}, {"kind": "gaussian", "k": 5}],
        "fig4_18_k": [5],
        "fig4_18_pinv_k": [4],
        "fig4_19_k": [5],
        "decoders": {
            "linear": {"lr": 1e-3, "epochs": 2, "optimizer": "adam"},
            "mlp": {"lr": 1e-3, "epochs": 2, "d_nn": 4},
        },
        "combined": {"k": 5, "d_nn": 4, "lrs": [1e-3], "epochs": 2, "batch_size": 16},
    },
}


def test_property_inference_parts_merged_equal_all_in_one():
    torch.set_num_threads(1)
    counts, obs = _counts()
    spec = TrainSpec(d_nn=8, d_nn_small=4, small_input=4, lrs=(1e-2,), epochs=2, batch_size=16)
    pi = ATT["property_inference"]

    def acc(conditions, runs=None):
        return run_property_inference(
            counts, obs, conditions=conditions, n_runs=pi["n_runs"], spec=spec, seed=5, runs=runs
        )

    whole = acc(aw.pi_conditions(pi))
    parts = aw.pi_parts(ATT)
    assert parts == [f"{c}-b{r}" for c in ("none", "orthogonal", "gaussian4") for r in (0, 1)]
    merged = aw.merge_pi([acc(*aw.pi_part(ATT, p)) for p in reversed(parts)], pi)
    pd.testing.assert_frame_equal(merged, whole, check_exact=True)
    grouped = {**ATT, "fanout": {"per_projection": False, "run_block": None, "seed_block": None}}
    assert aw.pi_parts(grouped) == ["all-b0"]
    assert aw.pi_part(grouped, "all-b0") == (aw.pi_conditions(pi), range(0, 2))
    with pytest.raises(ConfigError, match="not defined"):
        aw.pi_part(ATT, "gaussian9-b0")


def test_known_io_parts_merged_equal_all_in_one():
    x = np.random.default_rng(1).standard_normal((20, 8))
    kio = ATT["known_io"]

    def table(preps, seeds):
        return pd.concat(
            [
                known_io_curve(x + i, kio["fractions"], seeds, 3, "C").assign(preprocessing=p)
                for i, p in enumerate(kio["preprocessings"])
                if p in preps
            ],
            ignore_index=True,
        )

    whole = table(kio["preprocessings"], kio["n_seeds"])
    parts = aw.known_io_parts(ATT)
    assert parts == ["size_factors-b0", "size_factors-b1", "vst-b0", "vst-b1"]
    assert aw.known_io_part(ATT, "vst-b1") == (["vst"], range(2, 3))
    merged = aw.merge_known_io([table(*aw.known_io_part(ATT, p)) for p in parts], kio)
    pd.testing.assert_frame_equal(merged, whole, check_exact=True)


def test_reconstruction_parts_merged_equal_all_in_one():
    torch.set_num_threads(1)
    counts, obs = _counts(n=40, d=8)
    cfg = ATT["reconstruction"]
    whole = run_reconstruction(counts, obs, cfg, seed=2)
    assert aw.reconstruction_parts(ATT) == ["b0", "b1"]
    outs = [
        run_reconstruction(counts, obs, cfg, 2, runs=aw.reconstruction_part(ATT, p), pinv=False)
        for p in ("b1", "b0")
    ]
    pinv = aw.merge_pinv(
        {c: run_reconstruction(counts, obs, cfg, 2, runs=[], pinv=[c])["pinv"] for c in "BA"}
    )
    errors, combined, tests = aw.merge_reconstruction(
        [o["errors"] for o in outs], [o["combined"] for o in outs]
    )
    pd.testing.assert_frame_equal(errors, whole["errors"], check_exact=True)
    pd.testing.assert_frame_equal(combined, whole["combined"], check_exact=True)
    pd.testing.assert_frame_equal(tests, whole["tests"], check_exact=True)
    pd.testing.assert_frame_equal(pinv, whole["pinv"], check_exact=True)
    assert set(pinv.cohort) == {"A", "B"}
    with pytest.raises(ConfigError, match="not defined"):
        aw.reconstruction_part(copy.deepcopy(ATT), "b7")
