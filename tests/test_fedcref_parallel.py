"""FedCRef's parallel execution (issue 28): M AEs trained as one batch equal each trained alone,
the groups' FedAvg loops in lockstep equal the groups one after another; batching never lets one
model read another model's data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedclust.fedcref.algorithm import FedCRefParams
from fedclust.fedcref.model import (
    errors_many,
    generator,
    make_ae,
    sample_errors,
    train_ae,
    train_many,
)
from fedclust.fedcref.parallel import Job, Lockstep, run_jobs

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


def test_lockstep_batches_rounds_of_every_thread_and_keeps_results():
    """Three loops of two rounds, each submitting its own jobs: one batch per round holding every
    loop's jobs, and each result equal to the job run alone."""
    model = make_ae(16, HIDDEN, None)
    xs = _data([12, 9, 15])

    def job(i, r):
        return Job(make_ae(16, HIDDEN, 10 * i + r).flat, xs[i], 2, generator(5, i, r))

    lock = Lockstep(model, 4, 1e-2)

    def loop(i):
        return [lock.submit((i,), [job(i, r)])[0][0] for r in range(2)]

    got = lock.map([lambda i=i: loop(i) for i in range(3)])
    assert lock.batches == [3, 3]
    for i in range(3):
        for r in range(2):
            alone = run_jobs(model, [job(i, r)], 4, 1e-2)[0][0]
            torch.testing.assert_close(got[i][r], alone, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="boom"):
        lock.map([lambda: loop(0), lambda: (_ for _ in ()).throw(ValueError("boom"))])


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible")
def test_cuda_device_without_a_gpu_is_a_config_error():
    from fedclust.config import load_yaml, validate_config
    from fedclust.errors import ConfigError

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    cfg = validate_config(load_yaml(root / "config" / "config.yaml"))["fedcref"]
    with pytest.raises(ConfigError, match="sees no GPU"):
        FedCRefParams.from_config({**cfg, "device": "cuda"}, theta=0.2)
