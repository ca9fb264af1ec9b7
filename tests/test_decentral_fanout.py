"""Heart fan-out (issue 14): a model copy's numbers do not depend on which copies share its job.

Every copy (approach × mode) draws its dropout masks from its own generator per client
(``simulate.copy_seed`` → ``training.client_generator``); the lockstep ``BatchedTrainer`` computes
each copy with calls whose rounding does not depend on the number of copies. So a lockstep group
and each of its copies alone give bit-identical numbers, and the per-approach jobs of
``decentral.fanout: approach`` merge into the tables of ``fanout: mode``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from fedclust.decentral.batched import BatchedTrainer
from fedclust.decentral.clients import make_client_data
from fedclust.decentral.fanout import merge_units
from fedclust.decentral.model import HeartNet, dropout_noise
from fedclust.decentral.simulate import copy_seed, initial_weights, run_group
from fedclust.decentral.training import Trainer, client_generator
from fedclust.errors import InputDataError

COLS = ["loss_total", "loss_bce", "accuracy", "auc", "auc_keras"]


def _clients(k: int = 4, n: int = 40):
    r = np.random.default_rng(1)
    X = r.random((k * n, 20)).astype(np.float32)
    y = (X[:, 0] + 0.3 * r.standard_normal(k * n) > 0.5).astype(int)
    return make_client_data(pd.DataFrame(X), y, np.repeat([f"h{i}" for i in range(k)], n))


@pytest.mark.parametrize("policy", ["shared", "per_client"])
def test_batched_copy_is_bit_identical_alone_and_in_a_group(policy):
    # batch 14 on 30 rows: the sizes at which a stacked bmm / sigmoid / un-padded Adam differed
    torch.set_num_threads(1)
    w0 = initial_weights(20, 0)
    r = torch.Generator().manual_seed(0)
    X, y = torch.rand(30, 20, generator=r), (torch.rand(30, generator=r) > 0.5).float()
    seeds = [11, 22, 33]
    group = BatchedTrainer(3, 20, 1e-3, policy, 5, seeds)
    starts = [[w * (1 + 0.1 * k) for w in w0] for k in range(3)]  # three different models
    out3 = [group.fit(starts, X, y, 2, 14, c) for c in ("a", "b")][-1]
    for k in range(3):
        alone = BatchedTrainer(1, 20, 1e-3, policy, 5, [seeds[k]])
        out1 = [alone.fit([starts[k]], X, y, 2, 14, c) for c in ("a", "b")][-1][0]
        for a, b in zip(out3[k], out1, strict=True):
            np.testing.assert_array_equal(a, b)


def test_run_group_member_equals_the_member_alone():
    data = _clients()
    runs = [("FL", "as_described"), ("RAR", "as_described"), ("GL_random", "as_described"),
            ("GL_conditional", "as_published"), ("customized", "as_published")]  # fmt: skip
    kw = dict(rounds=2, epochs=1, batch_size=14, seed=3)
    together = run_group(data, runs, **kw)
    for run in runs:
        alone = run_group(data, [run], **kw)[run]
        pd.testing.assert_frame_equal(together[run].metrics, alone.metrics, check_exact=True)
        pd.testing.assert_frame_equal(together[run].divergence, alone.divergence,
                                      check_exact=True)  # fmt: skip
        assert together[run].ledger.table().equals(alone.ledger.table())
    # the copies really differ from each other (their own streams, not one shared draw)
    a = together[("RAR", "as_described")].metrics[COLS].to_numpy()
    b = together[("GL_random", "as_described")].metrics[COLS].to_numpy()
    assert not np.allclose(a, b)


def test_dropout_noise_per_copy_and_client():
    s = copy_seed(0, "RAR", "as_published")
    assert s == copy_seed(0, "RAR", "as_published") != copy_seed(0, "RAR", "as_described")
    a = dropout_noise(client_generator(s, "clev"), 14, 928, 0.5)
    b = dropout_noise(client_generator(s, "clev"), 14, 928, 0.5)
    c = dropout_noise(client_generator(s, "hung"), 14, 928, 0.5)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not torch.equal(a, c)
    assert set(torch.unique(a).tolist()) == {0.0, 2.0}  # inverted dropout, keep prob 0.5
    assert abs(float((a > 0).float().mean()) - 0.5) < 0.02
    assert torch.equal(dropout_noise(None, 3, 4, 0.0), torch.ones(3, 4))


def test_single_model_and_lockstep_copy_see_the_same_masks():
    # one training step with the copy's masks: HeartNet and the stacked copy agree to rounding
    torch.set_num_threads(1)
    w0 = initial_weights(20, 0)
    X = torch.rand(14, 20, generator=torch.Generator().manual_seed(2))
    noise = dropout_noise(client_generator(7, "c"), 14, 928, 0.5)
    single = HeartNet()
    single.set_weights(w0)
    bt = BatchedTrainer(1, 20, 1e-3, "shared", 0, [7])
    bt.model.set_weights(0, w0)
    single.train(), bt.model.train()
    torch.testing.assert_close(bt.model(X, noise[None])[0], single(X, noise), rtol=1e-5,
                               atol=1e-5)  # fmt: skip
    # without the copy's masks the outputs differ: the masks are what the test above pins
    assert not torch.allclose(single(X, noise), single(X, torch.ones_like(noise)), atol=1e-3)


def test_trainer_without_copy_seed_keeps_the_global_stream():
    """The centralized baseline (no ``dropout_seed``) still draws from torch's global RNG."""
    torch.set_num_threads(1)
    w0 = initial_weights(20, 0)
    X, y = torch.rand(20, 20), (torch.rand(20) > 0.5).float()
    out = []
    for _ in range(2):
        torch.manual_seed(5)
        out.append(Trainer(20, 1e-3, "shared", 1).fit(w0, X, y, 1, 14, "central")[0])
    torch.manual_seed(6)
    other = Trainer(20, 1e-3, "shared", 1).fit(w0, X, y, 1, 14, "central")[0]
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert not np.array_equal(out[0][0], other[0])


