"""The Deep Generative Decoder (seed 003 §8, D6.2 ch. 9): the mixture prior's log-density and
hyper-priors against scipy, MAP representation search lowers the loss, the observed-entries
likelihood ignores missing values, one centre = pooled exactly, and the representations never
cross the boundary (the ledger carries the same floats whatever the number of samples)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats
from scipy.special import logsumexp

from fedclust.federation import Ledger, federate
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.generative import data as D
from fedclust.generative import dgd as G
from fedclust.generative import experiment as X
from fedclust.generative import likelihoods as L
from fedclust.generative import pooled
from fedclust.generative import protocols as P
from fedclust.generative import server as S
from fedclust.generative.centre import DgdCentre
from fedclust.generative.nets import get_parameters, init_module, n_parameters

PRIOR = G.Prior(
    components=4,
    dim=3,
    radius=4.0,
    sharpness=6.0,
    dirichlet_alpha=1.5,
    log_precision_mean=1.0,
    log_precision_sd=0.7,
)
TRAIN = G.Training(lr=5e-3, rep_lr=0.1, batch_size=16, test_steps=30)


def _gmm():
    gmm = init_module(lambda: G.GaussianMixture(PRIOR), 3, "gmm")
    with torch.no_grad():
        gmm.logits.copy_(torch.tensor([0.3, -0.2, 1.0, 0.0]))
        gmm.log_precision.add_(torch.linspace(-0.5, 0.5, 12).reshape(4, 3))
    return gmm.double()


def test_mixture_log_density_equals_scipy():
    gmm = _gmm()
    z = np.random.default_rng(0).normal(size=(7, 3)) * 2
    got = gmm.log_prob(torch.as_tensor(z)).detach().numpy()
    w = torch.softmax(gmm.logits, 0).detach().numpy()
    mu = gmm.means.detach().numpy()
    var = np.exp(-gmm.log_precision.detach().numpy())
    comp = np.stack(
        [
            np.log(w[k]) + stats.multivariate_normal(mu[k], np.diag(var[k])).logpdf(z)
            for k in range(4)
        ],
        axis=1,
    )
    np.testing.assert_allclose(got, logsumexp(comp, axis=1), rtol=1e-10)


def test_hyperpriors_equal_scipy_densities():
    gmm = _gmm()
    w = torch.softmax(gmm.logits, 0).detach().numpy()
    lp = gmm.log_precision.detach().numpy()
    norms = np.linalg.norm(gmm.means.detach().numpy(), axis=1)
    d, r, s = PRIOR.dim, PRIOR.radius, PRIOR.sharpness
    log_ball = math.log(math.pi ** (d / 2) * r**d / math.gamma(d / 2 + 1))
    softball = np.sum(-np.logaddexp(0.0, s * (norms - r)) - log_ball)
    want = (
        softball
        + stats.dirichlet(np.full(4, PRIOR.dirichlet_alpha)).logpdf(w)
        + stats.norm(PRIOR.log_precision_mean, PRIOR.log_precision_sd).logpdf(lp).sum()
    )
    assert float(gmm.log_hyperprior().detach()) == pytest.approx(want, rel=1e-10)


def _data(n=60, p=12, seed=0):
    g = np.random.default_rng(seed)
    lab = g.integers(0, 3, n)
    x = g.normal(size=(n, p)) + 2.0 * lab[:, None] * (np.arange(p) % 3 == 0)
    return x, lab


def _build(spec, dim=3):
    prior = G.Prior(3, dim, 4.0, 5.0, 2.0, 1.0, 1.0)
    return lambda: init_module(lambda: G.DGD(spec, prior, (10,)), 5, "test", "init")


def test_map_representation_search_and_training_lower_the_loss():
    x, _ = _data()
    spec = L.FeatureSpec.all("gaussian", x.shape[1])
    model = _build(spec)()
    tr = G.Trainer(model, x, np.ones_like(x), TRAIN, torch.Generator().manual_seed(0))
    losses = tr.epochs(15)
    assert losses[-1] < losses[0]
    new = x[:10] + 0.1
    _, nll0 = G.find_representations(model, new, np.ones_like(new), 0, 0.1)  # at the means
    z, nll = G.find_representations(model, new, np.ones_like(new), 40, 0.1)
    assert np.all(nll <= nll0 + 1e-6) and nll.mean() < nll0.mean()
    with torch.no_grad():  # the returned loss is the model's −log p(x, z) at the returned z
        direct = model.sample_nll(
            torch.as_tensor(z, dtype=torch.float32),
            torch.as_tensor(new, dtype=torch.float32),
            torch.ones(10, x.shape[1]),
        )
    np.testing.assert_allclose(nll, direct.numpy(), rtol=1e-5)


def test_missing_entries_do_not_enter_the_likelihood():
    x, _ = _data()
    spec = L.FeatureSpec.all("gaussian", x.shape[1])
    model = _build(spec)()
    mask = np.ones((5, x.shape[1]))
    mask[:, :4] = 0
    a, b = x[:5].copy(), x[:5].copy()
    b[:, :4] = 99.0  # changes only hidden entries
    za, la = G.find_representations(model, a, mask, 20, 0.1)
    zb, lb = G.find_representations(model, b, mask, 20, 0.1)
    np.testing.assert_array_equal(za, zb)
    np.testing.assert_array_equal(la, lb)


def test_one_centre_federated_dgd_equals_pooled_exactly():
    x, _ = _data(50)
    x[3, 2] = np.nan
    spec = L.FeatureSpec.all("gaussian", x.shape[1])
    build = _build(spec)
    # no privacy constraint: floor 1 (the decoder's per-unit floor withholds nothing)
    centre = DgdCentre("c0", x, D.observed(x), spec, build, TRAIN, seed=9, min_samples=3,
                       disclosure=DisclosurePolicy(nfilter_subset=1))  # fmt: skip
    centre.min_samples = 1
    led = Ledger()
    params, _ = federate(
        [centre],
        lambda px: S.federated_training(
            px, spec, get_parameters(build()), 3, 2, P.dgd_fit(3), "dgd_fit", 3
        ),
        ledger=led,
    )
    ref, _ = pooled.dgd(x, D.observed(x), spec, build, TRAIN, seed=9, epochs=6)
    for a, b in zip(params, get_parameters(ref.model), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(centre.representations(), ref.representations())


def test_representations_never_cross_the_boundary():
    """Decoder + mixture only: each dgd_fit update carries exactly the model's parameter count
    (+ n and the loss), whatever the centre's number of samples; no protocol has rows."""
    spec = L.FeatureSpec.all("gaussian", 12)
    build = _build(spec)
    floats = []
    for n in (20, 45):
        x, _ = _data(n, seed=n)
        led = Ledger()
        # floor 1: the per-unit floor's units_withheld (one metadata count, only when > 0)
        # stays out of the size comparison (test_the_decoder_units_below_the_floor_are_withheld)
        c = DgdCentre("c0", x, D.observed(x), spec, build, TRAIN, seed=1, min_samples=3,
                      disclosure=DisclosurePolicy(nfilter_subset=1))  # fmt: skip
        c.min_samples = 1
        federate(
            [c],
            lambda px: S.federated_training(
                px, spec, get_parameters(build()), 2, 1, P.dgd_fit(3), "dgd_fit", 3
            ),
            ledger=led,
        )
        t = led.table()
        up = t[(t["protocol"] == "dgd_fit") & (t["sender"] == "c0")]
        assert (up["floats"] == n_parameters(build()) + 2).all()
        floats.append(int(t["floats"].sum()))
        assert set(t["fields"]) <= {
            "parameters",
            "loss,n,parameters",
            "n",
            "columns",
            "columns,mean,sd",
            "n,sum,sumsq",
        }
    assert floats[0] == floats[1]
    assert not P.dgd_fit(3).per_sample


