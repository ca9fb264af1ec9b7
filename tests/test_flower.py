"""Flower engine == in-process engine (issue 13): same seeds, one thread, same numbers.

Federated DEC (tiny sizes) and heart FL (tiny rounds/epochs) run once on the core's in-process
engine and once on Flower's Simulation Runtime; weights, metrics and ledger tables must agree
to 1e-6 (they agree bit for bit: Flower moves .npy bytes and the core does the arithmetic).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("flwr")


from fedclust.errors import ConfigError, DisclosureError
from fedclust.federation import Ledger, fit_protocol
from fedclust.flower.records import decode, encode
from fedclust.transports import get as get_transport


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def toy(toy_blobs):
    x, y = toy_blobs(200, 12, 0.6, 0)
    return x, y, np.repeat(["a", "b"], 100)


@pytest.fixture(scope="module")
def cfg(dec_toy_cfg):
    return dec_toy_cfg(strategies=["fedyogi"], centroid_aggregation=["max_min"], ae_rounds=2,
                       dec_rounds=2, ae_batch_size=16)  # fmt: skip


def test_records_round_trip_bitwise():
    w = [np.random.default_rng(0).random((3, 2)).astype(np.float32), np.arange(4)]
    msg = {"parameters": w, "counts": np.array([5, 7]), "n": np.int64(9), "loss": 0.25,
           "stage": "ae", "shuffle": True}  # fmt: skip
    out = decode(encode(msg))
    assert [a.dtype for a in out["parameters"]] == [np.float32, np.int64]
    assert all(np.array_equal(a, b) for a, b in zip(out["parameters"], w, strict=True))
    assert np.array_equal(out["counts"], msg["counts"]) and out["n"] == 9
    assert out["loss"] == 0.25 and out["stage"] == "ae" and out["shuffle"] is True


def test_engine_is_checked():
    assert get_transport("flower-simulation").name == "flower-simulation"
    with pytest.raises(ConfigError, match="unknown engine 'ray'"):
        get_transport("ray")


def test_missing_flower_is_a_config_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "flwr", None)  # as if the extra were not installed
    with pytest.raises(ConfigError, match=r"fedclust\[flower\]"):
        get_transport("flower-simulation")
    assert get_transport("inprocess").name == "inprocess"


def _dec_clients(cfg, x, centers):
    from fedclust.dec.federated import DECClient
    from fedclust.dec.model import DECModel
    from fedclust.dec.pipeline import make_tsae

    def make_model():
        return DECModel(make_tsae(cfg, 12), 3, 1.0)

    return make_model, [DECClient(f"center_{c}", x[centers == c], make_model, "cpu", i)
                        for i, c in enumerate(("a", "b"))]  # fmt: skip


def test_dec_rounds_weights_equal_on_flower(cfg, toy):
    """Two FedAdam TSAE rounds: the final weights, losses and ledgers of both engines."""
    from fedclust.dec.federated import make_strategy, run_rounds
    from fedclust.dec.model import get_parameters

    x, _, centers = toy
    fit = {"stage": "ae", "optimizer": "adam", "lr": 0.01, "batch_size": 16, "epochs": 1,
           "loss": "mse", "shuffle": True}  # fmt: skip
    out = {}
    for engine in ("inprocess", "flower-simulation"):
        make_model, clients = _dec_clients(cfg, x, centers)
        torch.manual_seed(5)
        w0 = get_parameters(make_model().tsae)
        led, losses = Ledger(), []
        server = {"eta": 0.01, "beta_1": 0.9, "beta_2": 0.999, "tau": 1e-3}
        w = run_rounds(clients, make_strategy("fedadam", server), w0, 2, fit, led, losses,
                       transport=get_transport(engine))  # fmt: skip
        out[engine] = (w, losses, led.table())
    (wa, la, ta), (wb, lb, tb) = out["inprocess"], out["flower-simulation"]
    assert len(la) == 2 and np.allclose(la, lb, rtol=0, atol=1e-6)
    for a, b in zip(wa, wb, strict=True):
        assert a.dtype == b.dtype and np.allclose(a, b, rtol=0, atol=1e-6)
    assert not np.allclose(wa[0], w0[0])  # it trained
    pd.testing.assert_frame_equal(ta, tb)
    assert (ta.kind == "ae_update").sum() == 4 and ta.floats.sum() > 0


def test_federated_dec_pipeline_equal_on_flower(cfg, toy):
    from fedclust.dec.pipeline import run_federated

    x, y, centers = toy
    from fedclust.flower import simulation

    calls = []
    real = simulation.simulate
    simulation.simulate = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        a = run_federated(x, y, centers, cfg, "toy", "s", 3)
        assert not calls
        b = run_federated(x, y, centers, cfg, "toy", "s", 3,
                          transport=get_transport("flower-simulation"))  # fmt: skip
    finally:
        simulation.simulate = real
    assert len(calls) == 3  # TSAE rounds, stage B (local k-means) and DEC rounds on Flower
    num = a.table.select_dtypes("number").columns
    assert len(num) > 10 and a.table.accuracy.iloc[0] > 0.6
    assert np.allclose(a.table[num], b.table[num], rtol=0, atol=1e-6)
    assert np.allclose(a.curves.loss, b.curves.loss, rtol=0, atol=1e-6)
    pd.testing.assert_frame_equal(a.ledger, b.ledger)


def test_kmeans_round_and_abstention_over_flower_messages(cfg, toy):
    """Stage B (one query per center) through Flower's Message API: the same messages as the
    in-process proxy, and a center with <= k samples abstains over the wire too."""
    from fedclust.dec.federated import KMEANS_REQUEST, kmeans_protocol, local_centroid_messages
    from fedclust.dec.model import get_parameters
    from fedclust.flower.apps import FlowerClientProxy
    from fedclust.flower.simulation import simulate

    x, _, _ = toy
    centers = np.array(["a"] * 197 + ["b"] * 3)  # b has k = 3 samples
    make_model, clients = _dec_clients(cfg, x, centers)
    torch.manual_seed(0)
    ae = get_parameters(make_model().tsae)
    led_a = Ledger()
    ref = local_centroid_messages(clients, ae, 3, led_a, 3, 1, min_cluster_size=5)
    led_b = Ledger()
    req = {"parameters": ae, "k": 3, "n_init": 3, "seed": 1, "scaler": "none",
           "min_cluster_size": 5}  # fmt: skip

    def main(grid, node_of):
        ps = [FlowerClientProxy(c.cid, node_of[c.cid], grid, led_b) for c in clients]
        return [p.call("kmeans", req, 0, "kmeans_centroids", kmeans_protocol(5), KMEANS_REQUEST)
                for p in ps]  # fmt: skip

    got = simulate(main, clients)
    assert got[1] is None and len(ref) == 1
    assert np.array_equal(got[0]["centroids"], ref[0]["centroids"])
    assert np.array_equal(got[0]["counts"], ref[0]["counts"])
    pd.testing.assert_frame_equal(led_a.table(), led_b.table())
    assert led_b.abstentions().center.tolist() == ["center_b"]


def test_a_round_goes_out_to_every_centre_before_the_first_reply_is_awaited(cfg, toy):
    """fit_all / call_all: every centre's request is pushed before any reply is pulled (the
    centres of a deployment work at the same time); weights and ledger rows are those of the
    one-at-a-time in-process loop."""
    from fedclust.dec.federated import AE_FIT, make_strategy, run_rounds
    from fedclust.dec.model import get_parameters
    from fedclust.federation import engine as core_engine
    from fedclust.flower.apps import FlowerClientProxy
    from fedclust.flower.simulation import simulate

    x, _, centers = toy
    fit = {"stage": "ae", "optimizer": "adam", "lr": 0.01, "batch_size": 16, "epochs": 1,
           "loss": "mse", "shuffle": True}  # fmt: skip
    server = {"eta": 0.01, "beta_1": 0.9, "beta_2": 0.999, "tau": 1e-3}
    make_model, clients = _dec_clients(cfg, x, centers)
    torch.manual_seed(5)
    w0 = get_parameters(make_model().tsae)
    led_a = Ledger()
    ref = run_rounds(clients, make_strategy("fedyogi", server), w0, 2, fit, led_a, [])
    _, clients = _dec_clients(cfg, x, centers)
    led, calls = Ledger(), []

    def main(grid, node_of):
        push, pull = grid.push_messages, grid.pull_messages
        grid.push_messages = lambda m: calls.append("push") or push(m)
        grid.pull_messages = lambda i: calls.append("pull") or pull(i)
        ps = [FlowerClientProxy(c.cid, node_of[c.cid], grid, led) for c in clients]
        return core_engine.run_rounds(ps, make_strategy("fedyogi", server), w0, 2, fit, AE_FIT,
                                      kind="ae")  # fmt: skip

    got = simulate(main, clients)
    assert calls == ["push", "push", "pull", "pull"] * 2
    for a, b in zip(ref, got, strict=True):
        assert np.array_equal(a, b)
    pd.testing.assert_frame_equal(led_a.table(), led.table())


class _Leaky:
    """A center that reports an update over 0 samples: the server-side ledger hook refuses it."""

    cid = "leaky"

    def fit(self, parameters, config):
        return parameters, 0, {"loss": 0.0}


def test_the_centre_refuses_inside_the_client_app_what_breaks_the_protocol():
    """The check runs in the ClientApp before encoding: the leaky update never crosses the
    wire; the server records an abstention whose reason names the rule (no numbers)."""
    from fedclust.flower.apps import FlowerClientProxy
    from fedclust.flower.simulation import simulate

    led = Ledger()

    def main(grid, node_of):
        p = FlowerClientProxy("leaky", node_of["leaky"], grid, led)
        return p.fit([np.zeros(2, np.float32)], {}, 1, "fit", fit_protocol("t", min_samples=1))

    assert simulate(main, [_Leaky()]) is None
    (reason,) = led.abstentions().reason.tolist()
    assert "refused" in reason and not any(ch.isdigit() for ch in reason)
    assert not (led.table().kind == "fit_update").any()
    # the server-side ledger (the record) still refuses such a message when handed one
    with pytest.raises(DisclosureError, match="leaky"):
        led.send("leaky", "server", {"parameters": [np.zeros(2)], "n": 0}, 1, "fit_update",
                 protocol=fit_protocol("t", min_samples=1), downlink=False)  # fmt: skip


def _heart_clients(k: int = 3, n: int = 24):
    from fedclust.decentral.clients import make_client_data

    r = np.random.default_rng(0)
    x = r.random((k * n, 20)).astype(np.float32)
    y = (x[:, 0] + 0.2 * r.standard_normal(k * n) > 0.5).astype(int)
    return make_client_data(pd.DataFrame(x), y, np.repeat([f"c{i}" for i in range(k)], n))


@pytest.mark.parametrize(("approach", "mode"), [("FL", "as_described"), ("FL_SMA", "as_published")])
def test_heart_fl_equal_on_flower(approach, mode):
    from fedclust.decentral.experiment import run_approach
    from fedclust.decentral.server import run_server_approach

    kw = dict(rounds=2, epochs=1, batch_size=8, seed=3)
    flower = get_transport("flower-simulation")
    a = run_approach(_heart_clients(), approach, mode, **kw)
    b = run_approach(_heart_clients(), approach, mode, transport=flower, **kw)
    assert len(a.metrics) == 2 * 3 and a.steps == b.steps
    num = a.metrics.select_dtypes("number").columns
    assert np.allclose(a.metrics[num], b.metrics[num], rtol=0, atol=1e-6)
    assert np.allclose(a.divergence.divergence, b.divergence.divergence, rtol=0, atol=1e-6)
    pd.testing.assert_frame_equal(a.ledger.table(), b.ledger.table())
    with pytest.raises(ConfigError, match="no server"):
        run_server_approach(_heart_clients(), "GL_random", mode, transport=flower, **kw)


def test_an_upgrade_of_flower_fails_here_first():
    """Issue 30 B.7: the simulation engine implements Flower's public ``Grid`` and stamps
    messages with Flower 1.40's task identity; the deployment uses 1.40's CLI flags. Another
    Flower version must be checked against them before the pin moves."""
    import re
    from pathlib import Path

    import flwr
    from flwr.serverapp import Grid

    from fedclust.flower import FLOWER_VERSION
    from fedclust.flower.simulation import GRID_METHODS, LocalGrid, task_identity

    assert flwr.__version__ == FLOWER_VERSION, (
        f"Flower {flwr.__version__} installed, fedclust is checked against {FLOWER_VERSION}: "
        "re-check fedclust.flower.simulation.LocalGrid against flwr.serverapp.Grid, "
        "task_identity, and the localhost recipe's flags, then move the pin"
    )
    assert set(Grid.__abstractmethods__) == GRID_METHODS
    assert not LocalGrid.__abstractmethods__
    with task_identity():
        pass
    root = Path(__file__).resolve().parents[1]
    for f in ("pyproject.toml", "deploy/flower/pyproject.toml"):
        pin = rf"flwr\[simulation\]=={re.escape(FLOWER_VERSION)}"
        assert re.search(pin, (root / f).read_text()), f
