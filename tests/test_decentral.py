"""Seed 004 decentral stage: network, Keras semantics, aggregation, topologies, divergence."""

from __future__ import annotations

import copy
import math
import random

import numpy as np
import pytest
import torch

from fedclust.config import load_yaml, validate_config
from fedclust.decentral.clients import ClientData, make_client_data
from fedclust.decentral.divergence import pairwise_divergence, weight_divergence
from fedclust.decentral.experiment import run_approach
from fedclust.decentral.model import N_PARAMETERS, HeartNet, KerasAdam, count_parameters
from fedclust.decentral.simulate import weighted_summary
from fedclust.decentral.topologies import derangement, fixed_topology, plan_round
from fedclust.errors import ConfigError
from fedclust.federation.strategy import FedAvg, aggregate, ave_weights_published

N = [114, 219, 103, 113, 138]  # thesis n_train of clev, hung, long, stat, swit


def test_parameter_count_and_keras_order():
    m = HeartNet()
    w = m.get_weights()
    assert count_parameters(m) == N_PARAMETERS == 177_729
    assert len(w) == 32
    assert w[0].shape == (20, 256) and w[2].shape == (256,)  # kernel (in, out), bias, gamma
    assert w[-2].shape == (32, 1) and not w[1].any()  # zero biases
    limit = math.sqrt(6 / (20 + 256))  # Glorot uniform
    assert np.abs(w[0]).max() <= limit and np.abs(w[0]).max() > 0.9 * limit
    trainable = sum(p.numel() for p in m.parameters())
    assert trainable == 175_873


def test_set_get_roundtrip():
    a, b = HeartNet(), HeartNet()
    b.set_weights(a.get_weights())
    for x, y in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_array_equal(x, y)


def test_keras_batchnorm_biased_moving_variance_and_single_row():
    m = HeartNet()
    m.train()
    x = torch.rand(5, 20)
    bn = m.bn[0]
    h = torch.relu(m.dense[0](x)).detach().numpy()
    m(x)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.99 + 0.01 * h.var(0), rtol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.01 * h.mean(0), rtol=1e-5, atol=1e-7)
    assert torch.isfinite(m(torch.rand(1, 20))).all()  # the thesis' batch of one row works


def test_keras_adam_matches_reference():
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt = KerasAdam([p], lr=0.1)
    w, m, v = np.array([1.0, -2.0]), np.zeros(2), np.zeros(2)
    for t in (1, 2, 3):
        g = np.array([0.5, -0.25]) * t
        p.grad = torch.tensor(g, dtype=torch.float32)
        opt.step()
        m = m + (g - m) * 0.1
        v = v + (g * g - v) * 0.001
        w = w - 0.1 * math.sqrt(1 - 0.999**t) / (1 - 0.9**t) * m / (np.sqrt(v) + 1e-7)
    np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-5)


def test_initial_penalty_matches_spec():
    pen = float(HeartNet().penalty().detach())
    assert 3.9 < pen < 4.4  # spec §3.3: ≈ 3.77 (L1) + 0.37 (L2) ≈ 4.15


def test_weighted_vs_simple_average_known_case():
    a, b = [np.array([1.0]), np.array([[0.0, 2.0]])], [np.array([3.0]), np.array([[4.0, 2.0]])]
    w = aggregate([a, b], [1, 3])
    np.testing.assert_allclose(w[0], [2.5])
    np.testing.assert_allclose(w[1], [[3.0, 2.0]])
    res = [(a, 1, {}), (b, 3, {})]
    np.testing.assert_allclose(FedAvg("weighted").aggregate_fit(1, res)[0], [2.5])
    np.testing.assert_allclose(FedAvg("simple").aggregate_fit(1, res)[0], [2.0])
    with pytest.raises(ValueError, match="2 weight sets but 3"):
        aggregate([a, b], [1, 2, 3])
    # the published ave_weights silently drops extra entries (spec §4.1)
    np.testing.assert_allclose(ave_weights_published([1, 3], [a, b, [x * 100 for x in a]])[0],
                               [2.5])  # fmt: skip


