"""The one engine seam (issue 29): the transport is an object passed in, chosen from one config
key in one place; the federation core never imports Flower."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from fedclust.errors import ConfigError
from fedclust.federation import INPROCESS, Ledger, Protocol, federate
from fedclust.survival import strategies as S
from fedclust.survival.model import get_parameters
from fedclust.survival.train import HyperParams, ModelConfig
from fedclust.transports import ENGINES, from_config, get

SRC = Path(__file__).resolve().parents[1] / "src" / "fedclust"
MC = ModelConfig(hidden=(4,), l1=1e-3, l2=1e-3)
HP = HyperParams(fe=2, ie=2, batches=2, lr=0.05)
TOTAL = Protocol("t_total", {"s": "aggregate", "n": "count"}, min_samples=3)
TOTAL_REQUEST = Protocol("t_total_request", {})  # the server's empty request, declared too


class _Centre:
    def __init__(self, cid: str, x: np.ndarray):
        self.cid, self.x, self.n_samples = cid, x, len(x)

    def total(self, parameters, config):
        return {"s": float(self.x.sum()), "n": len(self.x)}


def _sum(proxies) -> float:
    return sum(p.call("total", {}, 0, "total", TOTAL, TOTAL_REQUEST)["s"] for p in proxies)


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


def test_one_config_key_names_the_transport():
    assert from_config({}) is INPROCESS and from_config({"federation": {}}) is INPROCESS
    assert from_config({"federation": {"engine": "inprocess"}}) is INPROCESS
    assert ENGINES == ("inprocess", "flower-simulation", "flower-deployment")
    with pytest.raises(ConfigError, match="unknown engine 'carrier_pigeon'"):
        get("carrier_pigeon")


def test_federate_hands_the_server_one_proxy_per_centre_and_records_the_messages():
    centres = [_Centre("a", np.ones((4, 2))), _Centre("b", 2 * np.ones((5, 2)))]
    led = Ledger()
    assert federate(centres, _sum, ledger=led) == 8.0 + 20.0
    t = led.table()
    assert t.sender.tolist() == ["server", "a", "server", "b"]
    with pytest.raises(ValueError, match="unique"):
        federate([centres[0], centres[0]], _sum)


def test_the_transport_object_passed_in_is_the_one_used():
    """No module-level swap: a transport is an object with ``run``; stages never name one."""
    seen = []

    class Counting:
        name = "counting"

        def run(self, centres, server, ledger):
            seen.append([c.cid for c in centres])
            return INPROCESS.run(centres, server, ledger)

    a = S.run_weights_averaging(_clients(), _init(), HP, MC, Ledger())[0][0]
    fed = S.Federation(S.MIN_SAMPLES, Counting())
    b = S.run_weights_averaging(_clients(), _init(), HP, MC, Ledger(), fed)[0][0]
    assert seen == [["centre0", "centre1"]]
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)


def test_weights_averaging_on_flower_equals_inprocess():
    pytest.importorskip("flwr")
    a_led, b_led = Ledger(), Ledger()
    a = S.run_weights_averaging(_clients(), _init(), HP, MC, a_led)[0][0]
    fed = S.Federation(S.MIN_SAMPLES, get("flower-simulation"))
    b = S.run_weights_averaging(_clients(), _init(), HP, MC, b_led, fed)[0][0]
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    cols = ["round", "sender", "receiver", "kind", "protocol", "fields", "floats"]
    assert a_led.table()[cols].equals(b_led.table()[cols])


def test_flower_deployment_is_not_a_job_transport():
    pytest.importorskip("flwr")
    with pytest.raises(ConfigError, match="SuperNodes"):
        federate([_Centre("a", np.ones((4, 2)))], _sum, transport=get("flower-deployment"))


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_the_core_never_imports_flower_and_flower_holds_no_stage_code():
    for path in (SRC / "federation").glob("*.py"):
        assert not any(m.startswith("fedclust.flower") for m in _imports(path)), path
    stages = ("dec", "decentral", "survival", "hac", "fedcref", "admm", "attacks", "data")
    for path in (SRC / "flower").glob("*.py"):  # the deployment's apps look stages up by name
        bad = [m for m in _imports(path) if m.split(".")[:2][-1] in stages]
        assert not bad, (path, bad)
    # the registry of deployable stages sits above the core: no Flower, no stage module
    assert not [m for m in _imports(SRC / "deployment.py")
                if m.startswith("fedclust.flower") or m.split(".")[:2][-1] in stages]  # fmt: skip
    # importing the core (and a stage) loads nothing of fedclust.flower
    code = (
        "import sys, fedclust.federation, fedclust.survival.strategies, fedclust.dec.pipeline;"
        "print([m for m in sys.modules if m.startswith('fedclust.flower')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
