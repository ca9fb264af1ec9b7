"""FedCRef θ (issue 28): eq. 2's statistic depends on the cluster size S, not on the error scale;
θ is calibrated per initial dirtiness; the side variant runs at the calibrated θ; the headline
compares only the paper's setting and says what association adds over local-only refinement."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedclust.config import load_yaml, validate_config
from fedclust.data.glyphs import synthetic_glyphs
from fedclust.errors import ConfigError
from fedclust.fedcref import workflow as FW
from fedclust.fedcref.association import direction_statistic
from fedclust.fedcref.calibrate import (
    calibrate,
    level_of,
    size_clusters,
    size_statistics,
    size_summary,
    theta_for,
)
from fedclust.fedcref.experiments import resolve_theta, run_setting, settings
from fedclust.fedcref.report import HEADLINE, build_tables
from fedclust.io import write_json
from fedclust.report import build
from fedclust.report.headline import verdict

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cfg():
    c = validate_config(load_yaml(ROOT / "config" / "config.yaml"), source="config.yaml")
    f = copy.deepcopy(c["fedcref"])
    f["autoencoder"].update(hidden=[16, 8], epochs=4, batch_size=16)
    f["federated"].update(rounds=1)
    f["stopping"].update(max_iterations=1)
    f["system"].update(n_clients=3, samples_per_class=12)
    f["datasets"]["syn"] = {"source": "synthetic"}
    f["calibration"]["repetitions"] = 1
    return f


def test_statistic_ignores_the_error_scale():
    """Eq. 2 min-max normalises |ΔE|: scaling both error vectors (a loss or pixel scale) or
    shifting their difference leaves the statistic as it is."""
    r = np.random.default_rng(0)
    own, foreign = r.gamma(2.0, 0.01, 200), r.gamma(2.0, 0.012, 200)
    s = direction_statistic(own, foreign, 75)
    assert direction_statistic(own * 255**2, foreign * 255**2, 75) == pytest.approx(s)
    assert 0 < s < 1


def test_same_class_statistic_falls_with_the_cluster_size(cfg):
    """The same-class statistic falls as S grows (the paper's θ = 0.2 fits only large S);
    per (S, dirtiness) |U| same-class and C(2|U|, 2) − |U| different-class pairs."""
    x, y = synthetic_glyphs(4, 420, 1, side=8)
    c = copy.deepcopy(cfg)
    c["autoencoder"].update(hidden=[16, 8], epochs=6, batch_size=16, patience=None)
    st = size_statistics(c, x, y, [8, 200], [0.0], 1, 3)
    summ = size_summary(st).set_index("S")
    assert summ.loc[8, "same pairs"] == 4 and summ.loc[8, "different pairs"] == 24
    assert summ.loc[200, "same median"] < summ.loc[8, "same median"] - 0.15
    assert summ.loc[200, "same median"] < summ.loc[200, "different median"]


def test_size_clusters_disjoint_dirty_and_augmented():
    x, y = synthetic_glyphs(3, 50, 0, side=8)
    clusters, cls, aug = size_clusters(y, x, 20, 0.25, 1)
    assert cls == [0, 0, 1, 1, 2, 2] and all(len(c) == 20 for c in clusters)
    flat = np.concatenate(clusters)
    assert len(np.unique(flat, axis=0)) == len(flat)  # no sample in two clusters
    # 15 samples of the cluster's own class, 5 from the other classes
    label = {row.tobytes(): int(k) for row, k in zip(x, y, strict=True)}
    for c, k in zip(clusters, cls, strict=True):
        lab = np.array([label[row.tobytes()] for row in c])
        assert (lab[:15] == k).all() and (lab[15:] != k).all()
    assert aug == [0] * 6
    clusters, _, aug = size_clusters(y, x, 40, 0.0, 1)  # 2·40 > 50: shifted copies
    assert all(len(c) == 40 for c in clusters) and aug == [15] * 6
    assert size_clusters(y, x, 40, 0.0, 1, augment=False)[1] == []


def test_calibration_per_initial_dirtiness(cfg, tmp_path):
    """One θ per level, each from validation partitions as dirty as the level; a setting picks
    its level (DEC: calibration.dec_dirtiness); the paper's θ is reported beside."""
    x, y = synthetic_glyphs(6, 80, 2, side=8)
    levels, pairs = calibrate(cfg, {"dataset": "syn", "init": "dirty_uniform"}, x, y, 5,
                              [0.0, 0.5])  # fmt: skip
    assert [r["dirtiness"] for r in levels] == [0.0, 0.5]
    assert set(pairs.dirtiness) == {0.0, 0.5} and pairs.same_class.any()
    assert all(0 < r["theta"] <= 1 and r["paper_theta"] == 0.2 for r in levels)
    path = tmp_path / "cal.json"
    write_json(path, {"dataset": "syn", "levels": levels})
    c = {**cfg, "association": {**cfg["association"], "theta": "calibrated"}}
    dirty = {"dataset": "syn", "init": "dirty_uniform", "dirtiness": 0.4}
    assert resolve_theta(c, str(path), dirty) == levels[1]["theta"]
    dec = {"dataset": "syn", "init": "dec"}
    assert level_of(dec, cfg) == 0.2 and resolve_theta(c, str(path), dec) == levels[0]["theta"]
    assert theta_for({"theta": 0.4}, 0.3) == 0.4  # a single-level (older) file
    assert resolve_theta({**cfg, "association": {"theta": 0.2}}, None, dirty) == 0.2
    with pytest.raises(ConfigError, match="no calibration file"):
        resolve_theta(c, None, dirty)


def test_side_variant_runs_at_the_calibrated_theta(cfg):
    x, y = synthetic_glyphs(4, 60, 0, side=8)
    c = copy.deepcopy(cfg)
    c["datasets"] = {"syn": {"source": "synthetic"}}
    st = {"dataset": "syn", "init": "dirty_uniform", "dirtiness": 0.3}
    _, summ, _ = run_setting(c, st, x, y, 1, 0.2, ["fedcref", "fedcref_calibrated"], 0.9)
    assert [(s["variant"], s["theta"]) for s in summ] == [
        ("fedcref", 0.2),
        ("fedcref_calibrated", 0.9),
    ]
    with pytest.raises(ConfigError, match="calibrated θ"):
        run_setting(c, st, x, y, 1, 0.2, ["fedcref_calibrated"])


def test_workflow_plans_levels_size_study_and_side_calibration():
    c = validate_config(load_yaml(ROOT / "config" / "config.yaml"), source="config.yaml")
    f = c["fedcref"]
    st, _, datasets, calibrated = FW.plan(f)
    assert datasets == ["digits"] and calibrated
    assert FW.calibration_levels(f, st, "digits") == [0.0, 0.2, 0.3, 0.5]
    assert FW.size_study(f) == "mnist5k"
    t = validate_config(load_yaml(ROOT / "config" / "thesis.yaml"), source="thesis.yaml")
    g = t["fedcref"]
    assert g["association"]["theta"] == 0.2 and "fedcref_calibrated" in g["variants"]
    assert FW.plan(g)[3]  # the side variant needs the calibration
    assert g["system"]["n_clients"] == 25 and g["system"]["samples_per_class"] == 500
    assert g["federated"]["rounds"] == 15 and g["datasets"]["emnist"]["source"] == "emnist_digits"
    assert FW.size_study(g) == "emnist"
    assert t["resources"]["rules"]["fedcref_run"]["threads"] > 1
    assert "exp2" in settings(g)


def _summary(n_clients: int) -> pd.DataFrame:
    rows = []
    for exp in ("exp1", "exp4"):
        for rep in range(3):
            for var, acc in (("fedcref", 0.9), ("local_only", 0.88), ("perfect", 0.95)):
                rows.append(
                    {"exp": exp, "setting": "s", "repetition": rep, "dataset": "emnist",
                     "variant": var, "n_clients": n_clients, "real_k": 10, "ideal_k": 10,
                     "acc_init": 0.7, "acc_end": acc + rep / 1000, "improvement_pct": 28.0,
                     "groups_end": 10, "wrong_links_end": 1, "wrong_clusters_end": 1,
                     "isolated_start": 87, "isolated_end": 18, "iterations": 5,
                     "seconds_per_iteration": 1.0, "dirtiness": 0.3, "overlap": 0.0}
                )  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("source", "n", "s", "compared"),
    [("emnist_digits", 25, 500, True), ("digits", 25, 500, False), ("emnist_digits", 8, 500,
     False), ("emnist_digits", 25, 40, False)],
)  # fmt: skip
def test_headline_compares_only_the_papers_setting(tmp_path, source, n, s, compared):
    """Exp. 1 and Exp. 4 rows are compared with the paper only on its dataset, N and S (Exp. 4:
    the paper's row at the same N); FedCRef − local-only per experiment is always reported."""
    cfg = {"datasets": {"emnist": {"source": source, "paper": "EMNIST", "label": "E"}},
           "system": {"samples_per_class": s}}  # fmt: skip
    summ = _summary(n)
    if n == 25:  # Exp. 4 at one of the paper's N
        summ.loc[summ.exp == "exp4", "n_clients"] = 30
    tables = build_tables(summ, cfg, pd.DataFrame())
    entries = []
    for name, df in tables.items():
        df.to_csv(tmp_path / f"{name}.tsv", sep="\t", index=False)
        entries.append({"path": str(tmp_path / f"{name}.tsv")})
    h = build(HEADLINE, entries, [])
    rows = {r["quantity"]: r for r in h["rows"]}
    paper_rows = [r for q, r in rows.items() if "local-only" not in q]
    assert len(paper_rows) == 5
    assert all((verdict(r) != "not compared") == compared for r in paper_rows)
    if not compared:
        assert "not comparable" in h["sentence"]
    lo = [r for q, r in rows.items() if "FedCRef − local-only" in q]
    assert [r["quantity"] for r in lo] == [
        "Exp. 1 (DEC start): FedCRef − local-only ACC end",
        "Exp. 4 (clients): FedCRef − local-only ACC end",
    ]
    assert all(r["ours"] == pytest.approx(0.02) for r in lo)
