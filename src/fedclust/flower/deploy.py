"""The deployment's Flower app: one generic ``ClientApp`` / ``ServerApp`` pair for every stage.

A SuperNode runs at each centre with the centre's own folder::

    flower-supernode ... --node-config "centre-dir='/data/fedclust' disclosure='/data/site.yaml'"

and the server runs ``flwr run deploy/flower <superlink> --run-config overrides.toml`` with
``stage`` (a name registered in :mod:`fedclust.deployment`), ``params`` (the stage's
parameters, JSON), ``centres`` (how many SuperNodes to wait for) and ``out-dir``. This module
holds no stage code: both apps look the stage up by name.

- :data:`client_app` builds the centre from ``<centre-dir>/<stage>.npz`` with the stage's
  ``load`` (and the site's own ``disclosure`` file, if its node config names one), answers
  through :func:`fedclust.federation.guard.reply` like every transport, and keeps the centre
  object (its generators, the model it keeps) in the run's ``Context.state`` between messages:
  Flower 1.40 starts a ``flwr-clientapp`` process per message, the state stays on the SuperNode.
- :data:`server_app` waits for ``centres`` SuperNodes, learns each centre's name and shapes in
  one handshake, runs the stage's server function over :class:`~.apps.FlowerClientProxy`
  proxies (a lost centre is dropped when the stage allows it and ``params.min_available`` is
  set, else the run stops naming it: :mod:`fedclust.federation.faults`), and writes the outputs,
  the ledger, ``progress.jsonl`` (one line per ledger row, as they happen) and ``done.json``
  — or ``error.json`` with the reason (a centre's own error message included) — to ``out-dir``.
"""

from __future__ import annotations

import io
import json
import pickle
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from flwr.app import ConfigRecord, Context, RecordDict
from flwr.serverapp import Grid, ServerApp

from fedclust import deployment
from fedclust.federation import Dropouts, Ledger

from .apps import REPLY_TIMEOUT_S, FlowerClientProxy, discover, make_client_app

STATE_KEY = "fedclust_centre"


def _stage(context: Context) -> deployment.DeployedStage:
    return deployment.get(str(context.run_config["stage"]))


def _params(context: Context) -> dict[str, Any]:
    return json.loads(str(context.run_config.get("params", "{}")) or "{}")


# ---------------------------------------------------------------- client side
def _centre(context: Context) -> Any:
    stage = _stage(context)
    if STATE_KEY in context.state:  # the centre as it was after its last message of this run
        if stage.setup is not None:
            stage.setup(_params(context))
        return _loads(context.state[STATE_KEY]["centre"])  # written by _save, on this node
    node = context.node_config
    if "centre-dir" not in node:
        raise KeyError("the SuperNode's node config has no centre-dir "
                       "(--node-config \"centre-dir='/path/to/the/centre/folder'\")")  # fmt: skip
    disclosure = str(node["disclosure"]) if "disclosure" in node else None
    return deployment.load_centre(stage, str(node["centre-dir"]), _params(context),
                                  disclosure)  # fmt: skip


def _dumps(centre: Any) -> bytes:
    """The centre object as bytes: ``torch.save`` when torch is loaded (it keeps tensors that
    share storage shared — the heart trainer's parameters are views of its Adam buffer, which
    plain pickling would copy apart), else ``pickle``."""
    if "torch" in sys.modules:
        import torch

        buf = io.BytesIO()
        torch.save(centre, buf)
        return b"T" + buf.getvalue()
    return b"P" + pickle.dumps(centre)


def _loads(data: bytes) -> Any:
    if data[:1] == b"T":
        import torch

        return torch.load(io.BytesIO(data[1:]), weights_only=False)  # this node's own bytes
    return pickle.loads(data[1:])


def _save(context: Context, centre: Any) -> None:
    context.state[STATE_KEY] = ConfigRecord({"centre": _dumps(centre)})


def _describe(context: Context, centre: Any) -> dict[str, Any]:
    return dict(_stage(context).describe(centre))


client_app = make_client_app(_centre, _describe, _save)


# ---------------------------------------------------------------- server side
server_app = ServerApp()


