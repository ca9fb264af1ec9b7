"""Deployment: federated TSAE rounds (seed 000 §1.8) on a SuperLink with one SuperNode per center.

Each SuperNode is started with ``--node-config "center-file='<path>'"``; the file
(:func:`write_center_file`) holds that center's samples and its shuffling seed and nothing else.
The ``ClientApp`` (:data:`client_app`) builds the core's :class:`~fedclust.dec.federated.DECClient`
from it; the ``ServerApp`` (:data:`server_app`) runs the core's round loop with the core's
strategy over :class:`~.apps.FlowerClientProxy` proxies and writes the global TSAE and the ledger
to ``out-dir``. The Flower app directory ``deploy/flower`` only points at these two objects.
A center's minibatch generator survives between messages in the run's ``Context.state``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.app import ArrayRecord, Context, Message
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from fedclust.dec.federated import AE_FIT, DECClient, make_strategy
from fedclust.dec.model import TSAE, DECModel, encoder_dims, get_parameters
from fedclust.federation import Ledger
from fedclust.federation import engine as core_engine

from .apps import FlowerClientProxy, FlowerStrategy, answer, discover
from .records import decode, encode

STATE_KEY = "fedclust_shuffle_generator"


def write_center_file(path: str | os.PathLike, x: np.ndarray, cid: str, seed: int) -> Path:
    """One center's file: its samples ``x``, its name and its minibatch-shuffling seed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        np.savez(fh, x=np.asarray(x, dtype=np.float32), cid=np.array(cid), seed=np.int64(seed))
    return path


def make_model(n_features: int, arch: Sequence[int], k: int = 10) -> DECModel:
    return DECModel(TSAE(encoder_dims(n_features, list(arch))), k)


def load_center(path: str | os.PathLike, arch: Sequence[int]) -> DECClient:
    with np.load(path) as z:
        x, cid, seed = z["x"], str(z["cid"]), int(z["seed"])
    return DECClient(cid, x, lambda: make_model(x.shape[1], arch), "cpu", seed)


def _arch(cfg: Any) -> list[int]:
    return [int(a) for a in str(cfg["arch"]).split(",")]


# ---------------------------------------------------------------- client side
client_app = ClientApp()


def _serve(msg: Message, context: Context, method: str | None = None) -> Message:
    client = load_center(str(context.node_config["center-file"]), _arch(context.run_config))
    if STATE_KEY in context.state:  # the generator as it was after this center's last message
        state = context.state[STATE_KEY].to_numpy_ndarrays()[0]
        client.gen.set_state(torch.from_numpy(state))
    request = decode(msg.content)
    name = method or str(request.pop("__method__"))
    out = Message(encode(answer(client, name, request)), reply_to=msg)
    context.state[STATE_KEY] = ArrayRecord([client.gen.get_state().numpy()])
    return out


@client_app.train()
def _train(msg: Message, context: Context) -> Message:
    return _serve(msg, context, "fit")


@client_app.query()
def _query(msg: Message, context: Context) -> Message:
    return _serve(msg, context)


# ---------------------------------------------------------------- server side
server_app = ServerApp()


def train_config(cfg: Any) -> dict[str, Any]:
    return {"stage": "ae", "optimizer": str(cfg["optimizer"]), "lr": float(cfg["lr"]),
            "batch_size": int(cfg["batch-size"]), "epochs": 1, "loss": "mse",
            "shuffle": True}  # fmt: skip


def initial_parameters(n_features: int, arch: Sequence[int], seed: int) -> list[np.ndarray]:
    torch.manual_seed(int(seed))
    return get_parameters(make_model(n_features, arch).tsae)


@server_app.main()
def _main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    node_of = discover(grid, int(cfg["centers"]), float(cfg.get("connect-timeout", 60.0)))
    ledger = Ledger()
    proxies = [FlowerClientProxy(cid, node_of[cid], grid, ledger) for cid in sorted(node_of)]
    server = {"eta": 0.01, "beta_1": 0.9, "beta_2": 0.999, "tau": 1e-3}
    w0 = initial_parameters(int(cfg["features"]), _arch(cfg), int(cfg["seed"]))
    # the core strategy behind Flower's fan-out adapter: every center trains at the same time
    strategy = FlowerStrategy(make_strategy(str(cfg["strategy"]), server), grid, AE_FIT)
    w = core_engine.run_rounds(proxies, strategy, w0, int(cfg["rounds"]), train_config(cfg),
                               AE_FIT, kind="ae", label="dec ae [flower deployment]")  # fmt: skip
    out = Path(str(cfg["out-dir"]))
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "weights.npz", *w)
    ledger.table().to_csv(out / "ledger.csv", index=False)
    (out / "done.json").write_text(json.dumps({"centers": sorted(node_of),
                                               "messages": ledger.n_messages,
                                               "floats": ledger.n_floats}))  # fmt: skip
