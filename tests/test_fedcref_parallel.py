"""FedCRef's parallel execution (issue 28): M AEs trained as one batch equal each trained alone,
the groups' FedAvg loops in lockstep equal the groups one after another; batching never lets one
model read another model's data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedclust.data.glyphs import synthetic_glyphs
from fedclust.fedcref.algorithm import FedCRefParams
from fedclust.fedcref.model import (
    errors_many,
    generator,
    make_ae,
    sample_errors,
    train_ae,
    train_many,
)
from fedclust.fedcref.parallel import Job, SharedDevice, run_jobs

HIDDEN = (24, 12, 6)


def _data(sizes, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(n, d, generator=g) for n in sizes]


def test_train_many_equals_train_ae_per_model():
    """Different cluster sizes (a model sits out the tail steps of an epoch), epochs and early
    stops: every model's weights and losses are those of train_ae on it alone."""
    xs = _data([24, 7, 40, 13])
    epochs = [12, 3, 12, 12]
    alone, alone_losses = [], []
    for i, x in enumerate(xs):
        m = make_ae(16, HIDDEN, i)
        alone_losses.append(train_ae(m, x, epochs[i], 8, 0.05, generator(3, i), patience=1))
        alone.append(m.flat)
    init = torch.stack([make_ae(16, HIDDEN, i).flat for i in range(4)])
    gens = [generator(3, i) for i in range(4)]
    flat, losses = train_many(make_ae(16, HIDDEN, None), init, xs, epochs, 8, 0.05, gens, 1)
    assert [len(v) for v in losses] == [len(v) for v in alone_losses]
    assert [len(v) for v in losses] == [12, 3, 7, 3]  # two stopped early
    for i in range(4):
        torch.testing.assert_close(flat[i], alone[i], rtol=1e-3, atol=1e-4)  # float32 sums
        np.testing.assert_allclose(losses[i], alone_losses[i], rtol=1e-5)


def test_a_model_never_reads_another_models_data():
    """Changing model 1's data leaves model 0's result bit for bit."""
    xs = _data([20, 20])
    init = torch.stack([make_ae(16, HIDDEN, i).flat for i in range(2)])
    a, _ = train_many(make_ae(16, HIDDEN, None), init, xs, 3, 8, 1e-2,
                      [generator(1, i) for i in range(2)])  # fmt: skip
    xs[1] = xs[1] * 0.0 + 0.5
    b, _ = train_many(make_ae(16, HIDDEN, None), init, xs, 3, 8, 1e-2,
                      [generator(1, i) for i in range(2)])  # fmt: skip
    assert torch.equal(a[0], b[0]) and not torch.equal(a[1], b[1])


def test_errors_many_equals_sample_errors():
    x = _data([37])[0]
    models = [make_ae(16, HIDDEN, i) for i in range(5)]
    e = errors_many(models[0], torch.stack([m.flat for m in models]), x, chunk=300)
    for i, m in enumerate(models):
        np.testing.assert_allclose(e[:, i], sample_errors(m, x), rtol=1e-6, atol=1e-9)


def test_shared_device_batches_queued_jobs_and_hands_each_its_own():
    """Jobs queued by several owners run as one batch on the first take; each owner gets the
    result its job gets alone; a dropped owner's jobs never run."""
    xs = _data([12, 9, 15])
    model = make_ae(16, HIDDEN, None)

    def job(i):
        return Job(make_ae(16, HIDDEN, i).flat, xs[i], 3, generator(2, i), None)

    dev = SharedDevice(model, 4, 1e-2)
    for i in range(3):
        dev.queue((f"c{i}", "fit"), job(i))
    dev.drop("c2")
    got = [dev.take((f"c{i}", "fit")) for i in range(2)]
    assert dev.batches == [2] and not dev.queued(("c2", "fit"))
    for i in range(2):
        alone = run_jobs(model, [job(i)], 4, 1e-2)[0]
        assert torch.equal(got[i][0], alone[0]) and got[i][1] == alone[1]