class ProgressLedger(Ledger):
    """The ledger of record, also appending each row to ``progress.jsonl`` as it happens (a
    deployment's progress is visible while it runs; the localhost test kills a SuperNode after
    a given round)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path, self.t0 = path, time.monotonic()

    def _tell(self, rows: list[dict]) -> None:
        row = {**rows[-1], "t": round(time.monotonic() - self.t0, 3)}
        with open(self.path, "a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")

    def send(self, *args: Any, **kwargs: Any) -> Any:
        out = super().send(*args, **kwargs)
        self._tell(self.records)
        return out

    def abstain(self, *args: Any, **kwargs: Any) -> None:
        super().abstain(*args, **kwargs)
        self._tell(self.abstention_records)

    def dropped(self, *args: Any, **kwargs: Any) -> None:
        super().dropped(*args, **kwargs)
        self._tell(self.drop_records)


def serve(grid: Grid, run_config: dict[str, Any]) -> dict[str, Any]:
    """The generic server: handshake, the stage's server function, outputs to ``out-dir``."""
    out = Path(str(run_config["out-dir"])).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    stage = deployment.get(str(run_config["stage"]))
    params = json.loads(str(run_config.get("params", "{}")) or "{}")
    schema: dict[str, dict[str, Any]] = {}
    node_of = discover(grid, int(run_config["centres"]),
                       float(run_config.get("connect-timeout", 60.0)), schema)  # fmt: skip
    ledger = ProgressLedger(out / "progress.jsonl")
    min_available = params.get("min_available")
    if min_available is not None and not stage.allows_drops(params):
        raise ValueError(f"stage {stage.name!r} with these parameters is exact: every centre "
                         "is needed, min_available does not apply")  # fmt: skip
    drops = Dropouts(len(node_of), None if min_available is None else int(min_available))
    timeout = float(params.get("reply_timeout", REPLY_TIMEOUT_S))
    proxies = [FlowerClientProxy(cid, node_of[cid], grid, ledger, drops, timeout)
               for cid in sorted(node_of)]  # fmt: skip
    outputs = dict(stage.serve(proxies, params, schema))
    outputs["ledger"] = ledger.table()
    deployment.write_outputs(out, outputs)
    done = {"stage": stage.name, "centres": sorted(node_of), "messages": ledger.n_messages,
            "floats": ledger.n_floats, "dropped": drops.lost}  # fmt: skip
    (out / "done.json").write_text(json.dumps(done))
    return done


@server_app.main()
def _main(grid: Grid, context: Context) -> None:
    cfg = dict(context.run_config)
    try:
        serve(grid, cfg)
    except Exception as err:
        out = Path(str(cfg.get("out-dir", "."))).expanduser()
        out.mkdir(parents=True, exist_ok=True)
        (out / "error.json").write_text(json.dumps({
            "error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc(),
        }))  # fmt: skip
        raise


def simulate(
    stage: str, centre_dirs: list[str | Path], params: dict[str, Any], out_dir: str | Path,
    disclosure: str | Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """This module's ``ClientApp`` (one per centre folder, ``centre-dir`` in its node config,
    its centre kept in ``Context.state`` between messages; ``disclosure``: every site's own
    disclosure file) and ``ServerApp`` on a :class:`~.simulation.LocalGrid` in this process: the
    deployment's code paths without a SuperLink (what the localhost test runs over the
    network). Returns ``done.json``."""
    from .simulation import LocalGrid, task_identity

    run_config = {"stage": stage, "params": json.dumps(params), "centres": len(centre_dirs),
                  "out-dir": str(out_dir), "connect-timeout": 1.0}  # fmt: skip
    extra = {"disclosure": str(disclosure)} if disclosure else {}
    grid = LocalGrid(client_app, len(centre_dirs), run_config,
                     [{"centre-dir": str(d), **extra} for d in centre_dirs])  # fmt: skip
    with task_identity():
        server_app(grid, Context(run_id=1, node_id=0, node_config={}, state=RecordDict(),
                                 run_config=run_config))  # fmt: skip
    return json.loads((Path(out_dir) / "done.json").read_text())
