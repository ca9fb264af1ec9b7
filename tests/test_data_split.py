"""Center splits: seed 000 regression sizes, equal/dirichlet/column splits, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.data.split import make_split, spec_centers, split_by_column, split_table
from fedclust.errors import ConfigError, InputDataError


@pytest.mark.parametrize(
    "kind, sizes",
    [
        ("uniform", [223, 204, 213, 197, 218, 204, 169, 228, 201, 186]),
        ("skewed", [44, 300, 465, 495, 332, 204, 117, 52, 23, 11]),
    ],
)
def test_seed_000_regression_sizes(kind, sizes):
    c = make_split(2043, kind, 10, seed=51550, raw_seed=True)
    assert np.bincount(c, minlength=10).tolist() == sizes


def test_equal_split_sizes_disjoint_and_deterministic():
    c = make_split(103, "equal", 10, seed=7)
    sizes = np.bincount(c)
    assert sizes.max() - sizes.min() == 1 and sizes.sum() == 103 and len(c) == 103
    assert np.array_equal(c, make_split(103, "equal", 10, seed=7))
    assert not np.array_equal(c, make_split(103, "equal", 10, seed=8))
    members = [set(np.flatnonzero(c == k)) for k in range(10)]
    assert set().union(*members) == set(range(103))  # a partition: every sample exactly once
    assert sum(len(m) for m in members) == 103


def test_dirichlet_label_skew():
    labels = np.repeat(np.arange(10), 100)

    def max_share(alpha):
        c = make_split(labels, "dirichlet", 5, seed=3, alpha=alpha)
        assert len(c) == 1000 and np.bincount(c, minlength=5).min() > 0
        tab = pd.crosstab(c, labels).to_numpy()
        return (tab.max(axis=1) / tab.sum(axis=1)).mean()

    assert max_share(0.1) > 0.4 > max_share(1000.0)
    with pytest.raises(ConfigError, match="needs sample labels"):
        make_split(100, "dirichlet", 5, seed=1)


def test_errors():
    with pytest.raises(InputDataError, match=r"more centers \(6\) than samples \(5\)"):
        make_split(5, "equal", 6, seed=1)
    with pytest.raises(InputDataError, match="center\\(s\\) with zero samples"):
        make_split(12, "skewed", 10, seed=1)
    with pytest.raises(ConfigError, match="unknown split kind 'random'"):
        make_split(10, "random", 2, seed=1)


def test_column_split_and_table():
    obs = pd.DataFrame(
        {"center": ["South", "Europe", "South"], "label": ["a", "b", "a"]}, index=["x", "y", "z"]
    )
    assert split_by_column(obs, "center", spec_centers({"kind": "column"})).tolist() == [
        "South",
        "Europe",
        "South",
    ]
    with pytest.raises(InputDataError, match="missing column 'hospital'"):
        split_by_column(obs, "hospital", ["South"])
    with pytest.raises(InputDataError, match="values not among the split's centers: Europe"):
        split_by_column(obs, "center", ["South"])
    t = split_table(obs, {"kind": "equal", "n_centers": 2}, seed=1)
    assert list(t.columns) == ["sample_id", "center"] and set(t["center"]) == {"c00", "c01"}
