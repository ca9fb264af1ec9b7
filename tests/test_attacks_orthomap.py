"""The attacks' exactly orthogonal map on all genes (issue 16, seed 001 §8): no dense d × d Q."""

import numpy as np
import pytest
import torch

from fedclust.attacks.orthomap import OrthogonalMap, fresh_orthogonal, project
from fedclust.attacks.property_inference import _projection
from fedclust.attacks.reconstruction import pinv_reconstruction
from fedclust.hac.projection import orthogonal_transform


@pytest.mark.parametrize("d", [1, 2, 17, 64, 301])
def test_dense_form_is_orthogonal_and_matches_the_operator(d):
    q = OrthogonalMap(d, seed=5)
    qd = q.dense()
    np.testing.assert_allclose(qd @ qd.T, np.eye(d), atol=1e-12)
    np.testing.assert_allclose(q.T.dense(), qd.T, atol=1e-12)
    x = np.random.default_rng(0).normal(size=(9, d))
    np.testing.assert_allclose(x @ q, x @ qd, atol=1e-12)


def test_distances_norms_and_inverse_are_exact_on_many_genes():
    d = 55_000  # a TCGA cohort's genes: the dense Haar matrix would be 24 GB
    x = np.random.default_rng(1).gamma(2.0, 50.0, size=(6, d))
    q = OrthogonalMap(d, seed=11)
    y = x @ q
    assert y.shape == (6, d)
    dx = np.linalg.norm(x[:, None] - x[None], axis=2)
    dy = np.linalg.norm(y[:, None] - y[None], axis=2)
    np.testing.assert_allclose(dy, dx, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(y @ q.T, x, atol=1e-9)
    np.testing.assert_allclose(pinv_reconstruction(y, q), x, atol=1e-9)
    # the same transform as the HAC perturbation (fedclust.hac.projection, Alg. 2)
    np.testing.assert_array_equal(y, orthogonal_transform(x, 11, p=d))


def test_map_mixes_genes_and_depends_on_the_seed():
    d = 200
    e = np.eye(d)[:3]
    a, b = OrthogonalMap(d, 1).apply(e), OrthogonalMap(d, 2).apply(e)
    assert np.abs(a - b).max() > 0.1
    assert (np.abs(a) > 1e-8).sum(axis=1).min() > d // 2  # a unit vector is spread over genes


def test_attack_helpers_use_the_operator_for_orthogonal_and_a_matrix_for_gaussian():
    q = _projection(40, 40, "orthogonal", seed=3)
    assert isinstance(q, OrthogonalMap)
    g = _projection(40, 7, "gaussian", seed=3)
    assert isinstance(g, np.ndarray) and g.shape == (40, 7)
    x = np.random.default_rng(2).normal(size=(5, 40))
    np.testing.assert_allclose(project(x, g), x @ g)
    np.testing.assert_allclose(np.linalg.norm(project(x, q), axis=1), np.linalg.norm(x, axis=1))


def test_fresh_orthogonal_preserves_distances_and_changes_per_draw():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(8, 50, dtype=torch.float64)
    a, b = fresh_orthogonal(x, gen), fresh_orthogonal(x, gen)
    torch.testing.assert_close(torch.cdist(a, a), torch.cdist(x, x))
    assert (a - b).abs().max() > 0.1
    with pytest.raises(ValueError, match="size 50"):
        OrthogonalMap(50, 0).apply(np.ones((2, 49)))
