"""Known-answer tests for the attacks stage (seed 001 §8)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from fedclust.attacks import known_io
from fedclust.attacks.data import sex_labels, split_preprocess
from fedclust.attacks.nets import LinearDecoder
from fedclust.attacks.property_inference import (
    TrainSpec,
    property_inference_tests,
    run_property_inference,
)
from fedclust.attacks.reconstruction import (
    mmd2_unbiased,
    pinv_reconstruction,
    relative_error,
    run_reconstruction,
)
from fedclust.attacks.stats import compare
from fedclust.errors import ConfigError, InputDataError
from fedclust.hac.projection import project, projection_matrix


def planted_sex_counts(n: int = 160, d: int = 40, seed: int = 0, shift: float = 2.0):
    """NB counts with a planted sex signal (the data stage's simulator has none): the first 4
    genes are ``exp(shift)`` times higher in males; 2 cohorts."""
    g = np.random.default_rng(seed)
    sex = g.choice(["female", "male"], size=n, p=[0.6, 0.4])
    base = g.uniform(3, 7, size=d)
    lfc = np.zeros((n, d))
    lfc[sex == "male", :4] = shift
    lib = g.lognormal(0, 0.3, size=n)[:, None]
    mu = np.exp(base[None, :] + lfc) * lib
    counts = g.negative_binomial(10, 10 / (10 + mu)) + 1  # +1: no zero counts
    idx = [f"s{i}" for i in range(n)]
    cols = [f"g{j}" for j in range(d)]
    obs = pd.DataFrame(
        {"sex": sex, "cohort": np.where(np.arange(n) < n // 2, "SIMA", "SIMB")}, index=idx
    )
    return pd.DataFrame(counts, index=idx, columns=cols), obs


# --- known input-output attack ---------------------------------------------------------------


def test_known_io_all_pairs_known_gives_zero_error():
    x = np.random.default_rng(1).standard_normal((50, 10))
    eps = known_io.max_relative_error(x[20:], x[:20])  # 20 ≥ d known rows span R^10
    assert np.max(eps) < 1e-10


def test_known_io_bound_holds_for_sampled_consistent_inverse():
    g = np.random.default_rng(2)
    x = g.standard_normal((30, 12))
    q = projection_matrix(12, 12, "orthogonal", seed=3)
    y = project(x, q)
    known, unknown = np.arange(5), np.arange(5, 30)
    eps = known_io.max_relative_error(x[unknown], x[known])
    dist = known_io.distance_to_row_space(x[unknown], x[known])
    # by hand: d(x, X_k) from least squares
    coef = np.linalg.lstsq(x[known].T, x[unknown].T, rcond=None)[0]
    np.testing.assert_allclose(dist, np.linalg.norm(x[unknown].T - x[known].T @ coef, axis=0))
    for s in range(5):
        qh = known_io.sample_consistent_inverse(x[known], y[known], seed=s)
        np.testing.assert_allclose(qh.T @ qh, np.eye(12), atol=1e-10)
        np.testing.assert_allclose(x[known] @ qh, y[known], atol=1e-10)
        err = relative_error(y[unknown] @ qh.T, x[unknown])
        assert np.all(err <= eps + 1e-10)
    p = known_io.breach_probability(np.linalg.norm(x[unknown], axis=1), dist, 0.1)
    expect = (2 / np.pi) * np.arcsin(np.linalg.norm(x[unknown], axis=1) * 0.1 / (2 * dist))
    np.testing.assert_allclose(p, expect)
    np.testing.assert_allclose(
        known_io.breach_probability(np.linalg.norm(x[unknown], axis=1), dist, eps.max()), 1.0
    )


def test_known_io_curve_shrinks_with_known_fraction():
    x = np.random.default_rng(4).standard_normal((60, 30))
    curve = known_io.known_io_curve(x, [0.1, 0.3, 0.6], n_seeds=3, seed=0)
    med = curve.groupby("fraction").max_rel_error.median()
    assert med[0.1] > med[0.3] > 1e-3 > 1e-12 > med[0.6]  # 36 known rows span R^30


# --- reconstruction ----------------------------------------------------------------------------


def test_pinv_of_orthogonal_projection_reconstructs_exactly():
    x = np.random.default_rng(5).standard_normal((20, 15))
    for k in (15, 25):  # square, and k ≥ d (orthonormal rows)
        q = projection_matrix(15, k, "orthogonal", seed=1)
        np.testing.assert_allclose(pinv_reconstruction(project(x, q), q), x, atol=1e-10)
        dec = LinearDecoder(k, 15, "pinv", torch.as_tensor(q, dtype=torch.float32))
        with torch.no_grad():
            xh = dec(torch.as_tensor(project(x, q), dtype=torch.float32)).numpy()
        assert relative_error(xh, x).max() < 1e-5
    # Gaussian k < d loses information: the error is far from 0
    q = projection_matrix(15, 5, "gaussian", seed=1)
    assert relative_error(pinv_reconstruction(project(x, q), q), x).mean() > 0.5


def test_mmd2_unbiased_matches_bruteforce():
    g = np.random.default_rng(6)
    x, y, s = g.standard_normal((7, 3)), g.standard_normal((5, 3)) + 1, 1.3

    def k(a, b):
        return np.exp(-np.sum((a - b) ** 2) / (2 * s**2))

    m, n = len(x), len(y)
    ref = (
        sum(k(x[i], x[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
        + sum(k(y[i], y[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
        - 2 * sum(k(a, b) for a in x for b in y) / (m * n)
    )
    got = mmd2_unbiased(torch.as_tensor(x), torch.as_tensor(y), s).item()
    assert got == pytest.approx(ref, rel=1e-10)


def test_run_reconstruction_small():
    counts, obs = planted_sex_counts(n=80, d=20)
    cfg = {
        "n_runs": 1,
        "max_genes_no_zero": None,
        "max_genes_all": None,
        "batch_size": 40,
        "sigma_factors": [1.0],
        "n_projections": 2,
        "fig4_17_projections": [{"kind": "orthogonal"}, {"kind": "gaussian", "k": 10}],
        "fig4_18_k": [10],
        "fig4_18_pinv_k": [5, 30],
        "fig4_19_k": [10],
        "decoders": {
            "linear": {"lr": 1e-3, "epochs": 3, "optimizer": "adam"},
            "mlp": {"lr": 1e-3, "epochs": 3, "d_nn": 8},
        },
        "combined": {"k": 10, "d_nn": 8, "lrs": [1e-3], "epochs": 3, "batch_size": 16},
    }
    out = run_reconstruction(counts, obs, cfg, seed=0)
    err = out["errors"]
    assert set(err.experiment) == {"fig4_17", "fig4_18", "fig4_19"}
    assert (err.rel_error > 0).all() and len(err[err.experiment == "fig4_19"]) == 2 * 40
    pinv = out["pinv"].groupby("k").mean_rel_error.mean()
    assert pinv[30] < 1e-8 < 0.3 < pinv[5]  # k ≥ d: full row rank ⇒ exact
    c = out["combined"].iloc[0]
    assert 0 <= c.accuracy_original <= 1 and 0.5 <= c.majority_share_reconstruction <= 1
    assert out["tests"].comparison.str.contains("vst vs size_factors").all()


# --- property inference ------------------------------------------------------------------------


def test_classifier_beats_chance_on_planted_sex_signal():
    torch.set_num_threads(1)
    counts, obs = planted_sex_counts(n=200, d=40)
    spec = TrainSpec(d_nn=16, d_nn_small=8, lrs=(1e-2,), epochs=15, batch_size=32)
    acc = run_property_inference(
        counts,
        obs,
        conditions=[{"kind": "none"}, {"kind": "gaussian", "k": 10}],
        n_runs=2,
        spec=spec,
        seed=0,
    )
    none = acc[acc.condition == "none"].test_accuracy
    assert none.min() > 0.8  # majority share ≈ 0.6
    fixed = acc[(acc.condition == "gaussian(10)") & (acc.classifier == "fixed")].test_accuracy
    assert fixed.mean() > 0.7
    assert set(acc.classifier) == {"none", "invariant", "fixed"}
    tests = property_inference_tests(acc)
    assert "none vs gaussian(10) invariant" in set(tests.comparison)


def test_split_preprocess_is_separate_per_party():
    counts, _ = planted_sex_counts(n=40, d=10)
    att, cen = np.arange(20), np.arange(20, 40)
    xa, xc = split_preprocess(counts, att, cen, "size_factors", "no_zero", None)
    xa_alone, _ = split_preprocess(counts.iloc[:20].copy(), att, att, "size_factors", "all", None)
    np.testing.assert_allclose(xa.to_numpy(), xa_alone.to_numpy())
    assert list(xc.index) == list(counts.index[20:])


# --- statistics and errors -----------------------------------------------------------------------


def test_ttest_helper_matches_scipy_and_formula():
    a = np.array([0.76, 0.80, 0.71, 0.78, 0.77])
    b = np.array([0.52, 0.44, 0.58, 0.49, 0.61])
    r = compare(a, b)
    diff = a - b
    t = diff.mean() / (diff.std(ddof=1) / np.sqrt(5))
    assert r["paired_t"] == pytest.approx(t)
    assert r["paired_p"] == pytest.approx(2 * stats.t.sf(abs(t), 4))
    va, vb = a.var(ddof=1) / 5, b.var(ddof=1) / 5
    df = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 4)
    assert r["welch_df"] == pytest.approx(df)
    assert r["welch_p"] == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)


def test_bad_inputs_have_clear_messages():
    with pytest.raises(InputDataError, match="no 'sex' column"):
        sex_labels(pd.DataFrame({"x": [1]}))
    with pytest.raises(InputDataError, match="unexpected sex values"):
        sex_labels(pd.DataFrame({"sex": ["female", "alien"]}))
    counts, _ = planted_sex_counts(n=20, d=5)
    with pytest.raises(ConfigError, match="unknown preprocessing"):
        split_preprocess(counts, np.arange(10), np.arange(10, 20), "tpm", "all", None)
