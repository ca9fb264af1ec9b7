"""DP-PVI by DP-SGD inside the local ELBO fit (issue 24 follow-up, Heikkilä et al. 2022): the
accountant is dp-accounting's subsampled-Gaussian RDP value, without noise or clipping the fit
is the stage's BBB fit and ε = ∞ the stage's own run, each image's gradient is clipped on its
own (one image moves a step by at most C), the noise has the calibrated scale, and at ε = 8 the
DP-SGD arm beats noise on the update."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import torch
import torch.nn.functional as F
import yaml
from dp_accounting.rdp import RdpAccountant

from fedclust.bayes import bbb
from fedclust.bayes.experiment import run_federated_unit
from fedclust.errors import ConfigError
from fedclust.federation import Abstain
from fedclust.federation.dp import ORDERS
from fedclust.privacy_utility import bayes as PB
from fedclust.privacy_utility import bayes_dpsgd as D
from fedclust.privacy_utility import report as R
from fedclust.seeds import derive_seed

BCFG = yaml.safe_load(open("config/config.yaml"))["bayes"]
M = {"source": "digits", "method": "virtual", "split": "iid", "rounds": 3, "epochs": 2,
     "hidden": [], "pooled_epochs": 2, "clip": 300.0, "mechanisms": ["update_noise", "dp_sgd"],
     "sgd_clip": 1.0, "sgd_local": {"batch_size": 128, "lr": 0.1}}  # fmt: skip
UNIT = "virtual__iid"


def _dp_accounting(z: float, q: float, steps: int, delta: float = 1e-5) -> float:
    acc = RdpAccountant(list(ORDERS))
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), steps)
    return acc.get_epsilon(delta)


def _opacus(z: float, q: float, steps: int, delta: float = 1e-5) -> float:
    from opacus.accountants import RDPAccountant

    acc = RDPAccountant()
    acc.history = [(z, q, steps)]
    return acc.get_epsilon(delta, alphas=list(ORDERS))


def test_the_accountant_is_dp_accountings_and_opacus_subsampled_gaussian():
    for z, q, steps in [(2.0, 0.12, 54), (4.0, 0.05, 300)]:
        assert abs(D.spent(z, q, steps, 1e-5) - _dp_accounting(z, q, steps)) < 1e-6
    # q ≈ 0.47, z = 1.5 (batch 128 of ~270 images): dp-accounting drops fractional orders
    # there ("failed to converge"): Opacus' own accountant
    assert abs(D.spent(1.5, 0.47, 18, 1e-5) - _opacus(1.5, 0.47, 18)) < 1e-9
    z = D.calibrated_noise(2.0, 1e-5, 0.05, 200)
    assert _dp_accounting(z, 0.05, 200) == pytest.approx(2.0, rel=1e-3)
    assert _dp_accounting(0.98 * z, 0.05, 200) > 2.0  # the smallest such z
    assert D.spent(0.0, 0.5, 3, 1e-5) == math.inf and D.spent(1.0, 0.5, 0, 1e-5) == 0.0
    assert D.calibrated_noise(math.inf, 1e-5, 0.5, 10) == 0.0


def _toy(n=60, d=6, k=3, seed=0):
    g = np.random.default_rng(seed)
    x = torch.tensor(g.standard_normal((n, d)), dtype=torch.float32)
    y = torch.tensor(g.integers(0, k, n))
    lay = bbb.make_layout(d, [4], k)
    mu0 = torch.tensor(bbb.init_weights(lay, 1), dtype=torch.float32)
    rho0 = torch.full((lay.n_params,), -3.0)
    prior = bbb.GaussianPrior(*bbb.gaussian_natural(lay.n_params, 1.0))
    return x, y, lay, mu0, rho0, prior


def test_without_noise_or_clipping_the_fit_is_the_stages_bbb_fit():
    x, y, lay, mu0, rho0, prior = _toy()
    s = bbb.TrainSettings(epochs=3, batch_size=16, lr=0.01, mc_train=2)
    a_mu, a_rho = mu0.clone(), rho0.clone()
    ra = bbb.fit_variational(a_mu, a_rho, x, y, lay, prior, s, bbb.Generators.from_seed(4))
    b_mu, b_rho = mu0.clone(), rho0.clone()
    rb = D.fit_variational_dp(b_mu, b_rho, x, y, lay, prior, s, bbb.Generators.from_seed(4),
                              math.inf, 0.0, torch.Generator(), sampling="shuffle")  # fmt: skip
    assert (a_mu - mu0).abs().max() > 0.05  # it trained
    torch.testing.assert_close(b_mu, a_mu, rtol=0, atol=1e-5)
    torch.testing.assert_close(b_rho, a_rho, rtol=0, atol=1e-5)
    assert rb[-1]["loss"] == pytest.approx(ra[-1]["loss"], rel=1e-5)
    assert rb[-1]["train_accuracy"] == ra[-1]["train_accuracy"]


def _one_step(x, y, lay, mu0, rho0, clip):
    """One DP-SGD step without noise on every image (q = 1), SGD lr 1, no KL: the step is
    −Σ_n clip(g_n)."""
    prior = bbb.GaussianPrior(*bbb.gaussian_natural(lay.n_params, 1.0))
    s = bbb.TrainSettings(epochs=1, batch_size=len(y), optimizer="sgd", lr=1.0, kl_weight=0.0)
    mu, rho = mu0.clone(), rho0.clone()
    D.fit_variational_dp(mu, rho, x, y, lay, prior, s, bbb.Generators.from_seed(9), clip, 0.0,
                         torch.Generator())  # fmt: skip
    return torch.cat([mu0 - mu, rho0 - rho])


def test_each_images_gradient_is_clipped_on_its_own():
    x, y, lay, mu0, rho0, _ = _toy(n=12)
    clip = 0.05
    step = _one_step(x, y, lay, mu0, rho0, clip)
    # the reference: every image's gradient w.r.t. (μ, ρ) by autograd, clipped, summed
    eps = torch.randn(mu0.shape, generator=bbb.Generators.from_seed(9).noise)
    ref = torch.zeros(2 * lay.n_params)
    norms = []
    for i in range(len(y)):
        mu, rho = mu0.clone().requires_grad_(True), rho0.clone().requires_grad_(True)
        w = mu + F.softplus(rho) * eps
        F.cross_entropy(bbb.forward(x[i : i + 1], w, lay), y[i : i + 1], reduction="sum").backward()
        g = torch.cat([mu.grad, rho.grad])
        norms.append(float(g.norm()))
        ref += g * min(1.0, clip / float(g.norm()))
    assert min(norms) > clip  # every image is clipped ...
    assert float(ref.norm()) > 2 * clip  # ... and a per-batch clip would have cut the sum to C
    torch.testing.assert_close(step, ref, rtol=1e-4, atol=1e-6)
    # one image added — with a gradient 1000× the others' — moves the step by at most C
    x2 = torch.cat([x, 1000 * x[:1]])
    y2 = torch.cat([y, (y[:1] + 1) % 3])
    step2 = _one_step(x2, y2, lay, mu0, rho0, clip)
    assert float((step2 - step).norm()) <= clip * (1 + 1e-5)
    raw = _one_step(x2, y2, lay, mu0, rho0, math.inf) - _one_step(x, y, lay, mu0, rho0, math.inf)
    assert float(raw.norm()) > 100 * clip  # without clipping it moves it far


def test_the_noise_has_the_calibrated_scale():
    x, y, lay, mu0, rho0, prior = _toy(n=8)
    s = bbb.TrainSettings(epochs=1, batch_size=8, optimizer="sgd", lr=1.0, kl_weight=0.0)
    z, clip, diffs = 0.7, 0.2, []
    for k in range(40):
        steps = []
        for noise in (0.0, z):
            mu, rho = mu0.clone(), rho0.clone()
            gen = torch.Generator().manual_seed(k)
            D.fit_variational_dp(mu, rho, x, y, lay, prior, s, bbb.Generators.from_seed(k),
                                 clip, noise, gen)  # fmt: skip
            steps.append(torch.cat([mu, rho]))
        diffs.append((steps[1] - steps[0]).numpy())
    d = np.concatenate(diffs)  # 40 steps × 2P noise draws
    assert abs(d.std() / (z * clip) - 1) < 0.05 and abs(d.mean()) < 4 * z * clip / d.size**0.5


@pytest.fixture(scope="module")
def run():
    cfg = {"epsilons": [8, None], "seeds": 1, "delta": 1e-5, "bayes": M}
    return PB.run_bayes(BCFG, cfg, 3)


def test_infinite_epsilon_is_the_stages_run_and_dp_sgd_has_its_own_arm(run):
    curve, _ = run
    inf = curve[np.isinf(curve["epsilon"]) & curve["arm"].str.startswith("federated")]
    assert list(inf["arm"]) == ["federated"]  # one row: both mechanisms are the stage's run
    s_seed = derive_seed(3, "pu", "bayes", 0)
    _, _, res = run_federated_unit(PB._bayes_cfg(BCFG, M), PB.load_data(BCFG, M, s_seed), UNIT,
                                   s_seed)  # fmt: skip
    assert float(inf["value"].iloc[0]) == res["server_accuracy"]  # bit for bit
    assert set(curve[curve["epsilon"] == 8]["arm"]) == {"federated", "federated_local"}


def test_a_dp_sgd_centre_without_noise_or_clipping_is_the_plain_unit():
    bc = PB._bayes_cfg(BCFG, M)
    data = PB.load_data(BCFG, M, 5)
    _, led_plain, plain = run_federated_unit(bc, data, UNIT, 5)
    made = []

    def wrap(c):
        made.append(D.DPSGDPVICentre(c, math.inf, 0.0, 0, sampling="shuffle"))
        return made[-1]

    _, led, priv = run_federated_unit(bc, data, UNIT, 5, wrap=wrap)
    assert sum(c.steps for c in made) > 0 and sum(c.releases for c in made) == 2 * M["rounds"]
    assert abs(priv["server_accuracy"] - plain["server_accuracy"]) <= 0.01  # float rounding
    # what the server sees: the stage's declared PVI messages, the same ones, nothing added
    cols = ["round", "sender", "receiver", "kind", "protocol", "fields", "floats"]
    assert set(led["protocol"]) == {"bayes_pvi_delta"}
    assert led[cols].equals(led_plain[cols])


def test_the_budget_rows_spend_at_most_epsilon_over_every_step(run):
    _, budget = run
    b = budget[budget["mechanism"].str.startswith("DP-SGD")]
    assert len(b) == 5 and (b["epsilon"] == 8).all()
    per_round = 2 * math.ceil(270 / 128)  # epochs × ⌈n_train / batch⌉ (digits: ~270 images each)
    for z, steps, eps in zip(b["noise_multiplier"], b["releases"], b["epsilon_spent"],
                             strict=True):  # fmt: skip
        assert steps % per_round == 0 and steps <= M["rounds"] * per_round
        if steps:
            # q = 128 / n_train (digits: 1347 training images over 5 centres)
            assert min(abs(eps - _opacus(z, 128 / n, steps)) for n in (269, 270)) < 1e-9
        assert eps <= 8 + 1e-3
    assert (abs(b[b["releases"] == M["rounds"] * per_round]["epsilon_spent"] - 8) < 1e-2).all()


def test_dp_sgd_beats_noise_on_the_update_at_epsilon_eight(run):
    curve, _ = run
    v = curve[curve["epsilon"] == 8].set_index("arm")["value"]
    assert v["federated_local"] > v["federated"] + 0.3
    cap = R._DATA["bayes"](M)
    assert "DP-SGD inside each centre's local ELBO fit" in cap and "clipped to 300.0" in cap


def test_unknown_mechanism_and_hierarchical_methods_are_config_errors():
    with pytest.raises(ConfigError, match="mechanisms"):
        PB.run_bayes(BCFG, {"epsilons": [1], "seeds": 1, "delta": 1e-5,
                            "bayes": {**M, "mechanisms": ["dpsgd"]}}, 3)  # fmt: skip

    class Hier:
        private_sigma = 1.0

    with pytest.raises(ConfigError, match="hierarchical"):
        D.DPSGDPVICentre(Hier(), 1.0, 1.0, 0)


def test_a_centre_refuses_a_request_past_its_own_step_budget():
    """The server asks for more local epochs than z was calibrated for: the centre abstains and
    spends nothing (fails if the budget follows the server's request)."""
    bc = PB._bayes_cfg(BCFG, M)
    data = PB.load_data(BCFG, M, 5)
    made = []

    def wrap(c):
        per_round = int(c.settings.epochs) * D.steps_per_epoch(c.n_train, c.settings.batch_size)
        made.append(D.DPSGDPVICentre(c, 1.0, 1.0, 0, max_steps=M["rounds"] * per_round))
        return made[-1]

    run_federated_unit(bc, data, UNIT, 5, wrap=wrap)
    c = made[0]
    assert 0 < c.steps <= c.max_steps and c.refused == 0
    before = c.steps
    out = c.fit([], {"epochs": 10 * int(c.centre.settings.epochs) + c.max_steps})
    assert isinstance(out, Abstain) and c.steps == before and c.refused == 1
