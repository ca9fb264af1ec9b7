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

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedclust.deployment import (
    DeployedStage,
    WorkflowHook,
    WorkflowRun,
    cap,
    load_npz,
    pick,
    register,
    same_schema,
    save_npz,
)
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


# ---------------------------------------------------------------- the workflow's rule
HEART_TABLES = {"features": "results/data/heart/features.parquet",
                "obs": "results/data/heart/obs.tsv"}  # fmt: skip


def workflow_units(config: Mapping[str, Any]) -> list[str]:
    """``split/approach`` of the ``decentral`` config's server approaches (``as_described``)."""
    cfg = config.get("decentral", {})
    return [f"{s}/{a}" for s in cfg.get("splits") or [] for a in cfg.get("approaches") or []
            if a in SERVER]  # fmt: skip


def workflow_unit(config: Mapping[str, Any]) -> str:
    return pick(config, NAME, workflow_units(config))


def _named(d: ClientData) -> ClientData:
    """The client with a name that can name its folder ("VA Long Beach" → "VA_Long_Beach")."""
    return ClientData(re.sub(r"[^A-Za-z0-9_-]", "_", d.name), d.X_train, d.y_train, d.X_test,
                      d.y_test)  # fmt: skip


def workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The hospitals of rule ``decentral_train`` (``as_described``: per-centre imputation,
    each client's split and scaler), each with its own trainer; the run's parameters from the
    ``decentral`` config (``deployment.iterations``: at most that many rounds). Each hospital
    keeps its own Adam state and generators, as on a deployment, so the numbers are the
    deployment's, not the workflow's one-process run (no reference)."""
    from fedclust.io import read_table
    from fedclust.seeds import derive_seed

    from .clients import HeartClient
    from .experiment import unit_data

    cfg, seed = dict(config["decentral"]), int(config["seed"])
    uid = workflow_unit(config)
    split, approach = uid.split("/")
    unit = unit_data(read_table(inputs["features"]), read_table(inputs["obs"]), split, MODE, cfg,
                     dict(config["data"].get("heart", {})))  # fmt: skip
    params = {"approach": approach, "seed": seed, "rounds": cap(cfg["rounds"], config),
              "epochs": int(cfg["epochs"]), "batch_size": int(cfg["batch_size"]),
              "lr": float(cfg["learning_rate"]),
              "optimizer_state": cfg.get("optimizer_state")}  # fmt: skip
    policy = optimizer_state_for(MODE, params["optimizer_state"])
    clients = [
        HeartClient(_named(d), Trainer(d.X_train.shape[1], params["lr"], policy,
                               derive_seed(seed, "decentral", "shuffle"),
                               dropout_seed=copy_seed(seed, approach, MODE)))
        for d in unit.clients
    ]  # fmt: skip
    return WorkflowRun(uid, clients, params)


STAGE = register(
    DeployedStage(NAME, load, save, serve, describe, drops=False,
                  workflow=WorkflowHook(workflow_unit, lambda c: dict(HEART_TABLES),
                                        workflow_run))
)  # fmt: skip
