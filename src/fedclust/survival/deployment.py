"""Federated survival training (D6.2 §8.3, seed 003) as a deployed stage
(:mod:`fedclust.deployment`).

One run trains one strategy at one grid point: Weights Averaging (FedAvg with the D6.2
learning-rate rule, a FedAvg-type protocol: a centre lost mid-run can be dropped with
``min_available``) or Sequential (the model visits the centres in a seeded order: exact, a
lost centre stops the run). The server functions are :mod:`.strategies`'; a centre's file holds
its training patients (covariates, times, events), its name and its minibatch seed; the server
learns the covariate count from the handshake. Output: the model's parameters and the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedclust.deployment import DeployedStage, load_npz, register, same_schema, save_npz

from .strategies import Federation, SurvivalClient, sequential_server, weights_averaging_server
from .train import HyperParams, ModelConfig

NAME = "survival"
STRATEGIES = ("weights_averaging", "sequential")


def model_config(params: Mapping[str, Any]) -> ModelConfig:
    m = dict(params["model"])
    m["hidden"] = tuple(int(h) for h in m["hidden"])
    return ModelConfig(**m)


def save(centre: SurvivalClient, path: Path) -> None:
    save_npz(path, x=centre.x_np, t=centre.t_np, e=centre.e_np, cid=centre.cid,
             seed=np.int64(centre.seed))  # fmt: skip


def load(path: Path, params: Mapping[str, Any]) -> SurvivalClient:
    d = load_npz(path)
    return SurvivalClient(str(d["cid"]), d["x"], d["t"], d["e"], model_config(params),
                          int(d["seed"]))  # fmt: skip


def describe(centre: SurvivalClient) -> dict[str, Any]:
    return {"n_features": int(centre.x_np.shape[1])}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    from .experiment import init_parameters

    n_in = int(same_schema(schema, "n_features", NAME))
    mc, hp = model_config(params), HyperParams(**params["hp"])
    init = init_parameters(mc, n_in, int(params["init_seed"]))
    fed = Federation(int(params.get("min_samples", 2)))
    strategy = str(params["strategy"])
    if strategy == "weights_averaging":
        model = weights_averaging_server(init, hp, mc, fed)(list(proxies))
    elif strategy == "sequential":
        order = np.random.default_rng(int(params["order_seed"]))
        model = sequential_server(init, hp, mc, order, fed)(list(proxies))
    else:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    return {"model": model}


def drops(params: Mapping[str, Any]) -> bool:
    """Weights Averaging (FedAvg-type) may go on without a lost centre; Sequential may not."""
    return params.get("strategy") == "weights_averaging"


STAGE = register(DeployedStage(NAME, load, save, serve, describe, drops=drops))
