"""Issue 15/16: streamed shared-seed projections, very sparse projections, scalable orthogonal
perturbation (exact distances without a dense d × d matrix)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from fedclust.federation import Ledger
from fedclust.hac import projection as P
from fedclust.hac.federated import (
    center_sketch,
    perturbation_clustering,
    projection_center_costs,
    projection_clustering,
)
from fedclust.hac.projection import (
    BLOCK_ROWS,
    orthogonal_transform,
    project_centers,
    project_own,
    projection_blocks,
    projection_matrix,
    sparse_s,
)

# generated data, not patients: the protocols' own rules (tests/conftest.py, issue 22)
pytestmark = pytest.mark.usefixtures("synthetic_centres")


@pytest.fixture(scope="module")
def xc():
    g = np.random.default_rng(3)
    x = g.normal(size=(60, 9000)) + 3 * (g.random((60, 1)) < 0.5)
    return x, g.integers(0, 4, 60)


@pytest.mark.parametrize("kind", ["gaussian", "cauchy", "sparse"])
def test_streamed_blocks_equal_full_matrix_and_per_center_projection(xc, kind):
    x, c = xc
    blocks = list(projection_blocks(x.shape[1], 7, kind, seed=11))
    assert len(blocks) == -(-x.shape[1] // BLOCK_ROWS)  # memory O(BLOCK_ROWS × k)
    assert all(stop - start <= BLOCK_ROWS for start, stop, _ in blocks)
    q = projection_matrix(x.shape[1], 7, kind, seed=11)
    parts = [x[c == k] for k in range(4)]
    ys = project_centers(parts, 7, kind, seed=11, dtype="float64")
    # drawn once for all simulated centers == every center drawing Q itself
    for part, y in zip(parts, ys, strict=True):
        np.testing.assert_allclose(y, part @ q, rtol=1e-12, atol=1e-9)
        if kind != "cauchy":
            ref = center_sketch(part, "euclidean", 7, 11, x.shape[1], kind=kind, dtype="float64")
            np.testing.assert_array_equal(ref["y"], y)


@pytest.mark.parametrize(("kind", "dtype", "threads"),
                         [("gaussian", "float32", 1), ("gaussian", "float64", 2),
                          ("sparse", "float32", 1), ("cauchy", "float64", 2)])  # fmt: skip
def test_each_centre_drawing_q_itself_is_its_row_of_the_simulation_and_draws_once(
    xc, kind, dtype, threads, monkeypatch
):
    """A centre's own X Q (Q drawn by the centre from the shared seed) is bit for bit its row of
    project_centers (Q drawn once for all); the centres of one process share the drawn blocks:
    each block is drawn once, whatever the number of centres; beyond CACHE_BYTES each centre
    streams Q again (same numbers)."""
    x, c = xc
    parts = [x[c == k] for k in range(4)]
    ref = project_centers(parts, 6, kind, 5, dtype, threads=threads)
    drawn = []
    real = P._block_b
    monkeypatch.setattr(P, "_block_b", lambda *a, **k: drawn.append(a[-1]) or real(*a, **k))
    P._SHARED.clear()
    for part, y in zip(parts, ref, strict=True):
        assert np.array_equal(project_own(part, 6, kind, 5, dtype, threads=threads), y)
    assert sorted(drawn) == list(range(-(-x.shape[1] // BLOCK_ROWS)))  # once per block
    monkeypatch.setattr(P, "CACHE_BYTES", 0)
    drawn.clear()
    assert np.array_equal(project_own(parts[0], 6, kind, 5, dtype, threads=threads), ref[0])
    assert len(drawn) == -(-x.shape[1] // BLOCK_ROWS)


def test_threaded_blocks_equal_sequential(xc):
    x, c = xc
    parts = [x[c == k] for k in range(4)]
    one = project_centers(parts, 9, "gaussian", 3, "float64")
    two = project_centers(parts, 9, "gaussian", 3, "float64", threads=2)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-10)


def test_float32_sketch_error_is_tiny(xc):
    x, c = xc
    parts = [x[c == k] for k in range(4)]
    kw = {"method": "average", "metric": "euclidean", "k": 200, "seed": 2}
    _, d32 = projection_clustering(parts, dtype="float32", **kw)
    _, d64 = projection_clustering(parts, dtype="float64", **kw)
    assert np.max(np.abs(d32 / d64 - 1)) < 1e-4  # float32 arithmetic vs the JL error ~ 1/√k
    assert np.max(np.abs(d32 / d64 - 1)) > 0  # really computed in float32


def test_very_sparse_projection_distortion(xc):
    """Li, Hastie & Church (2006): s = √d, E q² = 1, ‖Δy‖²/k unbiased for ‖Δx‖²."""
    x, _ = xc
    d = x.shape[1]
    q = projection_matrix(d, 300, "sparse", seed=4)
    s = sparse_s(d)
    assert s == pytest.approx(np.sqrt(d))
    assert np.mean(q != 0) == pytest.approx(1 / s, rel=0.05)
    assert set(np.unique(q)) == {-np.sqrt(np.float32(s)), 0.0, np.sqrt(np.float32(s))}
    ref = pdist(x)
    ratios = []
    for seed in range(6):
        _, dist = projection_clustering([x], "average", "euclidean", 300, seed, kind="sparse")
        ratios.append(dist**2 / ref**2)
        assert np.median(np.abs(dist / ref - 1)) < 0.06  # ~ 1/√(2k) for k = 300
    assert abs(np.mean(ratios) - 1) < 0.02
    # the cost each center would spend: n_c · nnz(Q) vs n_c · d · k dense
    dense = projection_center_costs([x], "euclidean", 300)
    sparse = projection_center_costs([x], "euclidean", 300, kind="sparse")
    assert sparse[0] == pytest.approx(dense[0] / s)
    with pytest.raises(ValueError, match="Cauchy"):
        projection_clustering([x], "average", "cityblock", 10, 1, kind="sparse")


def test_projection_ledger_counts_each_center(xc):
    x, c = xc
    led = Ledger()
    parts = [x[c == k] for k in range(4)]
    projection_clustering(parts, "ward", "euclidean", 25, 1, ledger=led, run=3)
    t = led.messages()
    up, down = t[t["sender"] != "server"], t[t["sender"] == "server"]
    assert len(up) == 4 and up["floats"].sum() == 25 * len(x)
    # the server's request names the sketch and the run, never Q's seed (each site derives it)
    assert set(down["fields"]) == {"dtype,k,kind,run"}


@pytest.mark.parametrize("p", [None, 9001, 10000])
def test_orthogonal_transform_exact_distances(xc, p):
    x, c = xc
    y = orthogonal_transform(x, seed=5, p=p)
    assert y.shape == (len(x), p or x.shape[1])
    np.testing.assert_allclose(pdist(y), pdist(x), rtol=1e-10, atol=0)
    assert not np.allclose(np.abs(y[:, : x.shape[1]]), np.abs(x))  # really mixed
    order = np.argsort(c, kind="stable")  # the server stacks the centers' rows
    _, dist = perturbation_clustering([x[c == k] for k in range(4)], "average", 5, p=p)
    np.testing.assert_allclose(dist, pdist(x[order]), rtol=1e-10)


def test_orthogonal_transform_is_an_orthogonal_matrix():
    q = orthogonal_transform(np.eye(37), seed=1)
    np.testing.assert_allclose(q @ q.T, np.eye(37), atol=1e-12)
    np.testing.assert_allclose(q.T @ q, np.eye(37), atol=1e-12)
    np.testing.assert_array_equal(orthogonal_transform(np.eye(37), seed=1), q)  # shared seed
    assert not np.allclose(orthogonal_transform(np.eye(37), seed=2), q)
    with pytest.raises(ValueError, match="p ≥ d"):
        orthogonal_transform(np.eye(4), seed=1, p=3)


def test_orthogonal_transform_all_genes():
    """~55 000 genes (TCGA, all genes): a dense Q would be 24 GB; this runs in O(rows × d)."""
    g = np.random.default_rng(0)
    x = g.normal(8, 2, size=(12, 55_000))
    y = orthogonal_transform(x, seed=9, rows=5)
    np.testing.assert_allclose(pdist(y), pdist(x), rtol=1e-10)


def test_cauchy_sketch_is_float64_and_finite(xc):
    x, c = xc
    ys = project_centers([x[c == k] for k in range(4)], 50, "cauchy", 1, dtype="float32")
    assert all(y.dtype == np.float64 and np.isfinite(y).all() for y in ys)


def test_gaussian_blocks_equal_torch_reference_and_follow_jl_scaling():
    """Same seed → same matrix: each block is ``torch.randn`` of its derived seed (reference
    implementation); ‖Δy‖²/k is unbiased for ‖Δx‖² with relative variance 2/k (JL)."""
    import torch

    from fedclust.hac.projection import block_seed

    d, k = BLOCK_ROWS + 300, 64
    for b, (start, stop, qb) in enumerate(projection_blocks(d, k, "gaussian", seed=5)):
        g = torch.Generator().manual_seed(block_seed(d, k, "gaussian", 5, b))
        np.testing.assert_array_equal(qb, torch.randn(stop - start, k, generator=g).numpy())
        assert qb.dtype == np.float32
    np.testing.assert_array_equal(
        projection_matrix(d, k, "gaussian", 5), projection_matrix(d, k, "gaussian", 5)
    )
    assert not np.array_equal(
        projection_matrix(d, k, "gaussian", 5), projection_matrix(d, k, "gaussian", 6)
    )
    q = projection_matrix(d, k, "gaussian", 5)
    assert abs(q.mean()) < 0.01 and abs(q.var() - 1) < 0.01  # N(0, 1) entries
    g = np.random.default_rng(1)
    x = g.normal(size=(30, 2000)) * g.uniform(0.5, 2, size=(30, 1))
    ref = pdist(x) ** 2
    ratios = np.array(
        [
            pdist(project_centers([x], 400, "gaussian", s, "float64")[0]) ** 2 / 400 / ref
            for s in range(8)
        ]
    )
    assert abs(ratios.mean() - 1) < 0.01  # unbiased (8 × 435 pairs)
    assert ratios.var() == pytest.approx(2 / 400, rel=0.15)  # χ²_k / k: variance 2/k