def test_inprocess_run_batches_every_clients_trainings_of_a_step(monkeypatch):
    """run_fedcref: Step 1's local AEs of every client in one batch, a group round's member
    fits in one batch (the clients told ahead through the proxies), same numbers as each
    client training alone (no device)."""
    from fedclust.fedcref import algorithm as A

    x, y = synthetic_glyphs(2, 30, 0, side=4)
    p = FedCRefParams(hidden=(8, 4), epochs=2, batch_size=8, rounds=2, first_epochs=1,
                      later_epochs=2, patience=None, max_iterations=1, theta=1.0)  # fmt: skip
    parts = np.array_split(np.random.default_rng(0).permutation(len(x)), 3)
    xs = [x[r] for r in parts]
    labels = [(y[r] == y.min()).astype(int) for r in parts]
    batches = []
    take = SharedDevice.take

    def spy(self, key):
        n = len(self.batches)
        out = take(self, key)
        batches.extend(self.batches[n:])
        return out

    monkeypatch.setattr(SharedDevice, "take", spy)
    res = A.run_fedcref(xs, labels, [2] * 3, p, 4)
    assert batches[0] == 6 and len(res.groups) >= 1  # 3 clients x 2 clusters, then groups
    # θ = 1: one group of all six clusters; a client's first member is told ahead (its second
    # trains after it, as without a device): the three clients' first fits in one batch
    assert res.groups == [[(i, q) for i in range(3) for q in range(2)]]
    assert max(batches[1:]) == 3
    monkeypatch.setattr(A.Client, "prefetch", lambda self, *args: None)  # each alone
    alone = A.run_fedcref(xs, labels, [2] * 3, p, 4)
    for u, v in zip(res.labels, alone.labels, strict=True):
        np.testing.assert_array_equal(u, v)
    assert res.ledger.table().equals(alone.ledger.table())


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible")
def test_cuda_device_without_a_gpu_is_a_config_error():
    from fedclust.config import load_yaml, validate_config
    from fedclust.errors import ConfigError

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    cfg = validate_config(load_yaml(root / "config" / "config.yaml"))["fedcref"]
    with pytest.raises(ConfigError, match="sees no GPU"):
        FedCRefParams.from_config({**cfg, "device": "cuda"}, theta=0.2)


def test_groups_side_by_side_equal_each_group_alone():
    """groups_fedavg (every group's FedAvg in one round loop, member fits batched) gives every
    group the weights of its own loop, and the same messages."""
    from fedclust.fedcref.algorithm import Client, groups_fedavg, train_group
    from fedclust.federation import Ledger, federate

    def clients():
        x, y = synthetic_glyphs(2, 30, 0, side=4)
        p = FedCRefParams(hidden=(8, 4), epochs=2, batch_size=8, rounds=2, first_epochs=1,
                          later_epochs=2, patience=None)  # fmt: skip
        parts = np.array_split(np.random.default_rng(0).permutation(len(x)), 3)
        dev = SharedDevice(make_ae(x.shape[1], p.hidden, None), p.batch_size, p.lr)
        return [Client(i, f"c{i}", x[r], (y[r] == y.min()).astype(int), 2, p, 4, dev)
                for i, r in enumerate(parts)], p  # fmt: skip

    groups = [[(0, 0), (1, 0), (2, 0)], [(0, 1), (2, 1)]]
    cs, p = clients()
    seq_ledger = Ledger()
    seq = [train_group(cs, g, p, 7, f"G{gi}/it1", seq_ledger, 1) for gi, g in enumerate(groups)]
    cs, p = clients()  # fresh generators
    led = Ledger()
    d = cs[0].x.shape[1]
    par = federate(cs, lambda ps: groups_fedavg(ps, groups, p, 7, 1, d), ledger=led)
    for a, b in zip(seq, par, strict=True):
        assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
    key = ["round", "sender", "receiver", "kind", "protocol", "fields", "floats"]
    a, b = (t.table()[key].sort_values(key).reset_index(drop=True) for t in (seq_ledger, led))
    assert a.equals(b) and cs[0].device.batches == [5, 5]  # all members, per round
