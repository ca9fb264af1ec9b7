"""Federated DEC: FedAvg weighting, FedAdam/FedYogi steps, centroid aggregations, invariants."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedclust.dec.federated import (
    DECClient,
    aggregate_centroids,
    dec_parameters,
    federated_centroids,
    kmeans_protocol,
    run_rounds,
)
from fedclust.dec.model import TSAE, DECModel, get_parameters, set_parameters
from fedclust.dec.optim import make_optimizer
from fedclust.dec.train import ae_epoch, batches, dec_epoch, shuffle_generator
from fedclust.errors import ConfigError, DisclosureError
from fedclust.federation import Abstain, FedAvg, FedOpt, Ledger, weighted_average
from fedclust.federation.disclosure import DisclosurePolicy

# generated data, algorithm tests: the protocol's own floor m only (issue 22's centre floor off)
OPEN = DisclosurePolicy(nfilter_subset=1, nfilter_tab=1)


def _make_model() -> DECModel:
    return DECModel(TSAE([8, 6, 3]), 2, 1.0)


def _data(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((n, 8)).astype(np.float32)


def test_fedavg_is_sample_weighted():
    a = [np.array([1.0, 0.0]), np.array([[2.0]])]
    b = [np.array([4.0, 3.0]), np.array([[5.0]])]
    out = weighted_average([(a, 1), (b, 2)])
    assert np.allclose(out[0], [3.0, 2.0]) and np.allclose(out[1], [[4.0]])


def test_fedadam_and_fedyogi_server_steps():
    cur = [np.array([1.0, 1.0])]
    res = [([np.array([2.0, 0.0])], 1), ([np.array([0.0, 0.0])], 3)]  # avg = [0.5, 0]
    d = np.array([-0.5, -1.0])
    adam = FedOpt(kind="adam", eta=0.1, beta_1=0.9, beta_2=0.99, tau=1e-3)
    out = adam.aggregate_fit(1, res, cur)[0]
    m, v = 0.1 * d, 0.01 * d * d
    assert np.allclose(out, 1 + 0.1 * m / (np.sqrt(v) + 1e-3))
    yogi = FedOpt(kind="yogi", eta=0.1, beta_1=0.9, beta_2=0.99, tau=1e-3)
    out = yogi.aggregate_fit(1, res, cur)[0]
    vy = 0 - 0.01 * d * d * np.sign(0 - d * d)
    assert np.allclose(out, 1 + 0.1 * m / (np.sqrt(vy) + 1e-3))
    # second round: Yogi's v grows additively while Adam's decays geometrically
    out2 = yogi.aggregate_fit(2, res, [out])[0]
    d2 = np.array([0.5, 0.0]) - out
    assert np.allclose(yogi.v[0], vy - 0.01 * d2 * d2 * np.sign(vy - d2 * d2))
    assert out2.shape == (2,)


def test_max_min_known_answer():
    # two clients, k = 3; the first pick is forced by a seeded rng, then farthest points.
    c1 = np.array([[0.0, 0.0], [0.1, 0.0], [10.0, 0.0]])
    c2 = np.array([[0.0, 10.0], [0.0, 0.1], [5.0, 5.0]])
    rng = np.random.default_rng(0)
    first = int(np.random.default_rng(0).integers(6))
    out = aggregate_centroids("max_min", [c1, c2], [np.ones(3), np.ones(3)], 3, rng)
    allc = np.concatenate([c1, c2])
    assert np.allclose(out[0], allc[first])
    # from any start among these points, the farthest-point traversal picks the 3 extremes
    # {origin-ish, (10,0), (0,10)} when the start is one of them
    expected = {(0.0, 0.0), (10.0, 0.0), (0.0, 10.0)}
    if tuple(allc[first]) in expected:
        assert {tuple(r) for r in out} == expected

    # from the origin explicitly: origin, then (10,0) or (0,10) (tie → first index), then the other
    class Fixed:
        def integers(self, n):
            return 0

    out0 = aggregate_centroids("max_min", [c1, c2], [np.ones(3), np.ones(3)], 3, Fixed())
    assert np.allclose(out0, [[0, 0], [10, 0], [0, 10]])


def test_random_and_random_weighted_and_double_kmeans():
    c1 = np.array([[0.0, 0.0], [10.0, 10.0]])
    c2 = np.array([[0.2, 0.0], [10.2, 10.0]])
    n = [np.array([5, 5]), np.array([5, 0])]
    r = aggregate_centroids("random", [c1, c2], n, 2, np.random.default_rng(1))
    assert len({tuple(x) for x in r}) == 2 and all(
        any(np.allclose(x, y) for y in np.concatenate([c1, c2])) for x in r
    )
    for s in range(20):  # an empty cluster (weight 0) is never drawn
        rw = aggregate_centroids("random_weighted", [c1, c2], n, 2, np.random.default_rng(s))
        assert not any(np.allclose(x, [10.2, 10.0]) for x in rw)
        assert len({tuple(x) for x in rw}) == 2
    dk = aggregate_centroids("double_kmeans", [c1, c2], n, 2, np.random.default_rng(0))
    dk = dk[np.argsort(dk[:, 0])]
    # weighted means: (0*5 + 0.2*5)/10 = 0.1 ; (10*5 + 10.2*0)/5 = 10
    assert np.allclose(dk, [[0.1, 0.0], [10.0, 10.0]], atol=1e-5)
    with pytest.raises(ConfigError, match="unknown centroid aggregation"):
        aggregate_centroids("median", [c1], [n[0]], 2, np.random.default_rng(0))


def test_double_kmeans_single_client_returns_its_centroids():
    c = np.array([[0.0, 0.0], [5.0, 5.0], [-5.0, 3.0]])
    out = aggregate_centroids(
        "double_kmeans", [c], [np.array([3, 4, 5])], 3, np.random.default_rng(0)
    )
    assert np.allclose(np.sort(out, axis=0), np.sort(c, axis=0), atol=1e-5)


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("stage", ["ae", "dec"])
def test_one_client_fedavg_round_equals_centralized_epoch(stage, shuffle):
    x = _data(40)
    torch.manual_seed(0)
    ref = _make_model()
    with torch.no_grad():
        ref.centroids.copy_(torch.randn(2, 3))
    start = get_parameters(ref)
    cfg = {"stage": stage, "optimizer": "sgd", "lr": 0.05, "batch_size": 16, "epochs": 1}
    cfg["shuffle"] = shuffle
    # centralized: one epoch from the same start with a fresh optimizer (same shuffle seed)
    central = _make_model()
    set_parameters(central, start)
    target = central.tsae if stage == "ae" else central
    params = [p for n, p in target.named_parameters() if "dec_bias" not in n or stage == "ae"]
    opt = make_optimizer("sgd", params, 0.05)
    xt = torch.as_tensor(x)
    gen = shuffle_generator(7)
    if stage == "ae":
        ae_epoch(central.tsae, xt, opt, 16, shuffle=shuffle, gen=gen)
    else:
        dec_epoch(central, xt, opt, 16, shuffle=shuffle, gen=gen)
    # federated: one client, FedAvg, one round
    client = DECClient("c0", x, _make_model, seed=7)
    ledger = Ledger()
    # stage dec shares the encoder + centroids only (no decoder): 2 fewer arrays than the model
    init = dec_parameters(ref) if stage == "dec" else get_parameters(ref.tsae)
    out = run_rounds([client], FedAvg(), init, 1, cfg, ledger, [])
    expect = dec_parameters(central) if stage == "dec" else get_parameters(target)
    assert len(out) == len(expect) == len(get_parameters(target)) - 2 * (stage == "dec")
    for a, b in zip(out, expect, strict=True):
        assert np.allclose(a, b, atol=1e-6)
    assert ledger.n_messages == 2
    assert ledger.records[1]["floats"] == sum(a.size for a in out) + 2  # params + n + loss


def test_identical_clients_fedavg_equals_client_update():
    x = _data(30, 3)
    torch.manual_seed(0)
    start = get_parameters(_make_model().tsae)
    cfg = {"stage": "ae", "optimizer": "adam", "lr": 0.01, "batch_size": 8, "epochs": 1}
    one = run_rounds([DECClient("a", x, _make_model)], FedAvg(), start, 2, cfg, Ledger(), [])
    three = run_rounds(
        [DECClient(c, x, _make_model) for c in "abc"], FedAvg(), start, 2, cfg, Ledger(), []
    )
    for a, b in zip(one, three, strict=False):
        assert np.allclose(a, b, atol=1e-6)


def test_federated_centroids_go_through_the_ledger():
    torch.manual_seed(0)
    clients = [DECClient(f"c{i}", _data(20, i), _make_model, disclosure=OPEN) for i in range(3)]
    ledger = Ledger()
    params = get_parameters(_make_model().tsae)
    mu = federated_centroids(
        clients, params, "max_min", 2, np.random.default_rng(0), ledger, n_init=3
    )
    assert mu.shape == (2, 3)
    t = ledger.table()
    up = t[t.kind == "kmeans_centroids"]
    assert len(up) == 3 and (up.floats == 2 * 3 + 2).all()  # k centroids (k×f) + k counts
    assert (t[t.kind == "global_centroids"].floats == 6).all()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_center_with_at_most_k_samples_abstains(n):
    """k = 2: with n <= k samples k-means' centroids are the samples (n = k + 1 would leave
    k - 1 singletons, which min_cluster_size catches)."""
    params = get_parameters(_make_model().tsae)
    tiny = DECClient("tiny", _data(n), _make_model, disclosure=OPEN)
    cfg = {"k": 2, "n_init": 1, "seed": 0}
    if n <= 2:
        assert isinstance(tiny.kmeans(params, cfg), Abstain)
    else:
        assert tiny.kmeans(params, cfg)["counts"].sum() == 3  # m = 1 allows it ...
        assert isinstance(
            tiny.kmeans(params, {**cfg, "min_cluster_size": 2}), Abstain
        )  # ... m=2 not


def test_abstaining_centers_are_recorded_and_too_few_centroids_fail_clearly():
    params = get_parameters(_make_model().tsae)
    tiny = DECClient("tiny", _data(2), _make_model)  # exactly k samples
    big = DECClient("big", _data(20), _make_model)
    ledger = Ledger()
    mu = federated_centroids([tiny, big], params, "max_min", 2, np.random.default_rng(0), ledger,
                             n_init=2, min_cluster_size=3)  # fmt: skip
    assert mu.shape == (2, 3)
    t = ledger.table()
    up = t.query("kind == 'kmeans_centroids'").set_index("sender")
    assert list(up.index) == ["big"] and up.loc["big", "floats"] == 2 * 3 + 2
    ab = ledger.abstentions()
    assert ab.to_dict("records") == [{"round": 0, "center": "tiny", "protocol": "dec_kmeans",
                                      "reason": "no more samples than clusters"}]  # fmt: skip
    # the reason leaves the centre without its counts (issue 22)
    with pytest.raises(ConfigError, match="only 0 centroids for k=2"):
        federated_centroids([tiny], params, "random", 2, np.random.default_rng(0), Ledger())


def test_k_sample_centroids_cannot_cross_the_ledger():
    """Even if a center tried, the ledger refuses centroids over fewer than m samples."""
    led = Ledger()
    z = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    with pytest.raises(DisclosureError, match=r"min-samples>=5") as err:
        led.send("tiny", "server", {"centroids": z, "counts": np.array([1, 1])}, 0,
                 "kmeans_centroids", protocol=kmeans_protocol(5))  # fmt: skip
    assert err.value.center == "tiny" and err.value.protocol == "dec_kmeans"
    with pytest.raises(DisclosureError, match="declared-fields-only"):
        led.send("tiny", "server", {"centroids": z, "counts": np.array([9, 9]), "z": z},
                 protocol=kmeans_protocol(5))  # fmt: skip


def test_dec_stage_does_not_send_the_decoder():
    x = _data(30)
    torch.manual_seed(0)
    model = _make_model()
    client = DECClient("c", x, _make_model)
    led = Ledger()
    cfg = {"stage": "dec", "optimizer": "sgd", "lr": 0.05, "batch_size": 16, "epochs": 1}
    out = run_rounds([client], FedAvg(), dec_parameters(model), 1, cfg, led, [])
    n_dec_bias = sum(b.numel() for b in model.tsae.dec_bias)
    assert sum(a.size for a in out) == sum(p.numel() for p in model.parameters()) - n_dec_bias
    assert led.table().floats.iloc[0] == sum(a.size for a in out)  # the broadcast


def test_shuffled_batches_are_a_fresh_permutation_every_epoch():
    gen = shuffle_generator(3)
    a = torch.cat(batches(50, 16, True, gen))
    b = torch.cat(batches(50, 16, True, gen))
    assert sorted(a.tolist()) == list(range(50)) and sorted(b.tolist()) == list(range(50))
    assert not torch.equal(a, b)  # redrawn each epoch
    assert torch.equal(a, torch.cat(batches(50, 16, True, shuffle_generator(3))))  # seeded
    assert torch.equal(torch.cat(batches(50, 16, False, None)), torch.arange(50))


def test_shuffled_client_sees_mixed_batches_of_class_sorted_data():
    """The defect of the first landing: in-order batches of a class-sorted file are one class each;
    with shuffling (the default) every batch of a 2-class sorted array holds both classes."""
    y = np.repeat([0, 1], 64)
    for idx in batches(len(y), 16, True, shuffle_generator(0)):
        assert len(set(y[idx.numpy()].tolist())) == 2
    for idx in batches(len(y), 16, False, None):
        assert len(set(y[idx.numpy()].tolist())) == 1
