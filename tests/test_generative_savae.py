"""SAVAE (seed 003 §5, D6.2 ch. 6): Weibull pieces and the censored likelihood against torch /
lifelines, per-feature likelihoods against torch.distributions, the encoder-frozen reduction to
a Weibull regression (lifelines WeibullAFTFitter), one centre = pooled exactly, the good / poor
node protocol's messages and floors, and the evaluation helpers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from lifelines import KaplanMeierFitter, WeibullAFTFitter, WeibullFitter

from fedclust.errors import DisclosureError
from fedclust.federation import Abstain, Ledger, federate
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.generative import data as D
from fedclust.generative import evaluate as E
from fedclust.generative import likelihoods as L
from fedclust.generative import pooled, savae
from fedclust.generative import protocols as P
from fedclust.generative import server as S
from fedclust.generative import weibull as W
from fedclust.generative.centre import SavaeCentre
from fedclust.generative.nets import get_parameters, init_module


def _weibull_data(n=300, seed=0):
    g = np.random.default_rng(seed)
    t_true = 2.0 * g.weibull(1.5, n)
    c = g.uniform(0.5, 4.0, n)
    return np.minimum(t_true, c), (t_true <= c).astype(int)


def test_weibull_pieces_match_torch_and_each_other():
    t = torch.tensor([0.1, 0.7, 1.0, 2.5, 6.0], dtype=torch.float64)
    lk, ll = (
        torch.tensor(np.log(1.7), dtype=torch.float64),
        torch.tensor(np.log(2.3), dtype=torch.float64),
    )
    ref = torch.distributions.Weibull(scale=torch.exp(ll), concentration=torch.exp(lk))
    s = torch.exp(W.log_survival(t, lk, ll))
    torch.testing.assert_close(s, 1.0 - ref.cdf(t))
    torch.testing.assert_close(s, torch.exp(-((t / 2.3) ** 1.7)))
    torch.testing.assert_close(W.log_density(t, lk, ll), ref.log_prob(t))
    h = torch.exp(W.log_hazard(t, lk, ll))
    torch.testing.assert_close(h * s, torch.exp(ref.log_prob(t)))  # f = h·S
    torch.testing.assert_close(W.mean_time(lk, ll), ref.mean)
    d = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    want = d * ref.log_prob(t) + (1 - d) * torch.log(1 - ref.cdf(t))
    torch.testing.assert_close(W.censored_loglik(t, d, lk, ll), want)


def test_censored_weibull_mle_equals_lifelines_weibullfitter():
    t, d = _weibull_data()
    lam, k, loglik = W.fit(t, d)
    ref = WeibullFitter().fit(t, d)
    assert lam == pytest.approx(ref.lambda_, rel=1e-4)
    assert k == pytest.approx(ref.rho_, rel=1e-4)
    assert loglik == pytest.approx(ref.log_likelihood_, rel=1e-6)
    # and the numpy log-likelihood at lifelines' optimum is lifelines' log-likelihood
    ll_ref = np.sum(W.censored_loglik(t, d, np.log(ref.rho_), np.log(ref.lambda_)))
    assert ll_ref == pytest.approx(ref.log_likelihood_, rel=1e-8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_savae_with_frozen_zero_variance_encoder_is_a_weibull_regression(seed):
    """Encoder frozen to z = μ(x) = x (variance 0: eps = None), linear time decoder: maximising
    SAVAE's time term is the Weibull AFT regression (log λ and log k linear in x)."""
    g = np.random.default_rng(1)
    n = 400
    x = g.normal(size=(n, 2))
    lam = np.exp(0.5 + 0.4 * x[:, 0] - 0.3 * x[:, 1])
    k = np.exp(0.3 + 0.2 * x[:, 0])
    tt = lam * g.weibull(1.0, n) ** (1.0 / k)
    c = g.uniform(0.5, 6.0, n)
    t, d = np.minimum(tt, c), (tt <= c).astype(float)
    spec = L.FeatureSpec.all("gaussian", 2)
    arch = savae.Arch(latent=2, hidden=(), time_hidden=())
    model = init_module(lambda: savae.SAVAE(spec, arch, time=True), seed, "aft").double()
    with torch.no_grad():
        enc = model.encoder[0]
        enc.weight.zero_(), enc.bias.zero_()
        enc.weight[:2, :2] = torch.eye(2, dtype=torch.float64)
        enc.bias[2:] = -1e3  # log σ² → its floor: the variance is zero up to e^-12
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    xt, mt = torch.as_tensor(x), torch.ones(n, 2, dtype=torch.float64)
    tt_, dt = torch.as_tensor(t), torch.as_tensor(d)
    opt = torch.optim.LBFGS(
        model.time_decoder.parameters(),
        lr=1.0,
        max_iter=500,
        tolerance_grad=1e-12,
        tolerance_change=1e-14,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        loss = -model.terms(xt, mt, tt_, dt, eps=None)[2].sum()
        loss.backward()
        return loss

    for _ in range(3):  # restarts from where it stopped (LBFGS stops on its history length)
        opt.step(closure)
    ll_ours = -float(closure().detach())
    df = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "T": t, "E": d})
    aft = WeibullAFTFitter().fit(df, "T", "E", ancillary=True)
    w = model.time_decoder[0].weight.detach().numpy()
    b = model.time_decoder[0].bias.detach().numpy()
    ours = {
        ("lambda_", "x0"): w[1, 0],
        ("lambda_", "x1"): w[1, 1],
        ("lambda_", "Intercept"): b[1],
        ("rho_", "x0"): w[0, 0],
        ("rho_", "x1"): w[0, 1],
        ("rho_", "Intercept"): b[0],
    }
    for key, v in ours.items():
        assert v == pytest.approx(aft.params_[key], abs=2e-4), key
    assert ll_ours == pytest.approx(aft.log_likelihood_, rel=1e-7)


