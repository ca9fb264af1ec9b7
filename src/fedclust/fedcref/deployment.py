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


# ---------------------------------------------------------------- the workflow's rule
def _settings(config: Mapping[str, Any]) -> dict:
    from .settings import settings

    return settings(dict(config["fedcref"]))


def workflow_units(config: Mapping[str, Any]) -> list[str]:
    """``experiment/setting`` of rule ``fedcref_run`` (repetition 0)."""
    if not config.get("fedcref", {}).get("enabled", False):
        return []
    return [f"{e}/{s}" for e, ss in _settings(config).items() for s in ss]


def workflow_unit(config: Mapping[str, Any]) -> str:
    return pick(config, NAME, workflow_units(config))


def workflow_inputs(config: Mapping[str, Any]) -> dict[str, str]:
    """Rule ``fedcref_run``'s files of the unit: the dataset (and the θ calibration)."""
    from .workflow import plan, run_inputs

    st, _, _, calibrated = plan(dict(config["fedcref"]))
    e, s = workflow_unit(config).split("/")
    return dict(run_inputs(st, calibrated, e, s))


def workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The sites of rule ``fedcref_run``'s variant ``fedcref`` (repetition 0): the setting's
    client system, each site's initial partition and the configured θ (``deployment.iterations``
    caps the iterations); reference: :func:`.algorithm.run_fedcref` on the same sites (its
    ``edges``, ``groups``, ``iterations`` and ``stop_reason``)."""
    from dataclasses import replace

    from fedclust.seeds import derive_seed

    from .algorithm import run_fedcref
    from .experiments import resolve_theta, unit_seed
    from .init import initial_partition
    from .system import system_for

    cfg = dict(config["fedcref"])
    uid = workflow_unit(config)
    e, s = uid.split("/")
    st = _settings(config)[e][s]
    seed = unit_seed(int(config["seed"]), e, s, 0)
    with np.load(inputs["data"]) as z:
        x_pool, y_pool = z["x"], z["y"]
    clients = system_for(cfg, st, y_pool, seed)
    xs = [x_pool[c.idx] for c in clients]
    init = [initial_partition(st["init"], x, c.y, c.k, derive_seed(seed, "init", c.cid),
                              cfg["dec"], float(st.get("dirtiness", 0.0)))
            for x, c in zip(xs, clients, strict=True)]  # fmt: skip
    ks = [c.k for c in clients]
    p = FedCRefParams.from_config(cfg, resolve_theta(cfg, inputs.get("calibration"), st))
    p = replace(p, max_iterations=cap(p.max_iterations, config))
    sites = [Client(i, f"c{i:03d}", x, lab, k, p, seed)
             for i, (x, lab, k) in enumerate(zip(xs, init, ks, strict=True))]  # fmt: skip
    res = run_fedcref(xs, init, ks, p, seed, "fedcref")
    groups = [[gi, *n] for gi, g in enumerate(res.groups) for n in g]
    ref = {"edges": np.asarray(res.edges, dtype=np.int64).reshape(-1, 4),
           "groups": np.asarray(groups, dtype=np.int64).reshape(-1, 3),
           "iterations": int(res.iterations), "stop_reason": res.stop_reason}  # fmt: skip
    return WorkflowRun(uid, sites, params_for(p, seed), ref)


STAGE = register(
    DeployedStage(NAME, load, save, serve, describe, drops=False,
                  workflow=WorkflowHook(workflow_unit, workflow_inputs, workflow_run))
)  # fmt: skip
