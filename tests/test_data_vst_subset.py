"""Issue 15: VST with the dispersion trend fitted on a seeded gene subset (DESeq2 ``vst(nsub)``)
agrees with the full pydeseq2 VST on a simulated cohort."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.data.preprocess import (
    preprocess_rnaseq,
    size_factor_normalise,
    vst,
)
from fedclust.data.vst_agreement import TIE_SE, variance_se, vst_agreement


def _simulate(samples: int, genes: int, seed: int) -> pd.DataFrame:
    """Negative-binomial counts, library-size variation, 4 subtypes (benchmarks/data_preprocess)."""
    gen = np.random.default_rng(seed)
    base = gen.normal(4.0, 1.8, size=genes)
    mu = np.exp(base)[None, :] * gen.lognormal(0, 0.4, size=(samples, 1))
    lab = gen.integers(0, 4, samples)
    mu = mu * np.exp((gen.normal(0, 1, (4, genes)) * (gen.random((4, genes)) < 0.1))[lab])
    n = 1.0 / (0.05 + 2.0 / (np.exp(base) + 1.0))
    counts = pd.DataFrame(
        gen.negative_binomial(n[None, :], n[None, :] / (n[None, :] + mu)),
        index=[f"s{i}" for i in range(samples)],
        columns=[f"g{j}" for j in range(genes)],
    )
    return counts.loc[:, (counts > 0).any(axis=0)]


@pytest.fixture(scope="module")
def cohort():
    counts = _simulate(200, 3000, 0)
    return counts, vst(counts)  # full pydeseq2 VST: the reference


def test_subset_vst_agrees_with_full_pydeseq2(cohort):
    counts, full = cohort
    sf, fast = preprocess_rnaseq(counts, None, vst_fit_genes=1000, seed=7)
    a, b = fast.to_numpy(), full.to_numpy()
    ac, bc = a - a.mean(0), b - b.mean(0)
    corr = (ac * bc).sum(0) / np.sqrt((ac**2).sum(0) * (bc**2).sum(0))
    assert corr.min() >= 0.999
    assert not np.array_equal(a, b)  # really a different (subset) fit
    assert np.abs(a - b).max() < 0.5  # log2 scale (measured 0.02-0.26 over seeds 0-4)
    # top-500 selection up to ties (fedclust.data.vst_agreement): every gene that changes sides
    # lies within 2 standard errors of its own variance estimate from the cut-off, and the subset
    # trend swaps fewer genes than re-drawing the samples does to the full VST's own selection
    # (measured, seeds 0-2: 9-20 swapped, all within 0.92 SE; bootstrap 36-44)
    agree = vst_agreement(fast, full, 500)
    assert agree["per_gene_corr_min"] >= 0.999
    assert 0 < agree["swapped"] <= 25
    assert agree["all_swaps_are_ties"] and agree["max_gap_to_cutoff_se"] <= TIE_SE
    assert agree["swapped"] < agree["bootstrap_swapped_median"]
    # size-factor normalised output is unchanged: the subset only feeds the dispersion trend
    np.testing.assert_allclose(sf.to_numpy(), size_factor_normalise(counts).to_numpy(), rtol=1e-12)


def test_subset_from_all_nonzero_genes_agrees_up_to_ties(cohort):
    """``vst_fit_pool="nonzero"``: the subset is drawn from the genes full pydeseq2 fits its
    trend on (TCGA size, 1188 × 20 000, 2000 genes: 8 of the top 2000 swapped, all within
    0.23 SE, against 58 for 1000 genes with mean > 5; benchmarks/README.md)."""
    counts, full = cohort
    _, fast = preprocess_rnaseq(counts, None, vst_fit_genes=1500, seed=7, vst_fit_pool="nonzero")
    agree = vst_agreement(fast, full, 500)
    assert agree["per_gene_corr_min"] >= 0.999 and agree["all_swaps_are_ties"]
    assert agree["swapped"] < agree["bootstrap_swapped_median"]
    assert not np.array_equal(fast.to_numpy(), full.to_numpy())
    with pytest.raises(ValueError, match="fit_pool"):
        vst(counts.iloc[:20, :50], fit_genes=20, fit_pool="all")


def test_subset_vst_is_seeded_and_falls_back_to_full(cohort):
    counts, full = cohort
    small = counts.iloc[:60, :300]
    one = vst(small, fit_genes=100, seed=3)
    np.testing.assert_array_equal(one.to_numpy(), vst(small, fit_genes=100, seed=3).to_numpy())
    assert not np.array_equal(one.to_numpy(), vst(small, fit_genes=100, seed=4).to_numpy())
    # more subset genes than candidates: the full pydeseq2 fit, bit for bit
    np.testing.assert_array_equal(vst(small, fit_genes=10**6).to_numpy(), vst(small).to_numpy())


def test_variance_se_matches_monte_carlo():
    """SE of a sample variance from the fourth moment = the SD of s² over replicates."""
    g = np.random.default_rng(0)
    for draw in (
        lambda size: g.normal(0, 2, size),
        lambda size: np.where(g.random(size) < 0.3, 3.0, 0.0) + g.normal(0, 1, size),  # mixture
    ):
        reps = draw((4000, 60))  # 4000 replicate samples of n = 60, one per row
        truth = reps.var(axis=1, ddof=1).std()
        est = np.mean([variance_se(draw((60, 1)))[0] for _ in range(400)])
        assert est == pytest.approx(truth, rel=0.08)
    x = g.normal(size=(5000, 1))
    assert variance_se(x)[0] == pytest.approx(np.sqrt(2 / 4999), rel=0.05)  # normal theory


def test_vst_agreement_flags_a_swap_that_is_not_a_tie():
    g = np.random.default_rng(1)
    full = pd.DataFrame(
        g.normal(size=(100, 40)) * np.linspace(1, 3, 40), columns=[f"g{j}" for j in range(40)]
    )
    same = vst_agreement(full, full, 10)
    assert same["swapped"] == 0 and same["all_swaps_are_ties"]
    fast = full.copy()
    fast["g0"] *= 10  # the lowest-variance gene jumps into the top 10: far from the cut-off
    bad = vst_agreement(fast, full, 10)
    assert bad["swapped"] == 1 and "g0" in bad["swapped_genes"]
    assert not bad["all_swaps_are_ties"] and bad["max_gap_to_cutoff_se"] > TIE_SE
