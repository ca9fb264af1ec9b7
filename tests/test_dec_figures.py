"""Extra seed 000 figures and the MNIST size curve (issue 16): confusion matrix vs sklearn /
Hungarian accuracy, density counts vs numpy, the re-run of the best configuration equals the
stage's run, size-curve subsets / schedules / summary, and the size-curve job on tiny data
through Snakemake (one job per (schedule, size, repetition))."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.metrics import confusion_matrix

from fedclust.config import load_yaml
from fedclust.dec import figures_extra as fx
from fedclust.dec import size_curve as sc
from fedclust.dec.pipeline import run_centralized, run_federated
from fedclust.errors import ConfigError
from fedclust.metrics.assignment import hungarian_accuracy


@pytest.fixture(scope="module")
def cfg(dec_toy_cfg):
    d = dec_toy_cfg(
        epochs=8,
        grid=True,
        strategies=["fedadam"],
        ae_rounds=2,
        dec_rounds=2,
        ae_batch_size=16,
        centroid_aggregation=["max_min", "random"],
    )
    d["evaluate"]["tsne_max_points"] = 60
    return d


@pytest.fixture(scope="module")
def toy(toy_blobs):
    x, y = toy_blobs(150, 16, 0.7, 1)
    return x, y.astype(str)


# ---- confusion matrix -----------------------------------------------------------------------
def test_confusion_table_matches_sklearn_and_hungarian_accuracy():
    gen = np.random.default_rng(0)
    ref = gen.integers(0, 4, 500).astype(str)
    pred = np.where(gen.random(500) < 0.7, (ref.astype(int) + 2) % 4, gen.integers(0, 4, 500))
    t = fx.confusion_table(pred, ref)
    mapped = fx.mapped_predictions(pred, ref)
    labels = ["0", "1", "2", "3"]
    np.testing.assert_array_equal(t.to_numpy(), confusion_matrix(ref, mapped, labels=labels))
    assert np.trace(t.to_numpy()) / 500 == pytest.approx(hungarian_accuracy(pred, ref))
    # a perfect but permuted clustering is diagonal
    perm = fx.confusion_table((ref.astype(int) * 7 + 3) % 11, ref).to_numpy()
    np.testing.assert_array_equal(perm, np.diag(np.bincount(ref.astype(int))))


def test_confusion_table_keeps_unmatched_clusters():
    ref = np.array(list("aabbcc"))
    pred = np.array([0, 0, 1, 1, 2, 3])  # 4 clusters, 3 labels
    t = fx.confusion_table(pred, ref)
    assert list(t.columns) == ["a", "b", "c", "unmatched"]
    assert t.to_numpy().sum() == 6 and t["unmatched"].sum() == 1


def test_density_counts_and_window():
    gen = np.random.default_rng(1)
    emb = gen.normal(size=(300, 2))
    h = fx.density_counts(emb, bins=10)
    assert h.sum() == 300
    np.testing.assert_array_equal(h, np.histogram2d(emb[:, 0], emb[:, 1], bins=10)[0])
    w = fx.window(emb, 25)
    d = np.linalg.norm(emb - np.median(emb, axis=0), axis=1)
    assert set(w) == set(np.argsort(d)[:25]) and list(w) == sorted(w)


def test_first_of_each_label_orders_digits_numerically():
    y = np.array(["10", "2", "1", "2", "10", "0"])
    np.testing.assert_array_equal(fx.first_of_each_label(y), [5, 2, 1, 0])


# ---- the re-run equals the stage's run --------------------------------------------------------
def test_centralized_states_reproduce_the_stage_best_run(cfg, toy):
    x, y = toy
    res = run_centralized(x, y, cfg, "toy", 5)
    st = fx.centralized_states(x, y, cfg, "toy", 5, res.table, 60)
    best = res.table.iloc[0]
    for k in ("accuracy", "recon_loss", "ae_loss", "cycle_accuracy"):
        assert st["row"][k] == best[k], k
    np.testing.assert_array_equal(st["pred_all"], res.best["labels"])
    assert st["emb_ae"].shape == st["emb_dec"].shape == (60, 2)
    assert st["recon_ae"].shape == st["x"].shape == (60, 16)
    # subset MSE of the end-of-TSAE model is the mean per-row squared error
    assert st["mse_ae"] == pytest.approx(float(((st["recon_ae"] - st["x"]) ** 2).mean()), rel=1e-5)


def test_federated_states_reproduce_the_stage_run(cfg, toy):
    x, y = toy
    centers = np.repeat(np.arange(3), 50).astype(str)
    full = run_federated(x, y, centers, cfg, "toy", "s", 7).table
    best = fx.best_federated([full.assign(split="s")], "accuracy")
    st = fx.federated_states(
        x, y, centers, cfg, "toy", "s", best["strategy"], best["centroids"], 7, 50
    )
    for k in ("accuracy", "sil_data", "recon_loss", "ae_loss"):
        assert st["row"][k] == pytest.approx(best[k], rel=1e-6, abs=1e-9), k


# ---- size curve --------------------------------------------------------------------------
def test_subsample_is_seeded_and_checked():
    a, b = sc.subsample(100, 30, 1, 0), sc.subsample(100, 30, 1, 0)
    np.testing.assert_array_equal(a, b)
    assert len(set(a)) == 30 and not np.array_equal(a, sc.subsample(100, 30, 1, 1))
    with pytest.raises(ConfigError, match="outside"):
        sc.subsample(100, 101, 1, 0)


def test_subsets_are_nested_per_seed():
    """One permutation per (seed, rep): the 1 000 lie inside the 2 000, which lie inside the
    5 000; at the full size only the order differs between reps (issue 16)."""
    for rep in range(3):
        s1, s2, s5 = (sc.subsample(5000, n, 4, rep) for n in (1000, 2000, 5000))
        np.testing.assert_array_equal(s2[:1000], s1)
        np.testing.assert_array_equal(s5[:2000], s2)
        assert set(s1) < set(s2) < set(s5) == set(range(5000))
    a, b = sc.subsample(5000, 5000, 4, 0), sc.subsample(5000, 5000, 4, 1)
    assert set(a) == set(b) and not np.array_equal(a, b)
    # different reps draw different 1 000s (overlap ≈ 1000²/5000 = 200, not 1000)
    overlap = len(set(sc.subsample(5000, 1000, 4, 0)) & set(sc.subsample(5000, 1000, 4, 1)))
    assert 120 < overlap < 300


def test_fit_trend_matches_scipy_linregress():
    from scipy.stats import linregress

    pts = pd.DataFrame(
        {
            "schedule": ["a"] * 6 + ["b"] * 2 + ["c"],
            "size": [1000, 1000, 2000, 2000, 5000, 5000, 1000, 4000, 1000],
            "accuracy": [0.50, 0.56, 0.55, 0.60, 0.62, 0.64, 0.5, 0.6, 0.7],
        }
    )
    t = sc.fit_trend(pts).set_index("schedule")
    assert list(t.index) == ["a", "b"]  # c has one size: no trend
    a = pts[pts.schedule == "a"]
    ref = linregress(np.log10(a["size"]), a["accuracy"])
    r = t.loc["a"]
    assert r.slope_log10 == pytest.approx(ref.slope) and r.intercept == pytest.approx(ref.intercept)
    assert r.r2 == pytest.approx(ref.rvalue**2)
    assert r.accuracy_at == pytest.approx(ref.intercept + ref.slope * np.log10(60000))
    assert r.gap_at == pytest.approx(0.8824 - r.accuracy_at) and r.points == 6
    # two points, one doubling apart twice: +0.05 per doubling exactly
    assert t.loc["b"].per_doubling == pytest.approx(0.05)
    assert t.loc["b"].accuracy_at == pytest.approx(0.5 + 0.05 * np.log2(60))


def test_thesis_config_runs_the_curve_on_full_mnist_as_gpu_jobs(repo):
    """config/thesis.yaml: the curve subsamples the data stage's IDX MNIST (60 000 training
    images) in one GPU job per (schedule, size, rep), up to the full 60 000."""
    from fedclust.dec import workflow as dfw

    th = load_yaml(repo / "config" / "thesis.yaml")
    assert th["data"]["mnist"]["source"] == "idx" and th["data"]["mnist"]["idx_split"] == "train"
    curve = th["dec"]["size_curve"]
    assert curve["enabled"] and curve["source"] == "dataset"
    assert dfw.size_inputs(curve)["features"] == "results/data/mnist/features.parquet"
    pts = dfw.size_points(curve)
    assert len(pts) == len(set(pts)) == 39  # (2 schedules × 5 sizes + 3 sizes) × 3 reps
    assert "results/dec/size_curve/thesis/n60000_r2.tsv" in pts
    assert th["resources"]["rules"]["dec_size_point"]["gpu"] == 1
    # without the jobs the default report reads the committed measurement
    assert dfw.curve_inputs(curve, False, "m.tsv") == ["m.tsv"]
    assert dfw.curve_inputs(curve, True, "m.tsv") == pts


def test_committed_measurement_is_a_nested_curve(repo):
    """docs/dec_size_curve/points.tsv (the default report's curve): the point columns, 3 seeds
    per (schedule, size), the thesis' best setting, accuracies above chance."""
    pts = pd.read_csv(repo / "docs" / "dec_size_curve" / "points.tsv", sep="\t")
    assert list(pts.columns) == sc.POINT_COLUMNS
    assert (pts.groupby(["schedule", "size"]).rep.nunique() == 3).all()
    assert set(pts.optimizer) == {"yogi"} and set(pts.alpha) == {9.0}
    assert set(pts.scaler) == {"normal-l1"} and pts.accuracy.between(0.2, 1).all()
    assert {1000, 2000, 5000} <= set(pts["size"])
    e = pts[pts.schedule == "fixed_epochs"]
    assert (e.ae_epochs == 50).all() and len(sc.fit_trend(e)) == 1
    # the committed trend is the one the points give (rounded to 5 digits when written)
    trend = pd.read_csv(repo / "docs" / "dec_size_curve" / "trend.tsv", sep="\t")
    fit = sc.fit_trend(pts).set_index("schedule").loc[trend.schedule]
    for col in ("points", "slope_log10", "r2", "accuracy_at"):
        np.testing.assert_allclose(fit[col].to_numpy(float), trend[col].to_numpy(float), atol=1e-4)


def test_schedule_epochs_steps():
    assert sc.schedule_epochs({"epochs": 7}, 1000, 256) == 7
    # fixed steps: 1000 steps at batch 256 → 1000 images need 250 epochs, 5000 need 50
    assert sc.schedule_epochs({"steps": 1000}, 1000, 256) == 250
    assert sc.schedule_epochs({"steps": 1000}, 5000, 256) == 50
    assert sc.THESIS_STEPS == 500 * math.ceil(60000 / 256) == 117500
    with pytest.raises(ConfigError, match="epochs"):
        sc.schedule_epochs({"shuffle": True}, 10, 2)


def _tiny_curve() -> dict:
    return {
        "arch": [8, 4],
        "silhouette_points": 50,
        "setting": {
            "optimizer": "adam",
            "alpha": 9,
            "scaler": "normal-l1",
            "ae_lr": 0.01,
            "ae_batch_size": 32,
            "dec_lr": 0.001,
            "dec_batch_size": 32,
            "dec_max_epochs": 2,
        },
        "schedules": {"e": {"epochs": 3, "shuffle": True}, "s": {"steps": 8, "shuffle": False}},
    }


def test_size_point_and_summary_on_tiny_data(cfg, toy):
    x, y = toy
    curve = _tiny_curve()
    jobs = [("e", 64, 0), ("e", 64, 1), ("e", 128, 0), ("s", 64, 0), ("s", 128, 0)]
    rows = pd.concat(
        [sc.size_point(x, y, cfg, curve, s, n, r, 3) for s, n, r in jobs], ignore_index=True
    )
    assert list(rows.columns) == sc.POINT_COLUMNS and len(rows) == 5
    e = rows[rows.schedule == "e"]
    assert (e.ae_epochs == 3).all()
    assert list(e.ae_steps.unique()) == [6, 12]  # 3 epochs × ceil(64/32), × ceil(128/32)
    s = rows[rows.schedule == "s"]
    assert (s.ae_steps == 8).all() and list(s.ae_epochs.unique()) == [4, 2]
    assert rows.accuracy.between(1 / 3, 1).all()
    again = sc.size_point(x, y, cfg, curve, "e", 64, 1, 3)
    pd.testing.assert_frame_equal(again, e.iloc[[1]].reset_index(drop=True))
    summ = sc.summarise(rows)
    g = rows[(rows.schedule == "e") & (rows["size"] == 64)].accuracy
    r = summ[(summ.schedule == "e") & (summ["size"] == 64)].iloc[0]
    assert r.accuracy_mean == pytest.approx(g.mean()) and r.accuracy_sd == pytest.approx(g.std())
    assert r.gap_to_thesis == pytest.approx(0.8824 - g.mean())
    with pytest.raises(ConfigError, match="schedule"):
        sc.size_point(x, y, cfg, curve, "nope", 64, 0, 3)


@pytest.mark.slow
def test_size_curve_job_through_snakemake(repo, tmp_path, toy):
    """The rule on a tiny data set (source: dataset): one dec_size_point job per (schedule,
    size, repetition), then the summary, table and figure."""
    from fedclust.data.mnist import as_tables

    x, y = toy
    feats, obs = as_tables(x, y, "toy")
    (tmp_path / "results/data/mnist").mkdir(parents=True)
    feats.to_parquet(tmp_path / "results/data/mnist/features.parquet")
    obs.to_csv(tmp_path / "results/data/mnist/obs.tsv", sep="\t")
    c = yaml.safe_load(open(repo / "config" / "config.yaml"))
    curve = _tiny_curve()
    curve["schedules"] = {"e": {"epochs": 2}, "s": {"steps": 4, "sizes": [50]}}
    curve["setting"]["dec_max_epochs"] = 1
    c["dec"]["size_curve"] = {
        "enabled": True,
        "source": "dataset",
        "sizes": [50, 100],
        "repetitions": 1,
        **curve,
    }
    c["dec"]["datasets"]["mnist"]["k"] = 3
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(c))
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "results/dec/size_curve/summary.tsv",
            "--cores",
            "1",
            "-s",
            str(repo / "Snakefile"),
            "--configfile",
            str(tmp_path / "c.yaml"),
            "--directory",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    pts = pd.read_csv(tmp_path / "results/dec/size_curve/points.tsv", sep="\t")
    got = sorted(zip(pts.schedule, pts["size"], pts.rep, strict=True))
    assert got == [("e", 50, 0), ("e", 100, 0), ("s", 50, 0)]
    assert len(list((tmp_path / "results/dec/size_curve").glob("*/n*_r*.tsv"))) == 3
    assert (tmp_path / "results/benchmarks/dec_size_point/s_n50_r0.tsv").exists()
    summ = pd.read_csv(tmp_path / "results/dec/size_curve/summary.tsv", sep="\t")
    assert len(summ) == 3 and (summ.reps == 1).all()
    assert summ.set_index("schedule").loc["s", "ae_steps"] == 4
    assert (tmp_path / "results/dec/size_curve/size_curve.png").stat().st_size > 1000


