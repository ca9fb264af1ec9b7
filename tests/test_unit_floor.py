"""The shared per-hidden-unit floor (:mod:`fedclust.federation.unit_floor`) on a generic
``torch.nn.Sequential`` MLP: the hooks count exactly the samples whose ReLU was on (for a loss
whose output gradient is non-zero for every sample), and ``withhold`` resets exactly the units
reached by 0 < m < floor samples (incoming row, bias, outgoing column), nothing else."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from fedclust.federation import unit_floor


def _net(activation=nn.ReLU) -> nn.Sequential:
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(3, 16), activation(), nn.Linear(16, 1))


def _step(net: nn.Sequential, x: torch.Tensor, idx) -> list[torch.Tensor]:
    """One SGD step on ``x[idx]`` (loss Σ outputs) with the hooks; the counters."""
    masks = unit_floor.mlp_units(net, len(x))
    with unit_floor.Touched(net, masks) as rec:
        net.zero_grad()
        net(x[idx]).sum().backward()
        rec.step(idx)
    with torch.no_grad():
        for p in net.parameters():
            p -= 0.1 * p.grad
    net(x[idx])  # outside the context: no hook, nothing kept
    assert rec._pre == []
    return masks


def test_the_hooks_count_the_samples_whose_relu_was_on():
    x = torch.as_tensor(np.random.default_rng(0).normal(size=(6, 3)), dtype=torch.float32)
    net = _net()
    with torch.no_grad():
        on = net[0](x) > 0
    idx = torch.tensor([0, 2, 3, 5])
    (mask,) = _step(net, x, idx)
    want = torch.zeros_like(on)
    want[idx] = on[idx]
    assert torch.equal(mask, want)
    assert mask.sum(0).min() < mask.sum(0).max()  # units reached by different numbers


@pytest.mark.parametrize("floor", [1, 2, 3, 7])
def test_withhold_resets_exactly_the_units_below_the_floor(floor):
    x = torch.as_tensor(np.random.default_rng(1).normal(size=(6, 3)), dtype=torch.float32)
    net = _net()
    received = [p.detach().clone() for p in net.parameters()]
    (mask,) = _step(net, x, slice(None))
    trained = [p.detach().clone() for p in net.parameters()]
    new = [p.detach().clone() for p in net.parameters()]
    n = unit_floor.withhold(unit_floor.pairs(new), unit_floor.pairs(received), [mask], floor)
    m = mask.sum(0)
    low = (m > 0) & (m < floor)
    assert n == int(low.sum())
    if floor == 1:
        assert n == 0
    W, b, V, c = new
    W0, b0, V0, c0 = received
    W1, b1, V1, c1 = trained
    assert torch.equal(W[low], W0[low]) and torch.equal(b[low], b0[low])
    assert torch.equal(V[:, low], V0[:, low])
    assert torch.equal(W[~low], W1[~low]) and torch.equal(b[~low], b1[~low])
    assert torch.equal(V[:, ~low], V1[:, ~low]) and torch.equal(c, c1)
    if floor == 7:  # 6 samples: every unit any sample reached is withheld
        assert n == int((m > 0).sum()) > 0


def test_a_smooth_activation_reaches_every_unit_with_every_sample():
    x = torch.as_tensor(np.random.default_rng(2).normal(size=(5, 3)), dtype=torch.float32)
    (mask,) = _step(_net(nn.Tanh), x, slice(None))
    assert bool(mask.all())


def test_withhold_edits_numpy_parameters_in_place():
    net = _net()
    arrays = [p.detach().numpy().copy() for p in net.parameters()]
    received = [a.copy() for a in arrays]
    arrays[0] += 1.0
    arrays[1] += 1.0
    mask = torch.zeros(4, 16, dtype=torch.bool)
    mask[0, 5] = True  # unit 5 reached by one sample
    assert unit_floor.withhold(unit_floor.pairs(arrays), unit_floor.pairs(received), [mask], 3) == 1
    np.testing.assert_array_equal(arrays[0][5], received[0][5])
    assert arrays[1][5] == received[1][5] and arrays[1][4] == received[1][4] + 1.0
