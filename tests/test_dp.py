"""Differential privacy in the federation core (issue 24): the accountant against dp-accounting,
the noise calibration, central DP-FedAvg in the round loop (clip at the centre, noise once on
the secure sum), DP-SGD's per-sample gradients and step, and the centre's own clip bound."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import torch
from dp_accounting.rdp import RdpAccountant

from fedclust.federation import Ledger, federate, fit_protocol, make_strategy, run_rounds
from fedclust.federation import privacy as PV
from fedclust.federation.dp import (
    ORDERS,
    Accountant,
    calibrate_gaussian,
    clip_rows,
    cluster_stats,
    laplace_rdp,
)
from fedclust.federation.dpsgd import DPSGD, per_sample_grads
from fedclust.federation.privacy import PrivacySettings
from fedclust.seeds import derive_seed

FIT = fit_protocol("test_dp_fit")


def _dp_accounting(*events, delta=1e-5) -> float:
    acc = RdpAccountant(list(ORDERS))
    for ev, count in events:
        acc.compose(ev, count)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize(("z", "t"), [(0.8, 1), (1.0, 10), (5.0, 100), (20.0, 3)])
def test_gaussian_epsilon_equals_dp_accounting(z, t):
    ours = Accountant().gaussian(z, t).epsilon(1e-5)
    ref = _dp_accounting((dp_accounting.GaussianDpEvent(z), t))
    assert abs(ours - ref) < 1e-6


def test_sampled_gaussian_and_laplace_compositions_equal_dp_accounting():
    ours = Accountant().sampled_gaussian(1.1, 0.01, 1000).epsilon(1e-5)
    ev = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1))
    assert abs(ours - _dp_accounting((ev, 1000))) < 1e-6
    # Laplace RDP (Mironov 2017, Prop. 6) against dp-accounting's
    rdp = laplace_rdp(1 / 0.3)
    acc = RdpAccountant(list(ORDERS))
    acc.compose(dp_accounting.LaplaceDpEvent(1 / 0.3), 1)
    np.testing.assert_allclose(rdp, acc._rdp, rtol=1e-9)
    # pure Laplace releases: basic composition is the smaller bound
    assert Accountant().laplace(0.3, 5).epsilon(1e-5) == pytest.approx(1.5)
    mixed = Accountant().gaussian(2.0, 3).laplace(0.5, 2)
    ref = _dp_accounting(
        (dp_accounting.GaussianDpEvent(2.0), 3), (dp_accounting.LaplaceDpEvent(2.0), 2)
    )
    assert abs(mixed.epsilon(1e-5) - ref) < 1e-6


@pytest.mark.parametrize("eps", [0.5, 1.0, 8.0])
def test_calibrated_noise_spends_the_budget(eps):
    z = calibrate_gaussian(eps, 1e-5, 10)
    spent = Accountant().gaussian(z, 10).epsilon(1e-5)
    assert spent <= eps and spent > eps * (1 - 1e-3)
    assert calibrate_gaussian(math.inf, 1e-5, 10) == 0.0


class Centre:
    def __init__(self, cid, shift, n):
        self.cid, self.shift, self.n_samples = cid, shift, n

    def fit(self, parameters, config):
        w = [np.asarray(parameters[0]) + self.shift, np.asarray(parameters[1]) - self.shift]
        return [a.astype(np.float32) for a in w], self.n_samples, {"loss": 1.0}


def _centres():
    rng = np.random.default_rng(0)
    return [Centre(f"c{i}", rng.normal(0, 0.5 + i, 20), 10 + i) for i in range(4)]


@pytest.mark.parametrize("secure", [False, True])
def test_central_dp_fedavg_is_the_noised_mean_of_clipped_updates(secure):
    """One round: new = old + (Σ clip(Δ_k) + N(0, (zC)²)) / K with the server's seeded draw;
    the same with and without secure aggregation (to fixed-point precision); the budget row
    says the configured ε."""
    st = PrivacySettings(secure_aggregation=secure, epsilon=2.0, clip=1.5, seed=9)
    w0 = [np.zeros(20, np.float32), np.ones(20, np.float32)]
    PV.budget_rows(reset=True)
    got = federate(
        _centres(),
        lambda ps: run_rounds(ps, make_strategy("fedavg"), w0, 1, {}, FIT, label="t", privacy=st),
        ledger=Ledger(),
    )
    z = calibrate_gaussian(2.0, 1e-5, 1)
    total = [np.zeros(20), np.zeros(20)]
    for c in _centres():
        new = c.fit(w0, {})[0]
        d = PV.clip_update(new, w0, 1.5)
        assert math.sqrt(sum(float((x * x).sum()) for x in d)) <= 1.5 + 1e-12
        total = [t + x for t, x in zip(total, d, strict=True)]
    rng = np.random.default_rng(derive_seed(9, "dp", "central", "t", 1))
    want = [w + (t + rng.normal(0, z * 1.5, t.shape)) / 4 for w, t in zip(w0, total, strict=True)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w.astype(np.float32), rtol=1e-6, atol=1e-6)
    (row,) = PV.budget_rows(reset=True)
    assert row["epsilon"] == pytest.approx(2.0, rel=1e-3) and row["releases"] == 1
    assert row["noise_multiplier"] == pytest.approx(z)


def test_a_centre_refuses_a_clip_above_its_own_bound():
    cs = _centres()
    for c in cs:
        c.privacy = PrivacySettings(epsilon=1.0, clip=0.5)
    led = Ledger()
    with pytest.raises(RuntimeError, match="every center abstained"):
        federate(
            cs,
            lambda ps: run_rounds(
                ps, make_strategy("fedavg"), [np.zeros(20), np.ones(20)], 1, {}, FIT,
                privacy=PrivacySettings(epsilon=1.0, clip=1.0),
            ),
            ledger=led,
        )  # fmt: skip
    assert set(led.abstentions()["reason"]) == {
        "refused by the centre's privacy settings: dp-clip-required"
    }


def test_local_mechanism_is_not_the_round_loops():
    with pytest.raises(Exception, match="local DP"):
        federate(
            _centres(),
            lambda ps: run_rounds(
                ps, make_strategy("fedavg"), [np.zeros(20), np.ones(20)], 1, {}, FIT,
                privacy=PrivacySettings(epsilon=1.0, mechanism="local"),
            ),
        )  # fmt: skip


def _mse(out, y):
    return ((out - y) ** 2).mean(1)


def test_per_sample_gradients_opacus_functorch_and_autograd_agree():
    from fedclust.dec.model import TSAE

    torch.manual_seed(0)
    seq = torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.ReLU(), torch.nn.Linear(8, 12))
    x = torch.rand(6, 12)
    names = [n for n, _ in seq.named_parameters()]
    a, ua = per_sample_grads(seq, names, _mse, x, x, "auto")
    b, ub = per_sample_grads(seq, names, _mse, x, x, "functorch")
    assert (ua, ub) == ("opacus", "functorch")
    for i in range(len(x)):
        ref = torch.autograd.grad(_mse(seq(x[i : i + 1]), x[i : i + 1]).sum(), seq.parameters())
        for ga, gb, gr in zip(a, b, ref, strict=True):
            torch.testing.assert_close(ga[i], gr, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(gb[i], gr, rtol=1e-5, atol=1e-6)
    tsae = TSAE([12, 8, 4])  # tied weights: Opacus' hooks miss them, torch.func does not
    names = [n for n, _ in tsae.named_parameters()]
    c, uc = per_sample_grads(tsae, names, _mse, x, x, "auto")
    assert uc == "functorch"
    ref = torch.autograd.grad(_mse(tsae(x[:1]), x[:1]).sum(), tsae.parameters())
    for gc, gr in zip(c, ref, strict=True):
        torch.testing.assert_close(gc[0], gr, rtol=1e-5, atol=1e-6)


def test_dpsgd_without_noise_or_clipping_is_a_full_batch_sgd_step():
    """q = 1 (batch = n), z = 0, a clip no gradient reaches: one DP-SGD step is SGD on the
    mean loss; the accountant records the step."""
    torch.manual_seed(1)
    x = torch.rand(16, 12)
    a = torch.nn.Sequential(torch.nn.Linear(12, 5), torch.nn.Tanh(), torch.nn.Linear(5, 12))
    b = torch.nn.Sequential(torch.nn.Linear(12, 5), torch.nn.Tanh(), torch.nn.Linear(5, 12))
    b.load_state_dict(a.state_dict())
    dp = DPSGD(clip=1e6, noise_multiplier=0.0, batch_size=16)
    dp.epoch(a, list(a.parameters()), torch.optim.SGD(a.parameters(), lr=0.1), x, x, _mse,
             torch.Generator().manual_seed(0))  # fmt: skip
    opt = torch.optim.SGD(b.parameters(), lr=0.1)
    _mse(b(x), x).mean().backward()
    opt.step()
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert dp.accountant.events == [("gaussian", (0.0, 1.0), 1)]
    cal = DPSGD.calibrated(2.0, 1e-5, 1.0, 32, 640, 100)
    ev = dp_accounting.PoissonSampledDpEvent(
        0.05, dp_accounting.GaussianDpEvent(cal.noise_multiplier)
    )
    assert _dp_accounting((ev, 100)) == pytest.approx(2.0, rel=1e-3)


def test_cluster_statistics_and_clipping():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(50, 3)) * 5
    xc = clip_rows(x, 2.0)
    assert np.all(np.linalg.norm(xc, axis=1) <= 2.0 + 1e-12)
    inside = np.linalg.norm(x, axis=1) <= 2.0
    np.testing.assert_array_equal(xc[inside], x[inside])
    c = x[:4]
    counts, sums = cluster_stats(x, c)
    lab = np.argmin(((x[:, None] - c[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(counts, np.bincount(lab, minlength=4))
    np.testing.assert_allclose(sums[1], x[lab == 1].sum(0))