def test_fl_round_identical_clients_unchanged():
    w = HeartNet().get_weights()
    results = [(copy.deepcopy(w), n, {}) for n in N]
    agg = FedAvg().aggregate_fit(1, results)
    for x, y in zip(agg, w, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)


def test_published_rar_effective_flow():
    plan = plan_round(fixed_topology("RAR", 5), N, "as_published")
    for r in range(1, 5):  # clients 1–4 receive nothing: own old and new weights only
        assert plan.entries[r - 1] == [("old", r), ("new", r)]
    assert plan.entries[4] == [("old", 5), ("new", 1)]  # client 5 takes client 1, drops its own
    assert plan.weights[0] == [138, 114] and plan.weights[4] == [113, 138]
    used = [(s, r) for s, r, u in plan.messages if u]
    assert used == [(1, 5)] and len(plan.messages) == 5
    described = plan_round(fixed_topology("RAR", 5), N, "as_described")
    assert described.entries[1] == [("new", 2), ("new", 1)]  # 1 → 2 as the text says
    assert described.entries[0] == [("new", 1), ("new", 5)]


def test_published_conditional_gossip_isolates_2_and_4():
    topo = fixed_topology("GL_conditional", 5)
    assert topo == [3, 1, [2, 5], 3, 4]
    plan = plan_round(topo, N, "as_published")
    assert plan.entries[2] == [("old", 3), ("new", 1), ("new", 3)]
    assert plan.weights[2] == [219, 138, 103]
    assert plan.entries[4] == [("old", 5), ("new", 3)]
    assert plan.entries[1] == [("old", 2), ("new", 2)] and plan.entries[3] == [
        ("old", 4),
        ("new", 4),
    ]


def test_random_gossip_derangements_match_thesis_seed():
    rnd, clients = random.Random(0), [1, 2, 3, 4, 5]
    got = [derangement(rnd, clients) for _ in range(5)]
    assert got == [
        [3, 1, 2, 5, 4],
        [4, 5, 2, 1, 3],
        [2, 5, 1, 3, 4],
        [5, 3, 1, 2, 4],
        [3, 5, 1, 2, 4],
    ]  # fmt: skip  (spec §4.7)
    plan = plan_round(got[0], N, "as_published")
    assert plan.entries[2] == [("old", 3), ("new", 1)] and plan.weights[2] == [219, 103]
    assert plan.entries[4] == [("old", 5), ("new", 4)] and plan.weights[4] == [113, 138]


def test_topologies_generalise_to_four_clients():
    assert fixed_topology("RAR", 4) == [4, 1, 2, 3]
    assert fixed_topology("GL_conditional", 4) == [3, 1, [2, 4], 3]
    assert fixed_topology("customized", 5) == [[4, 5], [5, 1], [1, 2], [2, 3], [3, 4]]


def test_divergence_formula():
    a = [np.array([3.0, 0.0]), np.array([0.0])]
    b = [np.array([0.0, 4.0]), np.array([0.0])]
    assert weight_divergence(a, b) == pytest.approx(5 / 3.5)
    assert weight_divergence(a, a) == 0.0
    d = pairwise_divergence([a, b, a])
    assert list(d) == ["1-2", "1-3", "2-3"] and d["1-3"] == 0.0 and d["1-2"] == d["2-3"]


def _tiny_clients(k: int = 3, n: int = 24) -> list[ClientData]:
    r = np.random.default_rng(0)
    X = r.random((k * n, 20)).astype(np.float32)
    y = (X[:, 0] + 0.2 * r.standard_normal(k * n) > 0.5).astype(int)
    import pandas as pd

    return make_client_data(pd.DataFrame(X), y, np.repeat([f"c{i}" for i in range(k)], n))


def test_fl_divergence_zero_and_ledger():
    res = run_approach(_tiny_clients(), "FL", "as_described", rounds=2, epochs=1, batch_size=8)
    assert (res.divergence["divergence"] == 0).all() and len(res.divergence) == 2 * 3
    kinds = res.ledger.table()["kind"].value_counts().to_dict()
    assert kinds == {"init": 3, "weights": 6, "global_weights": 6, "eval_metrics": 6}
    s = weighted_summary(res.metrics)
    assert (s["loss_total"] > s["loss_bce"]).all()  # the penalty is in the reported loss
    assert s["accuracy"].between(0, 1).all()


