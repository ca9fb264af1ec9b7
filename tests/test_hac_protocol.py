"""Issue 13/16/17 for seed 001: the HAC protocols at the privacy boundary, stable genewise
moments, abstentions and skipped n_min settings."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from fedclust.errors import ConfigError, InputDataError
from fedclust.hac.genewise import (
    center_gene_stats,
    combine_moments,
    genewise_clustering,
    pooled_gene_distances,
    server_gene_stats,
)
from fedclust.ledger import Ledger


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(7)
    x = g.normal(size=(48, 6))
    centers = np.sort(g.integers(0, 3, 48))
    return x, centers


def test_chan_merge_matches_numpy():
    g = np.random.default_rng(1)
    a, b = g.normal(5, 2, (7, 4)), g.normal(-1, 3, (11, 4))
    n, mean, m2 = combine_moments(7, a.mean(0), ((a - a.mean(0)) ** 2).sum(0), 11, b.mean(0),
                                  ((b - b.mean(0)) ** 2).sum(0))  # fmt: skip
    both = np.vstack([a, b])
    assert n == 18
    np.testing.assert_allclose(mean, both.mean(0), rtol=1e-14)
    np.testing.assert_allclose(m2, both.var(0) * 18, rtol=1e-12)


def test_genewise_large_means_stable():
    """Gene means ≈ 1e4 with spread 1e-2: Σx² − n·mean² loses ~4 digits, the merge does not."""
    g = np.random.default_rng(3)
    x = 1e4 + g.normal(0, 1e-2, (60, 8)) + g.normal(0, 1e-2, 8)
    blocks = [x[:5], x[5:25], x[25:]]
    ref = pdist(x.T, "correlation")
    _, d = genewise_clustering(blocks, "average", "correlation")
    np.testing.assert_allclose(d, ref, rtol=0, atol=1e-9)
    # the one-pass formula this replaces is visibly wrong on the same data
    s, ss, n = x.sum(0), (x**2).sum(0), len(x)
    naive = np.sqrt(np.maximum(ss - n * (s / n) ** 2, 0))
    exact = np.sqrt(((x - x.mean(0)) ** 2).sum(0))
    assert np.abs(naive / exact - 1).max() > 1e-6
    stats = server_gene_stats([center_gene_stats(b) for b in blocks])
    np.testing.assert_allclose(stats["cnorm"], exact, rtol=1e-10)


@pytest.mark.parametrize("value", [0.1, 12345.678, -3.3e7, 1e-300])
def test_genewise_constant_gene_detected_exactly(value):
    g = np.random.default_rng(4)
    x = g.normal(100, 1, (30, 5))
    x[:, 2] = value
    blocks = [x[:3], x[3:17], x[17:]]
    stats = server_gene_stats([center_gene_stats(b) for b in blocks])
    assert stats["constant"].tolist() == [0, 0, 1, 0, 0]
    assert stats["cnorm"][2] == 0.0
    with pytest.raises(ConfigError, match="constant"):
        genewise_clustering(blocks, "average", "correlation")


def test_genewise_constant_per_center_but_not_globally():
    """Constant inside each center with different values: not constant, equals pooled."""
    g = np.random.default_rng(5)
    x = g.normal(0, 1, (30, 4))
    x[:10, 1], x[10:, 1] = 7.0, 9.0
    blocks = [x[:10], x[10:20], x[20:]]
    stats = server_gene_stats([center_gene_stats(b) for b in blocks])
    assert stats["constant"].sum() == 0
    _, d = genewise_clustering(blocks, "average", "correlation")
    np.testing.assert_allclose(d, pooled_gene_distances(x, "correlation"), atol=1e-12)


def test_genewise_small_center_abstains(data):
    x, c = data
    blocks = [x[c == k] for k in range(3)] + [x[:1]]  # a 1-sample fourth center
    led = Ledger()
    _, d = genewise_clustering(blocks, "average", "correlation", ledger=led, n_min=2)
    np.testing.assert_allclose(d, pooled_gene_distances(x, "correlation"), atol=1e-12)
    t = led.table()
    assert "center3" not in set(t[t.kind != "abstain"].sender)
    assert led.n_abstentions == 2  # both rounds
    with pytest.raises(InputDataError, match="n_min"):
        genewise_clustering(blocks, "average", "euclidean", n_min=100)
