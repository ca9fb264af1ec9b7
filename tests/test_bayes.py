"""The bayes stage (seed 003 ch. 4, issue 25): BBB pieces against library references, the PVI
invariants (conjugate: one sequential pass = the exact pooled posterior, synchronous damped
converges; one centre = centralized BBB exactly), every Δη through a Protocol with a sample
floor, FedAvg with one client = central SGD, the client splits and the headline's
"not comparable" rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from fedclust.bayes import bbb, centre, data, experiment, pooled, protocols, server
from fedclust.bayes import pvi as P
from fedclust.bayes.workflow import central_specs, federated_specs
from fedclust.federation import Ledger, federate, make_strategy
from fedclust.report.headline import row, sentence_for, table_rows, verdict

torch.set_num_threads(1)


# ------------------------------------------------------------------ conjugate PVI invariants
def _regression(n=240, d=3, m=4, seed=0):
    g = np.random.default_rng(seed)
    x = g.standard_normal((n, d))
    y = x @ g.standard_normal(d) + 0.5 * g.standard_normal(n)
    return x, y, g.integers(0, m, n)


def _conjugate(schedule, rounds, damping, x, y, owner, m, min_samples=3):
    centres = [
        centre.ConjugateCentre(
            f"c{i}", i, x[owner == i], y[owner == i], 0.25, min_samples=min_samples
        )
        for i in range(m)
    ]
    strategy = server.Scheduled(server.NaturalSum(var_max=1e12), schedule, None, 0)
    ledger = Ledger()
    serve = server.serve(
        strategy,
        P.isotropic_prior(x.shape[1], 1.0),
        rounds,
        {"damping": damping},
        protocols.pvi_delta(min_samples),
    )
    final, recs = federate(centres, serve, ledger=ledger)
    return final, recs, ledger


def test_pooled_posterior_mean_is_sklearn_ridge_and_natural_parameters_agree():
    x, y, _ = _regression()
    mean, cov = pooled.regression_posterior(x, y, 0.25, 1.0)
    np.testing.assert_allclose(mean, pooled.ridge_mean(x, y, 0.25, 1.0), rtol=1e-10, atol=1e-12)
    eta = P.add(P.isotropic_prior(3, 1.0), P.regression_likelihood(x, y, 0.25))
    assert P.relative_error(eta, pooled.regression_natural(x, y, 0.25, 1.0)) < 1e-12
    m2, c2 = P.full_to_moments(eta)
    np.testing.assert_allclose(m2, mean, rtol=1e-10)
    np.testing.assert_allclose(c2, cov, rtol=1e-10)


def test_sequential_pvi_reaches_the_exact_pooled_posterior_after_one_pass():
    x, y, owner = _regression()
    exact = pooled.regression_natural(x, y, 0.25, 1.0)
    final, recs, ledger = _conjugate("sequential", 4, 1.0, x, y, owner, 4)
    assert P.relative_error(final, exact) < 1e-12
    # before the pass is complete it is not there yet (the test can fail)
    final3, _, _ = _conjugate("sequential", 3, 1.0, x, y, owner, 4)
    assert P.relative_error(final3, exact) > 1e-3
    # one Δη per round, each from one centre, through the declared protocol
    up = ledger.messages().query("sender != 'server'")
    assert list(up["sender"]) == ["c0", "c1", "c2", "c3"]
    assert set(up["protocol"]) == {"bayes_pvi_delta"}


def test_synchronous_damped_pvi_converges_to_the_pooled_posterior():
    x, y, owner = _regression()
    exact = pooled.regression_natural(x, y, 0.25, 1.0)
    final, recs, _ = _conjugate("synchronous", 90, 0.25, x, y, owner, 4)
    errs = [P.relative_error(final, exact)]
    assert errs[0] < 1e-8
    assert all(r["clipped"] == 0 for r in recs)  # ε·M = 1: convex combination, never clipped
    short, _, _ = _conjugate("synchronous", 5, 0.25, x, y, owner, 4)
    assert P.relative_error(short, exact) > 1e-2
    # the library's unit gives the same numbers and reports them
    rounds, ledger, res = experiment.run_conjugate({"conjugate": {"n": 200, "rounds": 90}}, 3)
    assert res["sequential_relative_error"] < 1e-12 and res["synchronous_relative_error"] < 1e-8
    assert res["ridge_max_abs_diff"] < 1e-10


# ------------------------------------------------------------------------------ BBB pieces
def test_reparameterised_kl_matches_the_closed_form_within_the_mc_error():
    g = torch.Generator().manual_seed(0)
    n = 50
    mu = torch.randn(n, generator=g) * 0.3
    sigma = torch.rand(n, generator=g) * 0.5 + 0.1
    prior = bbb.GaussianPrior(*P.to_natural(np.full(n, 0.1), np.full(n, 0.8)))
    closed = float(prior.kl_closed(mu, sigma))
    ref = torch.distributions.kl_divergence(
        torch.distributions.Normal(mu, sigma),
        torch.distributions.Normal(torch.full((n,), 0.1), torch.full((n,), math.sqrt(0.8))),
    ).sum()
    assert closed == pytest.approx(float(ref), rel=1e-5)
    s = bbb.TrainSettings(kl="mc")
    rho = torch.as_tensor(bbb.softplus_inv(sigma.numpy()), dtype=torch.float32)
    draws = []
    for _ in range(4000):
        eps = torch.randn(n, generator=g)
        draws.append(float(bbb._kl(mu, rho, eps, mu + sigma * eps, prior, s)))
    se = np.std(draws) / math.sqrt(len(draws))
    assert abs(np.mean(draws) - closed) < 4 * se
    assert float(
        bbb._kl(mu, rho, None, None, prior, bbb.TrainSettings(kl="closed"))
    ) == pytest.approx(closed, rel=1e-6)


def test_scale_mixture_density_and_kl_weights():
    w = torch.linspace(-2, 2, 41)
    p = bbb.ScaleMixturePrior(0.25, math.exp(-1), math.exp(-7))
    ref = np.log(
        0.25 * stats.norm.pdf(w, 0, math.exp(-1)) + 0.75 * stats.norm.pdf(w, 0, math.exp(-7))
    )
    assert float(p.log_prob(w)) == pytest.approx(ref.sum(), rel=1e-5)
    b = bbb.kl_weights(10, "blundell")
    assert b.sum() == pytest.approx(1.0) and np.all(np.diff(b) < 0)
    np.testing.assert_allclose(b, 2.0 ** (10 - np.arange(1, 11)) / (2**10 - 1))
    assert bbb.kl_weights(400, "blundell").sum() == pytest.approx(1.0)  # no overflow
    np.testing.assert_allclose(bbb.kl_weights(4, "uniform"), 0.25)


def test_natural_parameter_algebra_and_positivity_guards():
    m, v = np.array([0.5, -1.0]), np.array([0.2, 3.0])
    back = P.from_natural(P.to_natural(m, v))
    np.testing.assert_allclose(back[0], m)
    np.testing.assert_allclose(back[1], v)
    eta, k = P.clip_precision([np.array([1.0, 1.0]), np.array([-1.0, 0.1])], var_max=2.0)
    assert k == 1 and eta[1][1] == -0.25 and P.is_valid(eta)
    prior = P.to_natural(np.zeros(2), np.ones(2))
    cav, k = P.reset_wide([np.array([5.0, 7.0]), np.array([-3.0, -1e-4])], prior, var_max=1.0)
    assert k == 1 and cav[0][1] == 0.0 and cav[1][1] == -0.5 and cav[0][0] == 5.0
    full, k = P.clip_precision([np.zeros(2), np.array([[0.5, 0.0], [0.0, -1.0]])], var_max=1.0)
    assert k == 1 and P.is_valid(full)


# --------------------------------------------------------------- one centre = centralized
def _small(n=150, seed=0):
    x, y = data.load_source("digits")
    g = np.random.default_rng(seed)
    i = g.permutation(len(y))
    return x[i[:n]], y[i[:n]], x[i[n : n + 60]], y[i[n : n + 60]]


def test_one_centre_pvi_equals_centralized_bbb_exactly():
    x, y, xt, yt = _small()
    layout = bbb.make_layout(64, [16], 10)
    s = bbb.TrainSettings(epochs=3, batch_size=32, lr=0.01, mc_test=3)
    init = pooled.initial_posterior(layout, {"rho_mean": -3.0, "rho_std": 0.1}, 7)
    prior_eta = list(bbb.gaussian_natural(layout.n_params, 1.0))
    # centralized BBB
    mu = torch.as_tensor(init[0]).clone()
    rho = torch.as_tensor(init[1]).clone()
    prior = pooled.make_prior({"prior": "gaussian", "sigma": 1.0}, layout.n_params, "cpu")
    bbb.fit_variational(
        mu,
        rho,
        torch.as_tensor(x),
        torch.as_tensor(y),
        layout,
        prior,
        s,
        bbb.Generators.from_seed(11),
    )
    # PVI, one centre, one sequential round, the same seeds
    c = centre.PVICentre("c0", 0, x, y, xt, yt, layout, s, 11, init, prior_eta)
    strategy = server.Scheduled(server.NaturalSum(var_max=1.0), "sequential", None, 0)
    serve = server.serve(
        strategy, prior_eta, 1, {"epochs": 3, "damping": 1.0}, protocols.pvi_delta(3)
    )
    final, _ = federate([c], serve, ledger=Ledger())
    assert torch.equal(c.mu, mu)
    assert torch.equal(c.sigma, torch.nn.functional.softplus(rho))
    eta = P.to_natural(
        mu.double().numpy(), (torch.nn.functional.softplus(rho).double() ** 2).numpy()
    )
    assert P.relative_error(final, eta) < 1e-12  # the server's q = BBB's q (one subtraction)
    # a different seed gives a different posterior (the test can fail)
    c2 = centre.PVICentre("c0", 0, x, y, xt, yt, layout, s, 12, init, prior_eta)
    c2.fit(prior_eta, {"epochs": 3})
    assert not torch.equal(c2.mu, mu)


def test_one_client_fedavg_equals_central_sgd_exactly():
    x, y, xt, yt = _small()
    layout = bbb.make_layout(64, [16], 10)
    s = bbb.TrainSettings(epochs=2, batch_size=32, lr=0.01, optimizer="sgd", momentum=0.5)
    w0 = bbb.init_weights(layout, 3)
    w = torch.as_tensor(w0).clone()
    bbb.fit_deterministic(
        w, torch.as_tensor(x), torch.as_tensor(y), layout, s, bbb.Generators.from_seed(5)
    )
    c = centre.FedAvgCentre("c0", 0, x, y, xt, yt, layout, s, 5)
    strategy = server.Scheduled(make_strategy("fedavg"), "synchronous", None, 0)
    serve = server.serve(strategy, [w0], 1, {"epochs": 2}, protocols.fedavg_fit(3))
    final, recs = federate([c], serve, ledger=Ledger())
    np.testing.assert_array_equal(final[0], w.numpy())
    assert recs[0]["participants"] == 1 and 0 <= recs[0]["clients_accuracy"] <= 1


# ------------------------------------------------------------------ protocols and floors
def test_every_delta_passes_the_protocol_and_small_centres_abstain():
    x, y, xt, yt = _small(n=40)
    layout = bbb.make_layout(64, [8], 10)
    s = bbb.TrainSettings(epochs=1, batch_size=16, mc_test=2)
    init = pooled.initial_posterior(layout, {"rho_mean": -3.0, "rho_std": 0.0}, 1)
    prior_eta = list(bbb.gaussian_natural(layout.n_params, 1.0))
    sizes = [(0, 20), (20, 22), (22, 40)]  # the middle centre holds 2 images
    cs = [
        centre.PVICentre(
            f"c{i}",
            i,
            x[a:b],
            y[a:b],
            xt[20 * i : 20 * i + 20],
            yt[20 * i : 20 * i + 20],
            layout,
            s,
            i,
            init,
            prior_eta,
        )
        for i, (a, b) in enumerate(sizes)
    ]
    ledger = Ledger()
    strategy = server.Scheduled(server.NaturalSum(var_max=1.0), "synchronous", None, 0)
    serve = server.serve(
        strategy, prior_eta, 2, {"epochs": 1, "damping": 0.5}, protocols.pvi_delta(3)
    )
    federate(cs, serve, ledger=ledger)
    t = ledger.table()
    up = t[(t["sender"] != "server") & (t["kind"] != "abstain")]
    assert set(up["sender"]) == {"c0", "c2"} and set(up["protocol"]) == {"bayes_pvi_delta"}
    assert (up["floats"] == 2 * layout.n_params + 6).all()  # Δη₁, Δη₂, n, n_test, 3 metrics
    ab = ledger.abstentions()
    assert list(ab["center"]) == ["c1", "c1"] and "min_samples=#" in ab["reason"].iloc[0]
    # a centre whose own stage floor is below the protocol's is refused by its guard
    cs[1].min_samples = 1
    cs[1].factor = None
    strategy = server.Scheduled(server.NaturalSum(var_max=1.0), "synchronous", None, 0)
    serve = server.serve(strategy, prior_eta, 1, {"epochs": 1}, protocols.pvi_delta(3))
    led = Ledger()
    federate(cs, serve, ledger=led)
    ab = led.abstentions()
    assert list(ab["center"]) == ["c1"] and "refused" in ab["reason"].iloc[0]


def test_pooled_method_needs_epochs_and_runs_are_reproducible():
    from fedclust.errors import ConfigError

    cfg = {
        "federated": {
            "n_clients": 3,
            "model": {"hidden": [8]},
            "local": {"epochs": 1, "batch_size": 64, "mc_test": 2},
            "splits": {"iid": {"kind": "equal"}},
            "methods": {
                "p": {"algorithm": "pooled"},
                "s": {
                    "algorithm": "pvi",
                    "schedule": "sampled",
                    "clients_per_round": 2,
                    "rounds": 2,
                    "damping": 0.6,
                },
            },
        },
        "conjugate": {"enabled": False},
    }
    d = data.build_dataset("digits", 1, 0.5, 0.0)
    with pytest.raises(ConfigError, match="no epochs"):
        experiment.run_federated_unit(cfg, d, "p", 1)
    a = experiment.run_federated_unit(cfg, d, "s__iid", 1)
    b = experiment.run_units("federated", cfg, d, ["s__iid"], 1)[0]
    pd.testing.assert_frame_equal(a[0], b[0])  # byte-identical tables run to run
    pd.testing.assert_frame_equal(a[1], b[1])
    assert a[2] == b[2]


def test_hierarchical_private_weights_never_leave_the_centre():
    cfg = {
        "data": {"source": "digits"},
        "init": {"rho_mean": -3.0},
        "federated": {
            "n_clients": 3,
            "model": {"hidden": [8]},
            "local": {"epochs": 1, "batch_size": 64, "mc_test": 2},
            "splits": {"iid": {"kind": "equal"}},
            "methods": {
                "h": {
                    "algorithm": "pvi",
                    "schedule": "synchronous",
                    "rounds": 2,
                    "damping": "auto",
                    "hierarchical": True,
                },
                "f": {
                    "algorithm": "pvi",
                    "schedule": "synchronous",
                    "rounds": 2,
                    "damping": "auto",
                },
            },
        },
        "conjugate": {"enabled": False},
    }
    d = data.build_dataset("digits", 1, 0.5, 0.0)
    d = {**d, "x_train": d["x_train"][:300], "y_train": d["y_train"][:300], "val": d["val"][:300]}
    r_h, led_h, res_h = experiment.run_federated_unit(cfg, d, "h__iid", 1)
    r_f, led_f, res_f = experiment.run_federated_unit(cfg, d, "f__iid", 1)
    up = lambda t: t[t["sender"] != "server"]  # noqa: E731
    assert list(up(led_h)["floats"]) == list(up(led_f)["floats"])  # same messages, no φ
    assert res_h["hierarchical"] and not res_f["hierarchical"]
    assert res_h["clients_accuracy"] != res_f["clients_accuracy"]


# ---------------------------------------------------------------------------- data, units
def test_client_splits():
    y = np.repeat(np.arange(10), 30)
    shards = data.split_clients(y, {"kind": "shards", "classes_per_client": 2}, 5, 0)
    assert all(len(np.unique(y[shards == c])) <= 2 for c in range(5))
    chunks = data.split_clients(y, {"kind": "chunks"}, 3, 0)
    np.testing.assert_array_equal(chunks, np.repeat([0, 1, 2], 100))  # VIRTUAL's np.split
    yt = np.repeat(np.arange(10), 10)
    tc = data.split_test(y, shards, yt, "shards", 5, 0)
    for c in range(5):  # a client's test images are of its own classes
        assert set(yt[tc == c]) <= set(y[shards == c])
    assert (tc >= 0).all()


def test_units_and_grouping_do_not_change_numbers():
    cfg = experiment.settings(
        {
            "priors": {
                "gaussian": {"neg_log_sigma": [0, 1]},
                "mixture": {"pi": [0.25, 0.75], "neg_log_sigma1": [0], "neg_log_sigma2": [6, 7]},
            },
            "federated": {
                "methods": {
                    "v": {"algorithm": "pvi", "schedule": "sampled"},
                    "p": {"algorithm": "pooled", "epochs": 2},
                }
            },
        }
    )
    c = central_specs(cfg)
    assert list(c) == [
        "sgd",
        "dropout",
        "gauss_0",
        "gauss_1",
        "mix_pi25_s0_s6",
        "mix_pi25_s0_s7",
        "mix_pi75_s0_s6",
        "mix_pi75_s0_s7",
    ]
    assert c["mix_pi75_s0_s7"]["sigma2"] == pytest.approx(math.exp(-7))
    assert list(federated_specs(cfg)) == ["v__iid", "v__noniid", "p", "conjugate"]
    small = {"conjugate": {"n": 60, "rounds": 3}}
    one = experiment.run_units("federated", small, None, ["conjugate"], 4)[0]
    again = experiment.run_federated_unit(small, None, "conjugate", 4)
    pd.testing.assert_frame_equal(one[0], again[0])


# ------------------------------------------------------------------- "not comparable" rows
def test_not_comparable_rows_are_shown_but_never_match():
    r = row("BBB test error, %", 1.32, 1.32, not_comparable="digits, not full MNIST")
    assert verdict(r) == "not compared"
    shown = table_rows({"rows": [r]})[0]
    assert shown["ours"] == "1.32" and shown["difference"] == "— (not comparable)"
    s = sentence_for([r, row("x", 1.0, 1.0)])
    assert "1 of 2 rows match" in s and "not comparable: digits, not full MNIST" in s


def test_idx_source_reads_the_train_and_test_files(tmp_path):
    """Full MNIST is read from the four IDX files (train + t10k) by the data stage's parser."""
    import gzip
    import struct

    def write(name, arr):
        with gzip.open(tmp_path / name, "wb") as fh:
            fh.write(bytes([0, 0, 8, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape))
            fh.write(arr.astype(">u1").tobytes())

    g = np.random.default_rng(0)
    x, y = g.integers(0, 256, (30, 28, 28)), np.arange(30) % 10
    files = {"train_images": x, "train_labels": y, "test_images": x[:12], "test_labels": y[:12]}
    for name, arr in files.items():
        write(f"{name}.gz", arr)
    d = data.build_dataset("idx", 1, validation_fraction=1 / 6,
                           idx={k: str(tmp_path / f"{k}.gz") for k in files})  # fmt: skip
    assert d["x_train"].shape == (30, 784) and d["x_test"].shape == (12, 784)
    np.testing.assert_allclose(d["x_train"][0], x[0].ravel() / 255.0, rtol=1e-6)
    assert d["val"].sum() == 5 and data.describe(d, "idx")["n_train_total"] == 30