def test_feature_likelihoods_match_torch_distributions_and_respect_the_mask():
    spec = L.FeatureSpec(("bernoulli", "gaussian", "categorical", "categorical"), (0, 0, 3, 4))
    assert spec.n_params == 1 + 2 + 3 + 4 and spec.n_inputs == 1 + 1 + 3 + 4
    g = torch.Generator().manual_seed(0)
    params = torch.randn(5, spec.n_params, generator=g, dtype=torch.float64)
    x = torch.tensor(
        [[1, 0.3, 2, 3], [0, -1.0, 0, 1], [1, 2.0, 1, 0], [0, 0.0, 2, 2], [1, 1.5, 0, 3]],
        dtype=torch.float64,
    )
    mask = torch.ones_like(x)
    got = L.loglik(params, x, mask, spec)
    want = torch.stack(
        [
            torch.distributions.Bernoulli(logits=params[:, 0]).log_prob(x[:, 0]),
            torch.distributions.Normal(params[:, 1], torch.exp(0.5 * params[:, 2])).log_prob(
                x[:, 1]
            ),
            torch.distributions.Categorical(logits=params[:, 3:6]).log_prob(x[:, 2].long()),
            torch.distributions.Categorical(logits=params[:, 6:10]).log_prob(x[:, 3].long()),
        ],
        dim=1,
    )
    torch.testing.assert_close(got, want)
    mask[1, 2] = mask[3, 0] = 0
    masked = L.loglik(params, x, mask, spec)
    assert masked[1, 2] == 0 and masked[3, 0] == 0
    torch.testing.assert_close(masked[mask > 0], want[mask > 0])
    oh = L.one_hot(x, spec)
    assert oh.shape == (5, spec.n_inputs) and float(oh[0, 2:5].sum()) == 1.0


def test_corruption_replaces_exactly_a_fraction_r_with_binary_noise():
    spec = L.FeatureSpec.all("bernoulli", 20)
    x = np.full((30, 20), 0.5)
    xc, m = D.corrupt(x, np.ones_like(x), 0.7, spec, np.random.default_rng(0), "noise")
    assert (m == 0).sum(1).tolist() == [14] * 30
    assert set(np.unique(xc[m == 0])) == {0.0, 1.0}
    assert np.all(xc[m > 0] == 0.5)
    xz, _ = D.corrupt(x, np.ones_like(x), 0.5, spec, np.random.default_rng(0), "zero")
    assert np.isnan(xz).sum() == 30 * 10


def _table(n=80, seed=0, p_bin=4, time=True):
    g = np.random.default_rng(seed)
    cont = g.normal(3.0, 2.0, size=(n, 2))
    cat = g.integers(0, 3, size=(n, 1)).astype(float)
    binary = (g.random((n, p_bin)) < 0.4).astype(float)
    x = np.concatenate([cont, cat, binary], axis=1)
    x[g.random(x.shape) < 0.05] = np.nan
    names = [f"c{i}" for i in range(x.shape[1])]
    spec = L.infer_spec(x, names, ["c2"])
    y = (binary[:, 0] + g.random(n) > 0.9).astype(int)
    t, d = _weibull_data(n, seed) if time else (None, None)
    return D.Tabular(x, names, spec, y, t, None if d is None else d.astype(int))


TRAIN = {"lr": 5e-3, "batch_size": 16, "w": 1.0, "draw": "mean"}
ARCH = savae.Arch(latent=3, hidden=(12,), time_hidden=(4,))


def _build(spec, time=True):
    return lambda: init_module(lambda: savae.SAVAE(spec, ARCH, time), 7, "test", "init")


def test_one_centre_federated_savae_equals_pooled_exactly():
    tab = _table()
    spec = tab.spec
    assert spec.kinds[:3] == ("gaussian", "gaussian", "categorical")
    mask = D.observed(tab.x)
    build = _build(spec)
    centre = SavaeCentre("c0", tab, mask, build, TRAIN, seed=11, min_samples=3)
    led = Ledger()
    params, hist = federate(
        [centre],
        lambda px: S.federated_training(
            px, spec, get_parameters(build()), 3, 2, P.savae_fit(3), "savae_fit", 3
        ),
        ledger=led,
    )
    ref, losses = pooled.savae(tab, mask, build, TRAIN, seed=11, epochs=6)
    for a, b in zip(params, get_parameters(ref.model), strict=True):
        np.testing.assert_array_equal(a, b)
    assert hist.loss[-1] == losses[-1]
    assert not np.array_equal(params[0], get_parameters(build())[0])
    assert set(led.table()["protocol"]) >= {"generative_moments", "savae_fit"}
    assert (led.table()["protocol"] != "").all()


