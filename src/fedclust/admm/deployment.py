"""Consensus ADMM (seed 003 §2.3, D6.2 Algorithm 2) as a deployed stage
(:mod:`fedclust.deployment`).

One run is one distributed (task, mode) of the ADMM stage: round 0 the federated moments and
the design, then the x-update at every centre and the z-update on the server until the
iteration budget or Boyd's stopping rule (:func:`.admm.consensus_server`, the server function
the workflow runs in-process). A centre's file holds its raw inputs, its target (±1 for the
classification problems) and its name; the run's parameters are the solver settings
(``settings``: :class:`.admm.AdmmSettings`' fields), ``standardize`` and ``min_samples``. The
server learns the feature count from the handshake. Outputs: the consensus model ``z``, the
per-iteration ``history`` (objective, residuals, tolerances), ``converged`` and the ledger.
ADMM is exact: every centre that took part in round 0 is needed to the end (no drops).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fedclust.deployment import (
    DeployedStage,
    WorkflowHook,
    WorkflowRun,
    iterations,
    load_npz,
    pick,
    register,
    same_schema,
    save_npz,
)

from .admm import AdmmCentre, AdmmSettings, consensus_server

NAME = "admm"


def settings(params: Mapping[str, Any]) -> AdmmSettings:
    return AdmmSettings(**dict(params["settings"]))


def params_from_config(cfg: Mapping[str, Any], task: Mapping[str, Any]) -> dict[str, Any]:
    """The run parameters of one task of the workflow's ``admm`` config (its distributed mode;
    ``cfg`` and ``task`` filled with the schema's defaults)."""
    from .pipeline import settings_for

    return {"settings": asdict(settings_for(dict(cfg), dict(task))),
            "standardize": bool(cfg["standardize"]),
            "min_samples": int(cfg["min_samples"])}  # fmt: skip


def save(centre: AdmmCentre, path: Path) -> None:
    save_npz(path, x=centre.X, y=centre.y, cid=centre.cid)


def load(path: Path, params: Mapping[str, Any]) -> AdmmCentre:
    d = load_npz(path)
    return AdmmCentre(str(d["cid"]), d["x"], d["y"], settings(params),
                      standardize=bool(params["standardize"]),
                      min_samples=int(params["min_samples"]))  # fmt: skip


def describe(centre: AdmmCentre) -> dict[str, Any]:
    return {"n_features": int(centre.X.shape[1])}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    same_schema(schema, "n_features", NAME)
    server = consensus_server(settings(params), int(params["min_samples"]))
    res = server(list(proxies))
    return {"z": res.z, "history": res.history, "converged": bool(res.converged),
            "iterations": int(res.iterations)}  # fmt: skip


def workflow_centres(
    cfg: Mapping[str, Any], task_name: str, seed: int, source: str = "",
    inputs: Mapping[str, str] | None = None, iterations: int | None = None,
) -> tuple[list[AdmmCentre], dict[str, Any]]:  # fmt: skip
    """The centres of the workflow's split of task ``task_name`` (each holding only its rows,
    as rule ``admm_run`` builds them) and the run parameters of its distributed mode;
    ``iterations``: at most this many iterations (every ADMM iteration is a round trip)."""
    from .admm import centres_from_rows
    from .pipeline import check_floor, load_task

    task = dict(cfg["tasks"][task_name])
    data = load_task(dict(cfg), task, seed, task_name, **dict(inputs or {}), source=source)
    params = params_from_config(cfg, task)
    if iterations is not None:
        params["settings"]["max_iter"] = min(int(iterations), params["settings"]["max_iter"])
    s, m, std = settings(params), int(params["min_samples"]), bool(params["standardize"])
    check_floor(data, m, std)
    return centres_from_rows(data.X, data.y, data.centers, data.names, s, std, m), params


# ---------------------------------------------------------------- the workflow's rule
def workflow_unit(config: Mapping[str, Any]) -> str:
    """The task deployed: ``deployment.units.admm``, else the first of ``admm.tasks``."""
    return pick(config, NAME, list(config.get("admm", {}).get("tasks", {})))


def workflow_inputs(config: Mapping[str, Any]) -> dict[str, str]:
    from .workflow import task_inputs

    return task_inputs(config["admm"]["tasks"][workflow_unit(config)])


def workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The task's centres as rule ``admm_run`` builds them, its distributed mode's parameters
    (``deployment.iterations``: at most that many iterations)."""
    from .workflow import mds_source

    name = workflow_unit(config)
    centres, params = workflow_centres(config["admm"], name, int(config["seed"]),
                                       mds_source(config["data"]), inputs,
                                       iterations(config))  # fmt: skip
    return WorkflowRun(name, centres, params)


STAGE = register(
    DeployedStage(NAME, load, save, serve, describe, drops=False,
                  workflow=WorkflowHook(workflow_unit, workflow_inputs, workflow_run))
)  # fmt: skip