def test_published_rar_run_client5_copies_client1_direction():
    data = _tiny_clients(5, 16)
    res = run_approach(data, "RAR", "as_published", rounds=1, epochs=1, batch_size=8)
    t = res.ledger.table()
    w = t[t["kind"].str.startswith("weights")]
    assert w[w["kind"] == "weights"][["sender", "receiver"]].values.tolist() == [["c0", "c4"]]
    assert (w["kind"] == "weights_unused").sum() == 4
    desc = run_approach(data, "RAR", "as_described", rounds=1, epochs=1, batch_size=8)
    assert (desc.divergence["divergence"] > 0).all()


def test_config_schema_accepts_defaults_and_rejects_bad_mode(repo):
    schema = repo / "config" / "schema.yaml"
    for name in ("config.yaml", "thesis.yaml"):
        validate_config(load_yaml(repo / "config" / name), schema, source=name)
    cfg = load_yaml(repo / "config" / "config.yaml")
    cfg["decentral"]["modes"] = ["as_publshed"]
    with pytest.raises(ConfigError, match="as_published"):
        validate_config(cfg, schema, source="test")


def test_batched_copies_match_single_model_forward_and_step():
    from fedclust.decentral.batched import BatchedTrainer

    torch.manual_seed(0)
    singles = [HeartNet(dropout=0.0) for _ in range(2)]
    bt = BatchedTrainer(2, 20, 1e-3, "shared", seed=0)
    bt.model.p = 0.0
    for k, s in enumerate(singles):
        bt.model.set_weights(k, s.get_weights())
    x, y = torch.rand(6, 20), torch.tensor([0.0, 1, 1, 0, 1, 0])
    bt.model.eval()
    ref = torch.stack([s.eval()(x) for s in singles]).detach()
    torch.testing.assert_close(bt.model(x).detach(), ref, rtol=1e-5, atol=1e-5)
    # training: same gradients and BN moving statistics per copy as the single model
    bt.model.train()
    logits = bt.model(x)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(
        logits, y.expand_as(logits), reduction="none"
    ).mean(1)
    (bce + bt.model.penalty()).sum().backward()
    for k, s in enumerate(singles):
        s.train()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(s(x), y) + s.penalty()
        loss.backward()
        torch.testing.assert_close(bt.model.W[0].grad[k], s.dense[0].weight.grad)
        torch.testing.assert_close(bt.model.g[3].grad[k], s.bn[3].weight.grad)
        torch.testing.assert_close(bt.model.b[-1].grad[k], s.out.bias.grad)
        np.testing.assert_allclose(bt.model.get_weights(k)[5], s.get_weights()[5], rtol=1e-6)
    # Adam on the flat buffer of all copies == KerasAdam of each copy, given the same gradients
    before = [bt.model.get_weights(k) for k in range(2)]
    bt._adam()
    for k, s in enumerate(singles):
        for p_b, p_s in ((bt.model.W[0], s.dense[0].weight), (bt.model.b[-1], s.out.bias)):
            p_s.grad = p_b.grad[k].clone()
        opt = KerasAdam([s.dense[0].weight, s.out.bias])
        s.set_weights(before[k])
        opt.step()
        np.testing.assert_allclose(bt.model.get_weights(k)[0], s.get_weights()[0], rtol=1e-6)


def test_run_group_equals_protocol_of_single_runs():
    from fedclust.decentral.simulate import run_group

    data = _tiny_clients(5, 16)
    runs = [("FL", "as_described"), ("RAR", "as_published"), ("GL_random", "as_published")]
    res = run_group(data, runs, rounds=2, epochs=1, batch_size=8)
    assert (res[("FL", "as_described")].divergence["divergence"] == 0).all()
    single = run_approach(data, "RAR", "as_published", rounds=2, epochs=1, batch_size=8)
    pd_t = res[("RAR", "as_published")].ledger.table()
    assert pd_t.drop(columns=[]).equals(single.ledger.table())  # same messages, same sizes
    assert res[("GL_random", "as_published")].steps == 2 * 5 * 2  # 85 % of 16 rows: 2 batches
