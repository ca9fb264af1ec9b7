"""FedCRef (seed 002 Algorithm 1) as a deployed stage (:mod:`fedclust.deployment`).

One run is Algorithm 1 on the sites' own data: each site's file holds its samples, its initial
partition into K_i clusters (the site's own clustering, e.g. its local DEC) and its name; the
coordination is :func:`.algorithm.fedcref_server`, the server function the workflow runs
in-process. The run's parameters are :class:`.algorithm.FedCRefParams`' fields (``params``),
the run's ``seed`` (fresh AE initialisations and minibatch orders, at the sites and the
server) and ``mode`` (``fedcref`` or ``local_only``; Perfect Associations needs every site's
true labels and is simulation-only). The server learns the feature count from the handshake.
Outputs: the per-iteration ``history`` (groups, isolated nodes, active clients, edges; no
timing columns), the last iteration's ``edges`` and ``groups`` (membership table: group,
client index, cluster), ``iterations``, ``stop_reason`` and the ledger; each site's refined
labels stay at the site. Every message is exact (a site's statistics are compared with
every other's): a lost site stops the run (no drops).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedclust.deployment import DeployedStage, load_npz, register, same_schema, save_npz
from fedclust.errors import ConfigError

from .algorithm import Client, FedCRefParams, fedcref_server

NAME = "fedcref"
TIMING = ("seconds", "cpu_seconds")


def fedcref_params(params: Mapping[str, Any]) -> FedCRefParams:
    """The algorithm's parameters of a run (``params["params"]``; JSON lists back to tuples)."""
    known = {f.name for f in fields(FedCRefParams)}
    given = dict(params["params"])
    bad = sorted(set(given) - known)
    if bad:
        raise ConfigError(f"unknown FedCRef parameter(s) {bad}", where="params.params",
                          fix=f"use {sorted(known)}")  # fmt: skip
    if "hidden" in given:
        given["hidden"] = tuple(int(h) for h in given["hidden"])
    return FedCRefParams(**given)


def params_for(p: FedCRefParams, seed: int, mode: str = "fedcref") -> dict[str, Any]:
    """The run parameters of one FedCRef run (``p`` e.g. from
    :meth:`FedCRefParams.from_config`)."""
    if mode not in ("fedcref", "local_only"):
        raise ConfigError(
            f"FedCRef mode {mode!r} cannot be deployed", where="params.mode",
            fix="fedcref or local_only (Perfect Associations needs the true labels of every "
            "site: simulation only)",
        )  # fmt: skip
    return {"params": asdict(p), "seed": int(seed), "mode": mode}


def save(centre: Client, path: Path) -> None:
    save_npz(path, x=centre.x.numpy(), labels=centre.labels, k=centre.k, index=centre.index,
             cid=centre.cid)  # fmt: skip


def load(path: Path, params: Mapping[str, Any]) -> Client:
    d = load_npz(path)
    return Client(int(d["index"]), str(d["cid"]), d["x"], d["labels"], int(d["k"]),
                  fedcref_params(params), int(params["seed"]))  # fmt: skip


def describe(centre: Client) -> dict[str, Any]:
    return {"n_features": int(centre.x.shape[1])}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    d = int(same_schema(schema, "n_features", NAME))
    mode = str(params.get("mode", "fedcref"))
    params_for(FedCRefParams(), 0, mode)  # the mode check
    res = fedcref_server(fedcref_params(params), int(params["seed"]), d, mode)(list(proxies))
    history = pd.DataFrame(res.history).drop(columns=list(TIMING))
    groups = [[gi, *n] for gi, g in enumerate(res.groups) for n in g]
    return {"history": history,
            "edges": np.asarray(res.edges, dtype=np.int64).reshape(-1, 4),
            "groups": np.asarray(groups, dtype=np.int64).reshape(-1, 3),
            "iterations": int(res.iterations), "stop_reason": res.stop_reason}  # fmt: skip


STAGE = register(DeployedStage(NAME, load, save, serve, describe, drops=False))
