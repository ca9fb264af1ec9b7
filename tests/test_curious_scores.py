"""The honest-but-curious server on a centre's scalar scores and losses (the map:
``tests/test_curious_coverage.py``): the stage's real centres through ``federate`` with a
:class:`RecordingLedger`, the attack on the kept messages and the server's own broadcasts only.
Defence off: the centres' floors at 1 (``OFF``); on: their own default floors."""

from __future__ import annotations

import numpy as np
import pytest

from fedclust.federation.disclosure import DEFAULT_POLICY
from fedclust.privacy.recorder import RecordingLedger
from fedclust.privacy.suite import OFF


# ------------------------------------------------------------------ admm_objective
def _admm_logistic(policy, iters: int = 12):
    from fedclust.admm.admm import AdmmSettings, admm_distributed

    g = np.random.default_rng(6)
    A = np.hstack([g.normal(size=(121, 4)), np.ones((121, 1))])
    y = np.where(A @ g.normal(size=5) + g.normal(size=121) > 0, 1.0, -1.0)
    blocks = [("c0", A[:1], y[:1]), ("c1", A[1:61], y[1:61]), ("c2", A[61:], y[61:])]
    led = RecordingLedger()
    admm_distributed(blocks, AdmmSettings("logistic", 0.1, rho=1.0, max_iter=iters), led,
                     policies=dict.fromkeys(("c0", "c1", "c2"), policy))  # fmt: skip
    return A, y, led


def _objective_row(led, cid: str, n_total: int):
    """A centre's loss at each broadcast z_k is (1/N)·Σ log(1 + exp(−y a·z_k)); for one row,
    −log(expm1(N·loss_k)) = y·a·z_k is linear in y·a: least squares over the iterations. The
    bias column (a₋₁ = 1) gives y, then a. None when the fit is not exact (more than one row)."""
    zs = [np.asarray(m["z"], float) for r, m in led.kept
          if r["protocol"] == "admm_consensus" and r["receiver"] == cid]  # fmt: skip
    loss = [float(m["loss"]) for _, m in led.received(protocol="admm_objective", sender=cid)]
    if not loss:
        return None
    Z, rhs = np.array(zs[: len(loss)]), -np.log(np.expm1(n_total * np.array(loss)))
    w, *_ = np.linalg.lstsq(Z, rhs, rcond=None)
    if np.max(np.abs(Z @ w - rhs)) > 1e-6 * max(1.0, np.max(np.abs(rhs))):
        return None
    label = float(np.sign(w[-1]))
    return w / label, label


@pytest.mark.parametrize("defence", [False, True])
def test_admm_objective_losses_of_a_one_row_centre_give_the_row_only_without_the_floor(defence):
    """Logistic consensus ADMM: each iteration a centre sends its weighted loss at the z the
    server broadcast. For a one-row centre the losses are a linear system in y·a: five
    iterations give the row and its label exactly. With its own floor (the GLM floor) the centre
    takes no part; a 60-row centre's losses fit no single row."""
    A, y, led = _admm_logistic(DEFAULT_POLICY if defence else OFF)
    got = _objective_row(led, "c0", 121)
    if not defence:
        a, label = got
        np.testing.assert_allclose(a, A[0], atol=1e-8)
        assert label == y[0]
    else:
        assert got is None and led.received(protocol="admm_objective", sender="c0") == []
        assert "c0" in set(led.abstentions()["center"])
    assert len(led.received(protocol="admm_objective", sender="c1")) == 12
    assert _objective_row(led, "c1", 121) is None


# ------------------------------------------------------------------ survival_fit (weights)
def _survival(optimizer: str, policy, sizes=(2, 3, 20, 20), lr: float = 0.05,
              strategy: str = "weights_averaging"):  # fmt: skip
    """Weights Averaging (or Ensemble's local models), one round of one full-batch epoch
    (D6.2's grid allows batches = 1), on centres of ``sizes`` patients, 5 covariates; each
    centre's first patient has the earliest time and an event (every patient is in a risk set
    with an event)."""
    import torch

    from fedclust.survival import strategies as ST
    from fedclust.survival.model import get_parameters
    from fedclust.survival.train import HyperParams, ModelConfig

    g = np.random.default_rng(0)
    n = sum(sizes)
    x = g.normal(size=(n, 5)).astype(np.float32)
    t, e = g.exponential(5.0, n), g.random(n) < 0.8
    owner = np.repeat(np.arange(len(sizes)), sizes)
    first = np.r_[0, np.cumsum(sizes)[:-1]]
    t[first], e[first] = 0.01, True
    mc = ModelConfig(optimizer=optimizer)
    cs = [ST.SurvivalClient(f"c{i}", x[owner == i], t[owner == i], e[owner == i], mc, i)
          for i in range(len(sizes))]  # fmt: skip
    for c in cs:
        c.disclosure = policy
        if policy is OFF:  # the centre's own floor off too (its per-unit floor included)
            c.min_samples = 1
    torch.manual_seed(0)
    init = get_parameters(mc.build(5))
    led = RecordingLedger()
    hp = HyperParams(fe=1, ie=1, batches=1, lr=lr)
    ST.train_strategy(strategy, cs, init, hp, mc, led, np.random.default_rng(0))
    return x, owner, init, hp, mc, led