def test_figures_section_lists_thesis_numbers_beside_ours(tmp_path, monkeypatch):
    from fedclust.dec.figures_report import build_figures_section
    from fedclust.io import read_json

    monkeypatch.chdir(tmp_path)
    for d in ("mnist", "bmnist", "mds"):
        (tmp_path / f"results/dec/figures/{d}").mkdir(parents=True)
    conf = fx.confusion_table(np.array([0, 0, 1, 2, 2, 2]), np.array(list("001122")))
    for d in ("mnist", "bmnist"):
        conf.to_csv(f"results/dec/figures/{d}/confusion.tsv", sep="\t")
    row = {"setting": "yogi α=9 normal-l1", "subset_mse_tsae": 0.01, "subset_mse_dec": 0.1}
    pd.DataFrame([row]).to_csv("results/dec/figures/mnist/states.tsv", sep="\t", index=False)
    pd.DataFrame([row]).to_csv("results/dec/figures/mds/federated_states.tsv", sep="\t")
    build_figures_section(
        "s.json",
        confusion=["mnist", "bmnist"],
        states=["mnist"],
        fed=["mds"],
        mnist_bmnist=True,
        size_curve=False,
        reduced=True,
        source="mlxtend5k",
        headline_path="head.tsv",
    )
    sec = read_json("s.json")
    got = [f["reproduces"] for f in sec["figures"]]
    assert got == [
        f"seed 000 Fig. {n}" for n in ("3.1", "5.5", "B.1", "5.8", "5.7", "5.15", "5.16", "5.17")
    ]
    head = pd.read_csv("head.tsv", sep="\t", dtype=str)
    assert head["thesis figure"].tolist() == [
        "3.1",
        "5.5",
        "B.1",
        "5.8",
        "5.7",
        "5.15",
        "5.16",
        "5.17",
    ]
    assert "accuracy 0.8333 on 6 images" in head.loc[1, "ours shows"]
    assert "true 1 → cluster '2' (1 images)" in head.loc[1, "ours shows"]
    assert "0.8824" in head.loc[1, "thesis shows"]


@pytest.mark.parametrize("mode", ["run", "measured"])
def test_figures_section_shows_the_size_curve(tmp_path, monkeypatch, mode):
    from fedclust.dec.figures_report import build_figures_section
    from fedclust.io import read_json

    monkeypatch.chdir(tmp_path)
    build_figures_section(
        "s.json",
        confusion=[],
        states=[],
        fed=[],
        mnist_bmnist=False,
        size_curve=mode,
        reduced=True,
        source="mlxtend5k",
    )
    sec = read_json("s.json")
    assert [f["path"] for f in sec["figures"]] == ["results/dec/size_curve/size_curve.png"]
    assert [t["path"] for t in sec["tables"]] == [
        "results/dec/size_curve/summary.tsv",
        "results/dec/size_curve/trend.tsv",
    ]
    text = " ".join(sec["text"])
    assert ("committed measurement" in text) == (mode == "measured")
    assert "docs/dec_size_curve/README.md" in text or mode == "run"