def test_small_dgd_experiment_runs_every_arm(tmp_path):
    x, lab = _data(90, p=10, seed=4)
    spec = L.FeatureSpec.all("gaussian", 10)
    table = D.Tabular(
        x,
        [f"g{i}" for i in range(10)],
        spec,
        lab,
        groups=np.array(["A"] * 40 + ["B"] * 48 + ["C"] * 2),
    )
    cfg = {
        "min_samples": 3,
        "device": "cpu",
        "dgd": {
            "datasets": {
                "toy": {
                    "data": "rnaseq",
                    "n_samples": None,
                    "split": "column",
                    "n_centres": 1,
                    "test_fraction": 0.2,
                }
            },
            "components": None,
            "mask_rate": 0.3,
            "prior": {
                "dim": 2,
                "radius": 4.0,
                "sharpness": 5.0,
                "dirichlet_alpha": 2.0,
                "log_precision_mean": 1.0,
                "log_precision_sd": 1.0,
            },
            "model": {"hidden": [8], "activation": "relu"},
            "train": {
                "lr": 0.005,
                "rep_lr": 0.1,
                "batch_size": 16,
                "rounds": 2,
                "local_epochs": 2,
                "test_steps": 10,
            },
        },
    }
    out = X.run_dgd(table, cfg, "toy", 1)
    m = out["metrics"]
    assert set(m["arm"]) == {"federated", "pooled", "isolated", "vae", "mean_imputation"}
    assert set(m.loc[m["arm"] == "isolated", "centre"]) == {"A", "B"}  # C: 2 samples < floor
    assert out["info"]["abstaining"] == ["C"]
    assert np.isfinite(m["value"]).all()
    assert out["info"]["dgd_parameters"] < out["info"]["vae_parameters"]  # no encoder


@pytest.mark.parametrize("floor", [1, 20])
def test_the_decoder_units_below_the_floor_are_withheld(floor):
    """The per-unit floor (:mod:`fedclust.federation.unit_floor`) on the decoder: with the floor
    at the centre's size every hidden unit some but not all of its samples reached keeps the
    received weights and the update says how many; at floor 1 nothing is withheld."""
    x, _ = _data(20, seed=2)
    spec = L.FeatureSpec.all("gaussian", x.shape[1])
    build = _build(spec)
    c = DgdCentre("c0", x, D.observed(x), spec, build, TRAIN, seed=1, min_samples=1,
                  disclosure=DisclosurePolicy(nfilter_subset=floor))  # fmt: skip
    c.standardise_locally()
    p0 = get_parameters(build())
    p1, n, metrics = c.fit(p0, {"epochs": 2})
    assert n == 20
    if floor == 1:
        assert "units_withheld" not in metrics and c.units_withheld == 0
    else:
        assert metrics["units_withheld"] == c.units_withheld > 0
        kept = np.all(p0[0] == p1[0], axis=1)  # the decoder's first layer: rows kept as sent
        assert kept.any()
