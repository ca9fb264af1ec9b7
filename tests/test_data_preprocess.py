"""pydeseq2 wrappers: median-of-ratios by hand, VST shape/finite/monotone, gene selection,
binary imputation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.data.preprocess import (
    impute_binary_frequency,
    preprocess_rnaseq,
    size_factor_normalise,
    size_factors,
    top_variable_genes,
    vst,
)
from fedclust.errors import InputDataError


def _frame(x, prefix="s"):
    x = np.asarray(x)
    return pd.DataFrame(
        x,
        index=[f"{prefix}{i}" for i in range(x.shape[0])],
        columns=[f"g{j}" for j in range(x.shape[1])],
    )


def test_size_factors_exact_by_hand():
    # sample 1 = 2 × sample 0, sample 2 = sample 0 / 2: geometric means = sample 0, s = 1, 2, 0.5
    x = _frame([[10, 20, 30, 40], [20, 40, 60, 80], [5, 10, 15, 20]])
    assert size_factors(x).to_numpy() == pytest.approx([1.0, 2.0, 0.5], rel=1e-12)
    norm = size_factor_normalise(x)
    assert norm.to_numpy() == pytest.approx(np.tile([10.0, 20.0, 30.0, 40.0], (3, 1)))


def test_size_factors_hand_computed_with_zero_gene():
    x = np.array([[4, 0, 9, 16, 100], [8, 3, 3, 4, 50], [2, 6, 27, 64, 10], [5, 5, 5, 5, 5]])
    # by hand: gene 1 has a zero → excluded; log geometric mean over samples; median of ratios
    keep = (x > 0).all(axis=0)
    logmu = np.log(x[:, keep]).mean(axis=0)
    expected = np.exp(np.median(np.log(x[:, keep]) - logmu, axis=1))
    got = size_factors(_frame(x)).to_numpy()
    assert got == pytest.approx(expected, rel=1e-10)


def _nb(n=30, g=200, seed=0):
    gen = np.random.default_rng(seed)
    mu = np.exp(gen.normal(3, 1.5, size=g))[None, :] * gen.lognormal(0, 0.3, size=(n, 1))
    return _frame(gen.negative_binomial(5, 5 / (5 + mu)))


def test_vst_shape_finite_monotone():
    counts = _nb()
    v = vst(counts)
    assert v.shape == counts.shape and list(v.index) == list(counts.index)
    assert np.isfinite(v.to_numpy()).all()
    norm = size_factor_normalise(counts).to_numpy()
    for j in range(0, counts.shape[1], 7):  # monotone in normalised counts within each gene
        order = np.argsort(norm[:, j], kind="stable")
        assert (np.diff(v.to_numpy()[order, j]) >= -1e-9).all()
    # log2-like scale: a gene with 4× the counts is ~2 units higher
    hi = v.mean().idxmax()
    assert v[hi].mean() > v.mean().mean() + 1


def test_preprocess_top_genes():
    counts = _nb(g=120)
    sf, v = preprocess_rnaseq(counts, top_genes=10)
    assert sf.shape == v.shape == (30, 10) and list(sf.columns) == list(v.columns)
    assert set(v.columns) == set(vst(counts).var().nlargest(10).index)
    assert top_variable_genes(v, None) == list(v.columns)


@pytest.mark.parametrize(
    "values, message",
    [
        ([[1, 2.5], [3, 4]], "non-integer"),
        ([[1, -2], [3, 4]], "negative"),
        ([[1, np.nan], [3, 4]], "NaN"),
        ([[0, 2], [3, 0]], "every gene has a zero count"),
    ],
)
def test_bad_counts(values, message):
    with pytest.raises(InputDataError, match=message):
        size_factors(_frame(values))


def test_impute_binary_frequency_values():
    x = pd.DataFrame(
        {"a": [1, 0, np.nan, 1], "b": [0, 0, np.nan, np.nan], "c": [1, 1, 1, 0]},
        index=list("pqrs"),
    )
    out, n_nan = impute_binary_frequency(x)
    assert out.loc["r", "a"] == pytest.approx(2 / 3)
    assert out.loc["r", "b"] == 0 and out.loc["s", "b"] == 0
    assert out["c"].tolist() == [1, 1, 1, 0]
    assert n_nan.to_dict() == {"a": 1, "b": 2, "c": 0}


def test_impute_all_nan_and_non_binary():
    with pytest.raises(InputDataError, match=r"column\(s\) b are entirely NaN"):
        impute_binary_frequency(pd.DataFrame({"a": [1, 0], "b": [np.nan, np.nan]}))
    with pytest.raises(InputDataError, match="'a' holds values other than 0, 1 or NaN"):
        impute_binary_frequency(pd.DataFrame({"a": [1, 2]}))