def _first_layer_rows(update, init, lr: float, mc) -> list[np.ndarray]:
    """One SGD step on the first layer: ΔW = −lr·(Σᵢ δᵢ xᵢᵀ + ∂penalty), Δb = −lr·Σᵢ δᵢ, with
    δᵢ,ₕ = 0 where ReLU unit h is off for patient i. A unit on for one patient only gives
    that patient's row: (−ΔWₕ/lr − ∂penaltyₕ) / (−Δbₕ/lr). One candidate per unit (the server
    knows W₀, its lr and the model's penalty)."""
    W0, b0 = (np.asarray(a, np.float64) for a in init[:2])
    W1, b1 = (np.asarray(a, np.float64) for a in update[:2])
    gW = -(W1 - W0) / lr - (mc.l1 * np.sign(W0) + 2.0 * mc.l2 * W0)
    gb = -(b1 - b0) / lr
    return [gW[h] / gb[h] for h in range(len(gb)) if abs(gb[h]) > 1e-6]


def _matched(cands, rows, tol: float = 1e-3) -> set[int]:
    return {int(np.abs(rows - c).max(1).argmin()) for c in cands
            if np.abs(rows - c).max(1).min() < tol}  # fmt: skip


SURVIVAL = {"survival_fit": "weights_averaging", "survival_local_model": "ensemble"}


@pytest.mark.parametrize("protocol", list(SURVIVAL))
@pytest.mark.parametrize("defence", [False, True])
def test_survival_fit_first_layer_of_a_two_patient_centre_gives_both_rows_only_without_floor(
    defence, protocol
):
    """The model update of a Cox net (ReLU, hidden (8, 4)) after one SGD step: the ratio of a
    first-layer unit's weight and bias changes is the row of the one patient it is active for.
    Without a floor a two-patient centre's update gives both its patients exactly (float32);
    with its own floor (3) it abstains, and a 20-patient centre's units each see many. The same
    for Ensemble's local models (``survival_local_model``): the small centre abstains (the
    ledger records it) and the ensemble goes on without it."""
    policy = DEFAULT_POLICY if defence else OFF
    x, owner, init, hp, mc, led = _survival("sgd", policy, strategy=SURVIVAL[protocol])
    got = [m for _, m in led.received(protocol=protocol, sender="c0")]
    if not defence:
        (m,) = got
        cands = _first_layer_rows(m["parameters"], init, hp.lr, mc)
        assert _matched(cands, x[owner == 0]) == {0, 1}  # both patients' covariates
    else:
        assert got == [] and "c0" in set(led.abstentions()["center"])
    for c in ("c2", "c3"):
        ((_, m),) = led.received(protocol=protocol, sender=c)
        i = int(c[1:])
        assert _matched(_first_layer_rows(m["parameters"], init, hp.lr, mc), x[owner == i]) == set()


@pytest.mark.parametrize("protocol", list(SURVIVAL))
@pytest.mark.parametrize("defence", [False, True])
def test_survival_fit_first_layer_gives_no_row_of_a_centre_at_the_floor(protocol, defence):
    """A 3-patient centre (the floor) after full-batch SGD: a first-layer ReLU unit active for
    one of its patients gives that patient's covariates ((ΔW_h/lr + penalty)/(Δb_h/lr)), every
    patient of the centre to 1e-3. The centre's per-unit floor
    (:mod:`fedclust.federation.unit_floor`) resets every hidden unit that fewer than 3 of its
    patients reached to the received weights, and says how many (``units_withheld``): nothing
    is recovered. With the floors at 1 the same update gives all three."""
    policy = DEFAULT_POLICY if defence else OFF
    x, owner, init, hp, mc, led = _survival("sgd", policy, sizes=(3, 20, 20),
                                            strategy=SURVIVAL[protocol])  # fmt: skip
    ((_, m),) = led.received(protocol=protocol, sender="c0")  # 3 patients: at the floor
    found = _matched(_first_layer_rows(m["parameters"], init, hp.lr, mc), x[owner == 0])
    if defence:
        assert found == set(), f"patients {found} of the 3-patient centre recovered"
        assert m["units_withheld"] > 0
    else:
        assert found == {0, 1, 2}
        assert "units_withheld" not in m


def test_survival_fit_adam_step_keeps_the_rows_from_the_ratio_attack():
    """The default optimiser (Adam): its first step is ≈ −lr·sign(g) per weight, so the ratio
    attack gets no row, even of the two-patient centre without a floor (an optimisation-based
    inversion is not attempted here)."""
    x, owner, init, hp, mc, led = _survival("adam", OFF)
    for i in range(4):
        ((_, m),) = led.received(protocol="survival_fit", sender=f"c{i}")
        assert _matched(_first_layer_rows(m["parameters"], init, hp.lr, mc), x[owner == i]) == set()


