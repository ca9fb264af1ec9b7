"""Federated HAC (seed 001): invariants against scipy's pooled linkage and the thesis' numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.cluster.hierarchy import cophenet, is_valid_linkage
from scipy.spatial.distance import pdist

from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import Ledger
from fedclust.hac.federated import (
    center_sketch,
    perturbation_clustering,
    projection_clustering,
    server_linkage,
)
from fedclust.hac.genewise import genewise_clustering, pooled_gene_distances
from fedclust.hac.gradual import count_inversions, enforce_monotone, gradual_sharing
from fedclust.hac.pooled import LINKAGES, pooled_linkage
from fedclust.hac.projection import cauchy_distances, gaussian_distances, projection_matrix
from fedclust.hac.simultaneous import recursive_cut, simultaneous_sharing
from fedclust.hac.toy import bimodal
from fedclust.metrics.hierarchy import ccc, compare, flat_agreement, relative_cophenetic_error

# generated data, not patients: the protocols' own rules (tests/conftest.py, issue 22)
pytestmark = pytest.mark.usefixtures("synthetic_centres")


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(7)
    x = g.normal(size=(48, 6))
    centers = np.sort(g.integers(0, 3, 48))  # sorted: stacked blocks keep the row order
    return x, centers


def _same_tree(z1, z2):
    np.testing.assert_allclose(cophenet(z1), cophenet(z2), rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.sort(z1[:, 2]), np.sort(z2[:, 2]), atol=1e-10)


@pytest.mark.parametrize("method", LINKAGES)
def test_gradual_nmin1_is_pooled(data, method):
    x, c = data
    res = gradual_sharing(x, c, 1, method)
    assert is_valid_linkage(res.Z)
    _same_tree(res.Z, pooled_linkage(x, method))


@pytest.mark.parametrize("method", LINKAGES)
@pytest.mark.parametrize("n_min", [4, 11])
def test_gradual_one_center_is_pooled(data, method, n_min):
    x, _ = data
    res = gradual_sharing(x, np.zeros(len(x), int), n_min, method)
    _same_tree(res.Z, pooled_linkage(x, method))
    assert res.shares >= 1


@pytest.mark.parametrize("metric", ["cosine", "cityblock", "correlation"])
def test_gradual_nmin1_other_metrics(data, metric):
    x, c = data
    _same_tree(gradual_sharing(x, c, 1, "average", metric).Z, pooled_linkage(x, "average", metric))


def test_gradual_bimodal_step_at_18():
    """Figs 4.1–4.2: CCC ≈ 1 for small n_min, a drop to ≈ 0.4–0.5 from n_min = 18 (17 points of
    each mode per center)."""
    x, _, c = bimodal(3)
    for method in ("single", "average"):
        zp = pooled_linkage(x, method)
        assert ccc(gradual_sharing(x, c, 10, method).Z, zp) > 0.99
        assert ccc(gradual_sharing(x, c, 17, method).Z, zp) > 0.99
        assert ccc(gradual_sharing(x, c, 18, method).Z, zp) < 0.6


def test_gradual_shares_only_groups_of_nmin(data):
    x, c = data
    led = Ledger()
    res = gradual_sharing(x, c, 5, "ward", ledger=led)
    t = led.table()
    cents = t[t.kind == "centroid"]
    assert len(cents) == res.shares > 0
    assert res.bad_radicands == 0
    # every centroid message: one d-vector + one size ≥ n_min + the cluster id
    assert (cents.floats == x.shape[1] + 2).all()
    # the centres' answers; the server's requests carry the broadcasts (merges, centroids)
    kinds = {"setup", "min", "centroid", "correction", "local row", "global row", "delta",
             "view distances", "finish"}  # fmt: skip
    assert set(t.kind) <= kinds | {f"{k}_request" for k in kinds}
    sent = t[t.sender == "server"]
    assert set(sent.protocol) == {"hac.gradual.request"}


def test_monotone_variant(data):
    x, c = data
    res = gradual_sharing(x, c, 6, "centroid")
    mono = gradual_sharing(x, c, 6, "centroid", monotone=True)
    assert res.inversions > 0  # centroid linkage inverts even pooled
    assert count_inversions(mono.Z) == 0
    assert (mono.Z[:, 2] >= res.Z[:, 2] - 1e-12).all()
    np.testing.assert_array_equal(enforce_monotone(mono.Z), mono.Z)


def test_gradual_errors(data):
    x, c = data
    with pytest.raises(ConfigError, match="Euclidean"):
        gradual_sharing(x, c, 2, "ward", "cosine")
    with pytest.raises(InputDataError, match="no center holds"):
        gradual_sharing(x, c, 1000, "single")
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InputDataError, match="NaN"):
        gradual_sharing(bad, c, 2, "single")
    with pytest.raises(InputDataError, match="one center label per sample"):
        gradual_sharing(x, c[:-1], 2, "single")


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "cosine", "correlation"])
def test_genewise_equals_pooled(data, metric):
    x, c = data
    blocks = [x[c == k] for k in range(3)]
    led = Ledger()
    z, d = genewise_clustering(blocks, "average", metric, ledger=led)
    np.testing.assert_allclose(d, pooled_gene_distances(x, metric), rtol=0, atol=1e-10)
    _same_tree(z, pooled_linkage(x.T, "average", metric))
    rounds = 2 if metric in ("cosine", "correlation") else 1
    assert led.table()["round"].nunique() == rounds


def test_perturbation_exact(data):
    x, c = data
    z, d = perturbation_clustering([x[c == k] for k in range(3)], "ward", seed=5)
    np.testing.assert_allclose(d, pdist(x), atol=1e-10)
    _same_tree(z, pooled_linkage(x, "ward"))


def test_gaussian_sketch_unbiased():
    """Spec §0.4: ‖xQ − yQ‖² / d′ is unbiased for ‖x − y‖² with N(0,1) entries."""
    g = np.random.default_rng(0)
    x = g.normal(size=(40, 50))
    ratios = [
        np.mean(
            gaussian_distances(x @ projection_matrix(50, 20, "gaussian", s)) ** 2 / pdist(x) ** 2
        )
        for s in range(30)
    ]
    assert abs(np.mean(ratios) - 1) < 0.03


@pytest.mark.parametrize("estimator", ["geometric", "median"])
def test_cauchy_sketch_estimates_cityblock(estimator):
    g = np.random.default_rng(1)
    x = g.normal(size=(30, 40))
    ref = pdist(x, "cityblock")
    ests = [
        cauchy_distances(x @ projection_matrix(40, 200, "cauchy", s), estimator) for s in range(40)
    ]
    assert abs(np.median(np.mean(ests, axis=0) / ref) - 1) < 0.03  # (nearly) unbiased
    assert np.corrcoef(ests[0], ref)[0, 1] > 0.8
    assert np.isfinite(ests).all()


def test_projection_independent_of_split(data):
    x, c = data
    _, d1 = projection_clustering([x[c == k] for k in range(3)], "average", "euclidean", 8, 4)
    _, d2 = projection_clustering([x], "average", "euclidean", 8, 4)
    np.testing.assert_allclose(d1, d2, atol=1e-12)


def test_projection_server_sees_only_sketches(data):
    x, c = data
    from fedclust.hac.federated import SKETCH

    led = Ledger()
    msgs = [
        led.send(f"c{k}", "server", center_sketch(x[c == k], "cosine", 3, 9, x.shape[1]), 0,
                 "sketch", protocol=SKETCH, downlink=False)
        for k in range(3)
    ]  # fmt: skip
    assert all(set(m) == {"y"} and m["y"].shape[1] == 3 for m in msgs)
    assert led.n_floats == 3 * len(x)
    z, d = server_linkage(msgs, "average", "cosine")
    assert z.shape == (len(x) - 1, 4) and d.min() >= 0
    with pytest.raises(TypeError, match="privacy boundary"):
        led.send("c0", "server", {"y": pd.DataFrame(x)}, protocol=SKETCH, downlink=False)


def test_recursive_cut_smallest_clusters():
    x, _, _ = bimodal(0)
    z = pooled_linkage(x, "average")
    n = len(x)
    sizes = np.concatenate([np.ones(n), z[:, 3]])
    for n_min in (1, 5, 30):
        nodes = recursive_cut(z, n, n_min)
        assert sizes[nodes].sum() == n and (sizes[nodes] >= n_min).all()
        for v in nodes:  # minimal: cannot descend into both children
            if v >= n:
                a, b = z[v - n, :2].astype(int)
                assert min(sizes[a], sizes[b]) < n_min or n_min == 1 and False
    assert recursive_cut(z, n, 1) == list(range(n))


@pytest.mark.parametrize("method", LINKAGES)
def test_simultaneous_nmin1_is_pooled(data, method):
    x, c = data
    z = simultaneous_sharing([x[c == k] for k in range(3)], 1, method)
    assert is_valid_linkage(z)
    _same_tree(z, pooled_linkage(x, method))


def test_simultaneous_outlier_collapses():
    """§3.3.2.2: large n_min forces a whole center into one cluster: agreement degrades."""
    x, _, c = bimodal(1)
    order = np.argsort(c, kind="stable")
    x, c = x[order], c[order]
    zp = pooled_linkage(x, "average")
    blocks = [x[c == k] for k in range(3)]
    good = ccc(simultaneous_sharing(blocks, 3, "average"), zp)
    bad = ccc(simultaneous_sharing(blocks, 33, "average"), zp)  # 33/33/34: one cluster each
    assert good > 0.95 and bad < good


def test_metrics_reference(data):
    x, _ = data
    za, zs = pooled_linkage(x, "average"), pooled_linkage(x, "single")
    r = compare(za, za)
    assert r["ccc"] == pytest.approx(1) and r["rel_error"] == 0 and r["fmi"] == 1 and r["ari"] == 1
    assert ccc(zs, za) == pytest.approx(np.corrcoef(cophenet(zs), cophenet(za))[0, 1])
    fl = flat_agreement(zs, za, 5)
    assert list(fl["k"]) == [2, 3, 4, 5] and (fl["fmi"] <= 1).all()
    assert relative_cophenetic_error(zs, za) > 0


def test_load_cohort_messages(tmp_path):
    from fedclust.hac.experiments import load_cohort
    from fedclust.io import write_table

    ids = [f"s{i}" for i in range(6)]
    x = pd.DataFrame(np.arange(18.0).reshape(6, 3), index=ids)
    x.columns = ["g1", "g2", "g3"]
    write_table(tmp_path / "vst.parquet", x)
    obs = pd.DataFrame({"center": ["South", "West", None, "South", "West", "West"]}, index=ids)
    write_table(tmp_path / "obs.tsv", obs)
    data, centers = load_cohort({"vst": tmp_path / "vst.parquet"}, tmp_path / "obs.tsv")
    assert data["vst"].shape == (5, 3) and list(centers) == [0, 1, 0, 1, 1]
    write_table(tmp_path / "bad.tsv", obs.rename(columns={"center": "region"}))
    with pytest.raises(InputDataError, match="no 'center' column"):
        load_cohort({"vst": tmp_path / "vst.parquet"}, tmp_path / "bad.tsv")
    write_table(tmp_path / "vst2.parquet", x.iloc[:3])
    with pytest.raises(InputDataError, match="missing from the matrix"):
        load_cohort({"vst": tmp_path / "vst2.parquet"}, tmp_path / "obs.tsv")


def test_experiment_tables_small():
    from fedclust.hac.experiments import gradual_table, nmin_grid, projection_table

    assert nmin_grid(250, [2, 5, 10, 15, 25, 40], 0.1) == [2, 5, 10, 15, 25]
    assert nmin_grid(120, [2, 5, 10, 15], 0.1) == [2, 5, 10, 12]
    x, _, c = bimodal(2)
    g = gradual_table(x, c, ["single", "ward"], "cosine", [1, 5], 5)
    assert set(g.linkage) == {"single"}  # ward needs Euclidean: skipped
    assert g.loc[g.n_min == 1, "ccc"].iloc[0] == pytest.approx(1.0)
    p = projection_table(x, c, ["average"], "euclidean", [2], 2, 0, 5)
    assert len(p) == 2 and (p.rounds == 1).all() and (p.floats == 2 * len(x)).all()


def test_communication_matches_thesis_formulas(data):
    """Spec §4, §5.1, §5.3, §6: what crosses the boundary and how often."""
    x, c = data
    n, d = x.shape
    blocks = [x[c == k] for k in range(3)]
    # genewise: per center one condensed d × d contribution (+ gene stats for cosine)
    led = Ledger()
    genewise_clustering(blocks, "average", "euclidean", ledger=led)
    t = led.table()
    up = t[t.sender != "server"]  # the server's requests carry nothing (transport seam)
    assert (up.floats == d * (d - 1) // 2 + 1).all() and len(up) == 3  # + n
    assert len(t) == 6 and t[t.sender == "server"].floats.sum() == 0
    # simultaneous: one round, per center (#clusters) centroids of dimension d
    led = Ledger()
    simultaneous_sharing(blocks, 4, "average", ledger=led)
    t = led.table()
    assert led.n_messages == 6 and t["round"].nunique() == 1
    # the server's request to each centre (transport seam) carries nothing
    assert (t.sender == "server").sum() == 3 and t[t.sender == "server"].floats.sum() == 0
    # gradual: n − 1 merge rounds; a centroid never describes fewer than n_min points
    led = Ledger()
    gradual_sharing(x, c, 4, "average", ledger=led)
    t = led.table()
    assert t["round"].nunique() == n - 1
    # a candidate from every centre while it holds a local (unpublished) cluster, then none
    per = t[t.kind == "min"].groupby("round").size().reindex(range(n - 1), fill_value=0)
    assert per.iloc[0] == 3 and (per.diff().dropna() <= 0).all() and per.iloc[-1] < 3


def test_center_messages_hold_no_samples(data):
    """Server-side inputs of every method: no field has one row per sample of a center."""
    from fedclust.hac.genewise import center_gene_distances, center_gene_stats
    from fedclust.hac.simultaneous import center_simultaneous

    x, c = data
    xk = x[c == 0]
    msgs = [
        center_gene_stats(xk),
        center_gene_distances(xk, "euclidean", None),
        center_simultaneous(xk, "average", "euclidean", 5),
    ]
    for m in msgs:
        for v in m.values():
            if isinstance(v, np.ndarray) and v.ndim == 2:
                assert v.shape[0] < len(xk) / 2 or v.shape[1] != x.shape[1]
    cents = msgs[2]["centroids"]
    assert (msgs[2]["sizes"] >= 5).all() and cents.shape[0] == msgs[2]["sizes"].size


def test_check_panels_message():
    from fedclust.hac.experiments import check_panels

    assert check_panels([["vst", "cosine"]], ("cosine",), "x") == [("vst", "cosine")]
    with pytest.raises(ConfigError, match="bad panel"):
        check_panels([["euclidean", "vst"]], ("euclidean",), "hac.gradual.panels")


def test_gradual_dmin_privacy_option(data):
    x, c = data
    base = gradual_sharing(x, c, 5, "average")
    same = gradual_sharing(x, c, 5, "average", d_min=1e-9)
    np.testing.assert_allclose(same.Z, base.Z)
    floor = np.quantile(pdist(x), 0.2)
    res = gradual_sharing(x, c, 5, "average", d_min=floor)
    assert is_valid_linkage(res.Z) and res.Z[:, 2].min() >= floor - 1e-12
    # all points shared at once (n_min = 1): the server knows every distance, d_min is moot
    _same_tree(gradual_sharing(x, c, 1, "single", d_min=floor).Z, pooled_linkage(x, "single"))
    with pytest.raises(ConfigError, match="d_min"):
        gradual_sharing(x, c, 5, "average", d_min=-1)
