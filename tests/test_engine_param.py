"""run_rounds(engine=...): the engine is an explicit argument, not a module-level swap."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedclust.errors import ConfigError
from fedclust.federation import Ledger
from fedclust.survival import strategies as S
from fedclust.survival.model import get_parameters
from fedclust.survival.train import HyperParams, ModelConfig

MC = ModelConfig(hidden=(4,), l1=1e-3, l2=1e-3)
HP = HyperParams(fe=2, ie=2, batches=2, lr=0.05)


def _clients():
    out = []
    for i, n in enumerate((20, 30)):
        g = np.random.default_rng(i)
        x = g.normal(size=(n, 3))
        t, e = g.exponential(np.exp(-x[:, 0])), (g.random(n) < 0.7).astype(int)
        out.append(S.SurvivalClient(f"centre{i}", x, t, e, MC, seed=7 + i))
    return out


def _init():
    torch.manual_seed(1)
    return get_parameters(MC.build(3))


def test_unknown_engine_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown engine 'carrier_pigeon'"):
        S.run_weights_averaging(_clients(), _init(), HP, MC, Ledger(), engine="carrier_pigeon")


def test_weights_averaging_on_flower_equals_inprocess():
    pytest.importorskip("flwr")
    from fedclust.flower import engine as FE

    before = FE.RUNS["run_rounds"]
    a_led, b_led = Ledger(), Ledger()
    a = S.run_weights_averaging(_clients(), _init(), HP, MC, a_led)[0][0]
    b = S.run_weights_averaging(_clients(), _init(), HP, MC, b_led, engine="flower")[0][0]
    assert FE.RUNS["run_rounds"] == before + 1  # the argument, not a module swap, chose Flower
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    cols = ["round", "sender", "receiver", "kind", "protocol", "fields", "floats"]
    assert a_led.table()[cols].equals(b_led.table()[cols])