# ------------------------------------------------------------------ dec_ae_fit (tied TSAE)
DIMS = [12, 10, 6, 3]


def _dec_stage_a(policy, sizes=(1, 15, 15), lr: float = 0.1):
    """One FedAvg round of DEC stage A (the tied TSAE, FedAvg + SGD as in seed 000 §1.8: local
    SGD with momentum 0.9, one epoch, batch 32 ≥ every centre: one step, whose update is −lr·g)
    on centres of ``sizes`` rows in [0, 1]."""
    import torch

    from fedclust.dec.federated import DECClient, make_strategy, run_rounds
    from fedclust.dec.model import TSAE, DECModel, get_parameters

    x = np.random.default_rng(5).random((sum(sizes), DIMS[0])).astype(np.float32)
    owner = np.repeat(np.arange(len(sizes)), sizes)

    def make_model():
        return DECModel(TSAE(DIMS), 3)

    torch.manual_seed(0)
    p0 = get_parameters(make_model().tsae)
    cs = [DECClient(f"c{i}", x[owner == i], make_model, disclosure=policy)
          for i in range(len(sizes))]  # fmt: skip
    led = RecordingLedger()
    cfg = {"stage": "ae", "optimizer": "sgd", "lr": lr, "batch_size": 32, "epochs": 1,
           "loss": "mse"}  # fmt: skip
    run_rounds(cs, make_strategy("fedavg", {}), p0, 1, cfg, led, [])
    return x, owner, p0, lr, led


def _tsae_row(p0, p1, lr: float) -> np.ndarray:
    """A one-patient centre's row from its TSAE update after one SGD step (decoder biases are
    not trained in stage A). The first weight W is tied: g_W = δ xᵀ + a rᵀ (encoder: δ the
    first layer's pre-activation gradient = g_b; decoder: a its last layer's input, r the
    output's pre-activation gradient), so y = g_Wᵀδ/|δ|² = x + r·(aᵀδ)/|δ|², and x is the fixed
    point of x = y − r(x)·(a(x)ᵀδ)/|δ|² (a, r: the server's own forward pass at W₀), from y."""
    import torch
    import torch.nn.functional as F

    from fedclust.dec.model import TSAE, set_parameters

    m = TSAE(DIMS).double()
    set_parameters(m, [np.asarray(a, np.float64) for a in p0])
    keys = list(m.state_dict())
    g = {k: (np.asarray(a, np.float64) - np.asarray(b, np.float64)) / lr
         for k, a, b in zip(keys, p0, p1, strict=True)}  # fmt: skip
    G, delta = torch.tensor(g["weights.0"]), torch.tensor(g["enc_bias.0"])
    y = G.T @ delta / (delta @ delta)

    def r_a(x):
        z = m.encode(x[None, :]).detach()
        for i in reversed(range(1, len(m.weights))):
            z = m.hidden_act(F.linear(z, m.weights[i].t(), m.dec_bias[i])).detach()
        pre = F.linear(z, m.weights[0].t(), m.dec_bias[0]).detach().requires_grad_(True)
        (r,) = torch.autograd.grad(F.mse_loss(m.final_act(pre), x[None, :]), pre)
        return r[0], z[0]

    x = y.clone()
    for _ in range(200):
        r, a = r_a(x)
        x_new = y - r * (a @ delta) / (delta @ delta)
        if torch.max(torch.abs(x_new - x)) < 1e-12:
            break
        x = x_new
    return x_new.detach().numpy()


@pytest.mark.parametrize("defence", [False, True])
def test_dec_ae_fit_tied_tsae_of_a_one_patient_centre_inverted_only_without_the_floor(defence):
    """DEC stage A's update of a one-patient centre: the tied first weight mixes the encoder's
    δxᵀ and the decoder's arᵀ, and a fixed point through the server's own model separates them:
    the patient's row exactly (float32). With its own floor (3) the centre abstains; a
    15-patient centre's update fits none of its rows."""
    x, owner, _, lr, led = _dec_stage_a(DEFAULT_POLICY if defence else OFF)
    down = [m for r, m in led.received(protocol="dec_ae_fit") if r["sender"] == "server"]
    p0 = down[0]["parameters"]  # the server's own broadcast of round 1 (the same to all)
    got = [m for _, m in led.received(protocol="dec_ae_fit", sender="c0")]
    if not defence:
        (m,) = got
        np.testing.assert_allclose(_tsae_row(p0, m["parameters"], lr), x[0], atol=1e-5)
    else:
        assert got == [] and "c0" in set(led.abstentions()["center"])
    ((_, m),) = led.received(protocol="dec_ae_fit", sender="c1")
    assert np.abs(x[owner == 1] - _tsae_row(p0, m["parameters"], lr)).max(1).min() > 0.05