def test_good_poor_protocol_floors_and_virtual_patients():
    tab = _table(60)
    spec = tab.spec
    build = _build(spec)
    good = SavaeCentre("good", tab, D.observed(tab.x), build, TRAIN, 1, min_samples=3)
    small = tab.rows(np.arange(2))
    poor = SavaeCentre("poor", small, D.observed(small.x), build, TRAIN, 2, min_samples=3)
    led = Ledger()
    params, hist = federate(
        [good, poor],
        lambda px: S.federated_training(
            px, spec, get_parameters(build()), 2, 1, P.savae_fit(3), "savae_fit", 3
        ),
        ledger=led,
    )
    ab = led.abstentions()
    # moments + standardise + 2 rounds + the final model
    assert set(ab["center"]) == {"poor"} and len(ab) == 5
    assert hist.participants == [1, 1]
    # virtual patients: per-sample rows of a generator, once, with the real count; released
    # only because the good node's own disclosure settings opt in to this protocol
    good.standardise_locally()
    good.train_local(2)
    led0 = Ledger()
    refused = SavaeCentre("poor", tab.rows(np.arange(10)), D.observed(tab.x[:10]), build, TRAIN,
                          3, 3)  # fmt: skip
    n0 = federate([good, refused], lambda px: S.virtual_patients(px, "good", "poor", 25, 3),
                  ledger=led0)  # fmt: skip
    assert n0 == 0 and list(led0.abstentions()["center"]) == ["good"]
    assert refused._virtual is None
    good.disclosure = DisclosurePolicy(allow_per_sample=("savae_virtual_patients",))
    poor2 = SavaeCentre("poor", tab.rows(np.arange(10)), D.observed(tab.x[:10]), build, TRAIN, 3, 3)
    n = federate(
        [good, poor2], lambda px: S.virtual_patients(px, "good", "poor", 25, 3), ledger=led
    )
    assert n == 25
    vp = led.table().query("protocol == 'savae_virtual_patients'")
    assert len(vp) == 1 and vp.iloc[0]["sender"] == "good"
    assert poor2._virtual.n == 25 and poor2._virtual.t is not None
    # the protocols refuse what they do not declare
    with pytest.raises(DisclosureError):
        Ledger().send(
            "good",
            "server",
            {"parameters": [np.zeros(2)], "n": 60, "x": np.zeros((3, 2))},
            protocol=P.savae_fit(3),
        )
    with pytest.raises(DisclosureError):
        Ledger().send(
            "good",
            "server",
            {"x": np.zeros((3, 2)), "y": np.zeros(3), "t": None, "n": 2},
            protocol=P.virtual_patients(3),
        )
    assert isinstance(poor.virtual_patients(None, {"n_virtual": 5}), Abstain)


def _km(t, e):
    """A plain Kaplan–Meier step function (the test's own)."""
    times = np.unique(t)
    s, out = 1.0, {}
    for u in times:
        at_risk = np.sum(t >= u)
        s *= 1.0 - np.sum((t == u) & (e == 1)) / at_risk
        out[u] = s
    return lambda q: np.array(
        [out[times[times <= v][-1]] if np.any(times <= v) else 1.0 for v in np.atleast_1d(q)]
    )


def test_integrated_brier_score_against_a_plain_loop_and_c_index_against_lifelines():
    from lifelines.utils import concordance_index

    t, d = _weibull_data(60, 3)
    g = np.random.default_rng(0)
    lk, ll = np.log(1.5) + 0.1 * g.normal(size=60), np.log(2.0) + 0.3 * g.normal(size=60)
    grid = E.time_grid(t, d, points=20)
    surv = W.survival_curves(grid, lk, ll)
    gfun = _km(t, 1 - d)
    bs = []
    for j, u in enumerate(grid):
        acc = 0.0
        for i in range(len(t)):
            if t[i] <= u and d[i] == 1:
                acc += surv[i, j] ** 2 / gfun(t[i])[0]
            elif t[i] > u:
                acc += (1 - surv[i, j]) ** 2 / gfun(u)[0]
        bs.append(acc / len(t))
    np.testing.assert_allclose(E.brier_scores(surv, grid, t, d), bs, rtol=1e-10)
    ibs = np.trapezoid(bs, grid) / (grid[-1] - grid[0])
    assert E.integrated_brier(surv, grid, t, d) == pytest.approx(ibs, rel=1e-10)
    km = KaplanMeierFitter().fit(t, 1 - d)
    np.testing.assert_allclose(
        E.censoring_survival(t, d, grid), km.survival_function_at_times(grid).to_numpy()
    )
    risk = -np.asarray(W.mean_time(lk, ll))
    assert E.c_index(t, risk, d) == pytest.approx(concordance_index(t, -risk, d))
