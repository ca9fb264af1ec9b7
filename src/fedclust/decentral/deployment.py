"""Heart FL / FL_SMA (seed 004) as a deployed stage (:mod:`fedclust.deployment`).

The server function is :func:`.server.serve_fl` (the one the workflow runs in-process and on
the simulation engine). On a deployment every hospital is its own process with its own model,
Adam state, shuffling and dropout generators, so only ``as_described`` deploys (per-client Adam
state, per-hospital imputation): ``as_published`` shares one Adam state and one imputation
across the hospitals, which exists only in one process. A hospital's file holds its (already
imputed and scaled) training and test rows, its name and its shuffling generator's state; the
server learns the feature count and the training sizes from the handshake. Exact protocol: a
hospital lost mid-run stops the run (the per-hospital table has one row per hospital and round).

The peer-to-peer approaches (GL_*, RAR, customized) are simulation-only (in-process): Flower's
grid is hub-and-spoke, so peer messages would be relayed by the SuperLink, a party that would
then see every hospital's weights — which the peer-to-peer design exists to avoid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedclust.deployment import DeployedStage, load_npz, register, same_schema, save_npz
from fedclust.errors import ConfigError
from fedclust.federation import RoundLog

from .clients import ClientData, HeartClient
from .server import serve_fl
from .simulate import SERVER, ApproachRun, copy_seed, initial_weights, optimizer_state_for
from .training import Trainer

NAME = "heart"
MODE = "as_described"


def _check(params: Mapping[str, Any]) -> None:
    if params.get("approach") not in SERVER:
        raise ConfigError(
            f"approach {params.get('approach')!r} has no server", where="heart deployment params",
            fix=f"one of {SERVER}; peer-to-peer approaches run in-process",
        )  # fmt: skip
    if params.get("mode", MODE) != MODE:
        raise ConfigError(
            "as_published shares one Adam state and pooled imputation across the hospitals: "
            "it exists only in one process", where="heart deployment params (mode)",
            fix="mode: as_described",
        )  # fmt: skip


def save(centre: HeartClient, path: Path) -> None:
    save_npz(path, cid=centre.name, x_train=centre.X.numpy(), y_train=centre.y.numpy(),
             x_test=centre.Xte.numpy(), y_test=centre.yte.numpy(),
             generator=centre.trainer.gen.get_state().numpy())  # fmt: skip


def load(path: Path, params: Mapping[str, Any]) -> HeartClient:
    _check(params)
    d = load_npz(path)
    data = ClientData(str(d["cid"]), d["x_train"], d["y_train"], d["x_test"], d["y_test"])
    trainer = Trainer(
        data.X_train.shape[1],
        float(params.get("lr", 1e-3)),
        optimizer_state_for(MODE, params.get("optimizer_state")),
        0,
        dropout_seed=copy_seed(int(params["seed"]), str(params["approach"]), MODE),
    )
    trainer.gen.set_state(torch.from_numpy(np.asarray(d["generator"], dtype=np.uint8)))
    return HeartClient(data, trainer)


def describe(centre: HeartClient) -> dict[str, Any]:
    return {"n_features": int(centre.X.shape[1]), "n_train": int(centre.n_train)}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    _check(params)
    approach, seed, rounds = str(params["approach"]), int(params["seed"]), int(params["rounds"])
    w0 = initial_weights(int(same_schema(schema, "n_features", NAME)), seed)
    names = [p.cid for p in proxies]
    run = ApproachRun(approach, MODE, names, [int(schema[c]["n_train"]) for c in names], w0,
                      seed, 0.0)  # fmt: skip
    cfg = {"epochs": int(params["epochs"]), "batch_size": int(params["batch_size"]),
           "validation_split": 0.0}  # fmt: skip
    serve_fl(proxies, run, cfg, rounds, RoundLog(f"heart {approach} (deployed)", rounds),
             lambda: 0)  # fmt: skip
    res = run.result(0, 0.0)
    return {"metrics": res.metrics, "divergence": res.divergence,
            "weights": list(run.states[0]), "record": res.ledger.table()}  # fmt: skip


STAGE = register(DeployedStage(NAME, load, save, serve, describe, drops=False))
