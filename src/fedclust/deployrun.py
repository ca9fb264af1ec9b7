"""The workflow's opt-in deployment (issue 30 B.1, rule ``deployment_run``, config
``deployment``): one registered stage (:mod:`fedclust.deployment`) on the workflow's own centre
split, run on a Flower deployment on this machine — a SuperLink and one SuperNode per centre on
127.0.0.1, each SuperNode opening only its centre's folder, TLS and SuperNode authentication as
real sites run it (:class:`fedclust.flower.localhost.LocalFederation`, ``fedclust deploy``'s
recipe) — and in-process with the same centre files; the deployed tables and whether every
output is equal bit for bit (``equal``).

Stages: ``admm`` (one task of ``admm.tasks``, its distributed mode). Parse-time helpers
(:func:`check`, :func:`inputs`) import nothing heavy.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError

STAGES = ("admm",)


def task_name(config: Mapping[str, Any]) -> str:
    """The ADMM task deployed: ``deployment.task``, else the first of ``admm.tasks``."""
    dep, tasks = config.get("deployment", {}), config.get("admm", {}).get("tasks", {})
    name = dep.get("task") or next(iter(tasks), None)
    if name is None or name not in tasks:
        raise ConfigError(
            f"deployment.task {name!r} is not a task of admm.tasks ({', '.join(tasks) or 'none'})",
            where="deployment.task",
            fix="name one of admm.tasks (or leave it out: the first task)",
        )
    return str(name)


def check(config: Mapping[str, Any]) -> None:
    """Config-time checks of an enabled ``deployment`` section."""
    dep = config.get("deployment", {})
    if not dep.get("enabled", False):
        return
    stage = dep.get("stage", "admm")
    if stage not in STAGES:
        raise ConfigError(f"deployment.stage {stage!r} cannot be launched from the workflow",
                          where="deployment.stage", fix=f"one of {STAGES}")  # fmt: skip
    task_name(config)


def inputs(config: Mapping[str, Any]) -> dict[str, str]:
    """The rule's input files (the MDS tables and split of an MDS task, else none)."""
    from .admm.workflow import task_inputs

    return task_inputs(config["admm"]["tasks"][task_name(config)])


def _same(got: Any, ref: Any) -> bool:
    import numpy as np
    import pandas as pd

    if isinstance(ref, pd.DataFrame):
        return isinstance(got, pd.DataFrame) and got[list(ref.columns)].equals(ref)
    if isinstance(ref, list) and ref and isinstance(ref[0], np.ndarray):
        pairs = zip(got, ref, strict=True) if len(got) == len(ref) else None
        return pairs is not None and all(np.array_equal(a, b) for a, b in pairs)
    return bool(got == ref)


def run(
    stage: str, centres: list[Any], params: Mapping[str, Any], *, tls: bool = True,
    timeout: float = 900.0, workdir: str | Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Write every centre's folder, run ``stage`` on a localhost deployment and in-process from
    the same folders; returns ``deployed`` / ``inprocess`` outputs (both read back from their
    files, as a site would), ``equal`` per output and the run's ``done`` record."""
    from . import deployment
    from .flower.localhost import LocalFederation

    st = deployment.get(stage)
    root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="fedclust-"))
    try:
        dirs = deployment.write_centres(st, centres, root / "sites")
        with LocalFederation(root / "run", dirs, secure=tls, timeout=timeout) as fed:
            got = fed.run(stage, params)
        deployment.write_outputs(root / "inprocess", deployment.run(stage, dirs, params))
        ref = deployment.read_outputs(root / "inprocess")
    except Exception as err:  # keep the folder: the SuperLink's and SuperNodes' logs
        raise RuntimeError(f"deployment of {stage!r} failed (logs kept in {root}): {err}") from err
    equal = {}
    for k, v in ref.items():
        if k == "ledger":  # the deployment's ledger adds the arrival time ("t")
            v = v[["round", "sender", "receiver", "kind", "protocol", "fields", "floats"]]
        equal[k] = _same(got.get(k), v)
    if workdir is None:
        shutil.rmtree(root, ignore_errors=True)
    return {"deployed": got, "inprocess": ref, "equal": equal, "done": got["done"],
            "wall_s": float(got["wall_s"])}  # fmt: skip