def _unit(approaches, imputation=True):
    m = pd.DataFrame({"round": [1] * len(approaches), "approach": approaches, "auc": 0.5})
    led = pd.DataFrame({"kind": ["weights"] * len(approaches), "approach": approaches})
    if imputation:
        led = pd.concat([pd.DataFrame({"kind": ["impute"], "approach": ["imputation"]}), led])
    info = {"split": "hospitals", "mode": "as_described", "clients": ["a", "b"], "n_train": [3, 4],
            "n_test": [1, 1], "optimizer_state": "per_client", "imputation": "per center",
            "imputation_fills": [], "threads": 1,
            "runs": [{"approach": a, "wall_s": 1.0} for a in approaches]}  # fmt: skip
    return m, m.assign(divergence=0.0), led.reset_index(drop=True), info


def test_merge_units_equals_the_one_job_files():
    whole = _unit(["FL", "RAR", "GL_random"])
    parts = [_unit([a]) for a in ["FL", "RAR", "GL_random"]]
    m, d, led, info = merge_units(*[[p[i] for p in parts] for i in range(4)])
    pd.testing.assert_frame_equal(m, whole[0])
    pd.testing.assert_frame_equal(d, whole[1])
    pd.testing.assert_frame_equal(led, whole[2])  # the imputation rows once, first
    assert info == whole[3]


def test_merge_units_rejects_units_of_different_runs():
    a, b = _unit(["FL"]), _unit(["RAR"])
    b[3]["n_train"] = [9, 9]
    with pytest.raises(InputDataError, match="n_train"):
        merge_units([a[0], b[0]], [a[1], b[1]], [a[2], b[2]], [a[3], b[3]])
    with pytest.raises(InputDataError, match="two units"):
        merge_units([a[0], a[0]], [a[1], a[1]], [a[2], a[2]], [a[3], a[3]])


def test_centralized_grid_cells_alone_equal_the_grid_in_one_job():
    from fedclust.decentral.centralized import centralized_baseline, grid_cell

    r = np.random.default_rng(4)
    X = pd.DataFrame(r.random((64, 20)))
    y = (X[0] + 0.3 * r.standard_normal(64) > 0.5).astype(int).to_numpy()
    kw = dict(folds=2, lr=1e-3, seed=5, random_state=0)
    grid = dict(batch_sizes=[8, 16], epochs=[1, 2], grid=True)
    table, res = centralized_baseline(X, y, **grid, **kw)
    rows = [grid_cell(X, y, b, e, **kw) for b in (8, 16) for e in (1, 2)]
    table2, res2 = centralized_baseline(X, y, **grid, **kw, grid_rows=rows)
    pd.testing.assert_frame_equal(table, table2, check_exact=True)
    assert res == res2 and len(table) == 4
