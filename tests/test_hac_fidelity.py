"""Issue 16, seed 001 items: TCGA-like simulated cohorts, Fig 4.6 and the Appendix A demo."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.cluster.hierarchy import cophenet, linkage

from fedclust.config import load_yaml, validate_config
from fedclust.data.simulate import simulate_rnaseq, simulated_site_table, site_shares
from fedclust.data.tcga import REGIONS
from fedclust.errors import ConfigError
from fedclust.hac import appendix
from fedclust.hac.figures import cohort_shape
from fedclust.hac.gradual import count_inversions

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
SITES = load_yaml(CONFIG)["data"]["rnaseq"]["sites"]
TABLE = simulated_site_table(SITES).set_index("TSS Code")  # the default simulated site table


def _simulate(tmp_path, name, **kw):
    counts, clinical = tmp_path / f"{name}.c.tsv.gz", tmp_path / f"{name}.k.tsv.gz"
    kw = {"region_shares": site_shares(SITES)} | kw
    simulate_rnaseq(str(counts), str(clinical), name=name, seed=7, n_genes=50, sites=TABLE, **kw)
    k = pd.read_csv(clinical, sep="\t")
    k = k[k["sample"].str.endswith("-01A")].copy()
    k["center"] = k["sample"].str[5:7].map(TABLE["Region"])
    return k


def test_configured_region_shares_are_tcga_like():
    """The simulated site table's shares (they summarise the real table: checked against it in
    tests/test_data_sites.py) lie in the thesis' ranges for the real cohorts."""
    shares = site_shares(SITES)
    assert set(shares) == set(REGIONS) and sum(shares.values()) == pytest.approx(1.0, abs=1e-4)
    # smallest 0.59-7.9 %, biggest 22-58 % (seed 001 §3.1.1)
    assert 0.0059 <= min(shares.values()) <= 0.079 and 0.22 <= max(shares.values()) <= 0.58


def test_tcga_shape_meets_the_thesis_condition_and_the_hard_case_does_not(tmp_path):
    props = [0.44, 0.24, 0.19, 0.11, 0.02]
    tcga = _simulate(
        tmp_path, "T", shape="tcga", n_samples=1000, n_clusters=5, cluster_proportions=props
    )
    share = tcga["center"].value_counts(normalize=True)
    want = pd.Series(site_shares(SITES))
    np.testing.assert_allclose(share.reindex(want.index).to_numpy(), want.to_numpy(), atol=0.04)
    np.testing.assert_allclose(
        tcga["true_cluster"].value_counts(normalize=True).sort_index(), props, atol=0.04
    )
    shape = cohort_shape(tcga.assign(cohort="T"), 0.1).iloc[0]
    assert shape["centers"] == 7 and bool(shape["meets ≥ 25 condition"])
    assert shape["largest cluster in one center"] >= 0.44 * 0.26 * 1000 * 0.8
    assert shape["clusters with ≥ 25 in a center"] == 4  # all but the 2 % subtype
    assert 1 <= shape["clusters with ≥ n_min(10 %) in a center"] <= 2
    hard = _simulate(tmp_path, "H", n_samples=250)
    cells = pd.crosstab(hard["center"], hard["true_cluster"]).to_numpy()
    assert np.median(cells) < 10  # most region x cluster cells hold a handful of samples


def test_random_shape_is_the_default_hard_case(tmp_path):
    a = _simulate(tmp_path, "A", n_samples=60)
    c = _simulate(tmp_path, "A", n_samples=60, shape="random", tss_per_region=3)
    assert a.equals(c)
    d = _simulate(tmp_path, "A", n_samples=60, shape="tcga")
    assert not a.equals(d)


def test_region_weights_and_bad_shapes(tmp_path):
    only = _simulate(
        tmp_path, "W", shape="tcga", n_samples=80, region_weights={"Europe": 1, "Canada": 3}
    )
    assert set(only["center"]) == {"Europe", "Canada"}
    assert (only["center"] == "Canada").mean() == pytest.approx(0.75, abs=0.12)
    with pytest.raises(ConfigError, match="cluster_proportions"):
        _simulate(tmp_path, "X", n_samples=40, n_clusters=3, cluster_proportions=[1, 1])
    with pytest.raises(ConfigError, match="region_weights"):
        _simulate(tmp_path, "Y", shape="tcga", n_samples=40, region_weights={"Mars": 1})
    with pytest.raises(ConfigError, match="shape"):
        _simulate(tmp_path, "Z", shape="nope", n_samples=40)


def test_config_overrides_per_cohort_are_checked(repo):
    cfg = load_yaml(repo / "config" / "config.yaml")
    rn = cfg["data"]["rnaseq"]
    assert rn["simulate"]["shape"] == "tcga" and rn["simulate_cohorts"]["SIMB"]["shape"] == "random"
    subset = copy.deepcopy(cfg)  # a config running only SIMA keeps SIMB's override unused
    subset["data"]["rnaseq"]["cohorts"] = ["SIMA"]
    validate_config(subset, repo / "config" / "schema.yaml")
    bad = copy.deepcopy(cfg)
    bad["data"]["rnaseq"]["simulate_cohorts"]["SIMB"]["n_clusters"] = 300
    with pytest.raises(ConfigError, match="simulate_cohorts.SIMB: more clusters"):
        validate_config(bad, repo / "config" / "schema.yaml")
    bad = copy.deepcopy(cfg)
    bad["data"]["rnaseq"]["simulate_cohorts"]["SIMB"]["cluster_proportions"] = [1, 2]
    with pytest.raises(ConfigError, match="cluster_proportions"):
        validate_config(bad, repo / "config" / "schema.yaml")
    bad = copy.deepcopy(cfg)
    bad["data"]["rnaseq"]["simulate_cohorts"]["SIMB"]["n_sample"] = 3
    with pytest.raises(ConfigError):
        validate_config(bad, repo / "config" / "schema.yaml")


def test_random_merges_keep_heights_and_form_a_valid_tree():
    gen = np.random.default_rng(0)
    h = np.sort(gen.random(9))
    z = appendix.random_merges(h, 10, gen)
    np.testing.assert_array_equal(z[:, 2], h)
    assert z[-1, 3] == 10
    cophenet(z)  # scipy validates the linkage


def test_appendix_a_outlier_hides_random_merges():
    demo = appendix.outlier_demo(seed=3, runs=40)
    # thesis: 8.9e-5 without the outlier, 0.71 with it
    assert abs(demo.ccc_without_outlier.mean()) < 0.1
    assert demo.ccc_with_outlier.mean() > 0.6
    x, out = appendix.outlier_data(3)
    assert out.sum() == 1 and out[-1]
    z = linkage(x, "average")
    assert z[-1, 3] == len(x) and set(z[-1, :2].astype(int)) & {len(x) - 1}


def test_fig_4_6_example_has_inversions():
    z, zp, meta = appendix.inversion_example(seed=0, runs=1, methods=("average",), n_mins=(5,))
    assert meta["inversions"] == count_inversions(z) > 0
    assert count_inversions(zp) == 0 and z.shape == zp.shape
