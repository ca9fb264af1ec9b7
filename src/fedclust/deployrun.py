"""The workflow's opt-in deployment (issue 30 B.1, rule ``deployment_run``, config
``deployment``): registered stages (:mod:`fedclust.deployment`) on the workflow's own centre
split, each run on a Flower deployment on this machine — a SuperLink and one SuperNode per
centre on 127.0.0.1, each SuperNode opening only its centre's folder, TLS and SuperNode
authentication as real sites run it (:class:`fedclust.flower.localhost.LocalFederation`,
``fedclust deploy``'s recipe) — and in-process with the same centre files; the deployed
outputs, a stage-agnostic result table (deployed and in-process side by side) and whether every
output is equal bit for bit (``equal``).

One job per stage of ``deployment.stages`` (the rule's ``{stage}`` wildcard: a cluster runs
them in parallel). A stage is launched from the workflow through its
:class:`~fedclust.deployment.WorkflowHook` (``DeployedStage.workflow``, in the stage's own
``deployment`` module): the unit deployed, the rule's input files, and the centres, run
parameters and (optionally) the workflow's own in-process outputs on the same centres
(``equal_to_workflow``). :data:`STAGES` lists the stages that have one.

Engines (``deployment.engine``): ``localhost`` (the recipe above), ``apps`` (the deployment's
own ServerApp and ClientApps in one process, :func:`fedclust.flower.deploy.simulate`: no
SuperLink) and ``inprocess`` (the registry's in-process run from the files, no Flower: the
fast path the tests take).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import ConfigError

#: the stages with a workflow hook (``DeployedStage.workflow``), in the rule's order
STAGES = ("admm", "boosting", "survival", "survival_km", "survival_coxph", "heart", "dec",
          "fedprep_tables", "fedprep", "fedcref", "bayes", "savae", "radialgan",
          "dgd", "savae_virtual", "hac")  # fmt: skip
ENGINES = ("localhost", "apps", "inprocess")
#: the ledger's columns compared and written (the deployment's ledger adds the arrival time)
LEDGER = ["round", "sender", "receiver", "kind", "protocol", "fields", "floats"]
#: arrays with more values than this are summarised in result.tsv (size, sum, sum of squares,
#: max |value|); the comparison is on every value
MAX_VALUES = 2000


def stages(config: Mapping[str, Any]) -> list[str]:
    """``deployment.stages`` (the stages deployed, one job each)."""
    return [str(s) for s in config.get("deployment", {}).get("stages") or ["admm"]]


def hook(stage: str) -> Any:
    """The :class:`~fedclust.deployment.WorkflowHook` of ``stage`` (imports its module)."""
    from . import deployment

    st = deployment.get(stage)
    if st.workflow is None:
        raise ConfigError(
            f"deployment.stages: {stage!r} cannot be launched from the workflow",
            where="deployment.stages",
            fix=f"one of {list(STAGES)}; {stage!r} deploys with `fedclust deploy` (README, "
            "Flower deployment)",
        )
    return st.workflow


def check(config: Mapping[str, Any]) -> None:
    """Config-time checks of an enabled ``deployment`` section: every stage registered and
    launchable from the workflow, its unit a unit of the config."""
    from .deployment import MODULES

    dep = config.get("deployment", {})
    if not dep.get("enabled", False):
        return
    names = stages(config)
    for name in names:
        if name not in MODULES:
            raise ConfigError(
                f"deployment.stages: {name!r} is not a registered deployed stage",
                where="deployment.stages",
                fix=f"registered: {sorted(MODULES)}; launched from the workflow: {list(STAGES)}",
            )
        if name not in STAGES:
            hook(name)  # the message naming the launchable ones
    if len(set(names)) != len(names):
        raise ConfigError(f"deployment.stages lists a stage twice: {names}",
                          where="deployment.stages", fix="each stage once")  # fmt: skip
    unknown = set(dep.get("units") or {}) - set(names)
    if unknown:
        raise ConfigError(
            f"deployment.units names stages not deployed: {sorted(unknown)}",
            where="deployment.units", fix=f"stages of deployment.stages {names}",
        )  # fmt: skip
    engine = dep.get("engine", "localhost")
    if engine not in ENGINES:
        raise ConfigError(f"deployment.engine {engine!r}", where="deployment.engine",
                          fix=f"one of {list(ENGINES)}")  # fmt: skip
    for name in names:
        hook(name).unit(config)


def unit(config: Mapping[str, Any], stage: str) -> str:
    """The unit of ``stage`` deployed (``deployment.units.<stage>``, else the stage's first)."""
    return str(hook(stage).unit(config))


def job_settings(config: Mapping[str, Any], stage: str) -> dict[str, Any]:
    """What one stage's job depends on besides its inputs (the rule's ``params``: a change
    reruns that job only): the unit, the engine, TLS and the round cap."""
    dep = config.get("deployment", {})
    return {"unit": unit(config, stage), "engine": dep.get("engine", "localhost"),
            "tls": dep.get("tls", True), "iterations": dep.get("iterations")}  # fmt: skip


def inputs(config: Mapping[str, Any], stage: str) -> dict[str, str]:
    """The rule's input files of ``stage``'s job."""
    return dict(hook(stage).inputs(config))


def _same(got: Any, ref: Any) -> bool:
    import numpy as np
    import pandas as pd

    if isinstance(ref, pd.DataFrame):
        cols = list(ref.columns)
        return (
            isinstance(got, pd.DataFrame)
            and set(cols) <= set(got.columns)
            and bool(got[cols].equals(ref))
        )
    if isinstance(ref, list) and ref and isinstance(ref[0], np.ndarray):
        if not isinstance(got, list) or len(got) != len(ref):
            return False
        return all(np.array_equal(a, b, equal_nan=a.dtype.kind == "f" and b.dtype.kind == "f")
                   for a, b in zip(got, ref, strict=True))  # fmt: skip
    return bool(got == ref)


def _read_back(outputs: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """``outputs`` written and read back as a deployment's out-dir is (so both sides of a
    comparison have the same types)."""
    from . import deployment

    deployment.write_outputs(folder, outputs)
    return deployment.read_outputs(folder)


def _sent(ledger: Any) -> int:
    return int((ledger.kind != "abstain").sum())


def run(
    stage: str, centres: list[Any], params: Mapping[str, Any], *, engine: str = "localhost",
    tls: bool = True, timeout: float = 900.0, workdir: str | Path | None = None,
    reference: Mapping[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Write every centre's folder, run ``stage`` on ``engine`` and in-process from the same
    folders; returns ``deployed`` / ``inprocess`` outputs (both read back from their files, as
    a site would), ``equal`` per output, ``workflow`` (per output of ``reference``: the
    deployed output equals the workflow's own), the run's ``done`` record and ``wall_s``."""
    import time

    from . import deployment

    if engine not in ENGINES:
        raise ConfigError(f"engine {engine!r}", where="deployment.engine", fix=f"one of {ENGINES}")
    st = deployment.get(stage)
    root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="fedclust-"))
    try:
        dirs = deployment.write_centres(st, centres, root / "sites")
        t0 = time.monotonic()
        if engine == "localhost":
            from .flower.localhost import LocalFederation

            with LocalFederation(root / "run", dirs, secure=tls, timeout=timeout) as fed:
                got = fed.run(stage, params)
        elif engine == "apps":
            from .flower.deploy import simulate

            done = simulate(stage, dirs, dict(params), root / "run")
            got = {**deployment.read_outputs(root / "run"), "done": done}
        else:
            out = deployment.run(stage, dirs, params)
            done = {"stage": stage, "centres": sorted(str(d.name) for d in dirs),
                    "messages": _sent(out["ledger"]), "dropped": {}}  # fmt: skip
            got = {**_read_back(out, root / "run"), "done": done}
        wall = time.monotonic() - t0
        ref = _read_back(deployment.run(stage, dirs, params), root / "inprocess")
        wf = None if reference is None else _read_back(dict(reference), root / "workflow")
    except Exception as err:  # keep the folder: the SuperLink's and SuperNodes' logs
        raise RuntimeError(f"deployment of {stage!r} failed (logs kept in {root}): {err}") from err
    equal = {}
    for k, v in ref.items():
        equal[k] = _same(got.get(k), v[LEDGER] if k == "ledger" else v)
    same_as_workflow = None if wf is None else {k: _same(got.get(k), v) for k, v in wf.items()}
    if workdir is None:
        shutil.rmtree(root, ignore_errors=True)
    return {"deployed": got, "inprocess": ref, "equal": equal, "workflow": same_as_workflow,
            "done": got["done"], "wall_s": float(got.get("wall_s", wall))}  # fmt: skip


# ---------------------------------------------------------------- the rule's tables
def _flat(name: str, value: Any) -> list[tuple[str, int, Any]]:
    """(output, index, value) rows of one output (tables by column, arrays flattened, mappings
    by key); an array with more than :data:`MAX_VALUES` values as its summary."""
    import numpy as np
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        return [r for c in value.columns for r in _flat(f"{name}.{c}", value[c].to_numpy())]
    if isinstance(value, Mapping):
        return [r for k in sorted(value) for r in _flat(f"{name}.{k}", value[k])]
    if isinstance(value, list) and value and all(isinstance(a, np.ndarray) for a in value):
        if len(value) == 1:
            return _flat(name, value[0])
        return [r for j, a in enumerate(value) for r in _flat(f"{name}[{j}]", a)]
    if isinstance(value, list | tuple | np.ndarray):
        a = np.asarray(value)
        if a.size > MAX_VALUES and a.dtype.kind in "biuf":
            x = a.astype(np.float64).ravel()
            return [(f"{name}:{s}", 0, float(v)) for s, v in
                    (("size", x.size), ("sum", x.sum()), ("sum_sq", (x * x).sum()),
                     ("max_abs", np.abs(x).max()))]  # fmt: skip
        return [(name, i, v.item() if hasattr(v, "item") else v) for i, v in enumerate(a.ravel())]
    return [(name, 0, value)]


def result_table(deployed: Mapping[str, Any], inprocess: Mapping[str, Any]) -> Any:
    """Every output but the ledger, deployed and in-process side by side (``output``, ``index``,
    ``deployed``, ``inprocess``, ``equal``): the stage-agnostic result of a deployment."""
    import pandas as pd

    rows = []
    for name in sorted(k for k in inprocess if k != "ledger"):
        got = dict(((o, i), v) for o, i, v in _flat(name, deployed.get(name)))
        for o, i, v in _flat(name, inprocess[name]):
            d = got.get((o, i))
            rows.append({"output": o, "index": i, "deployed": d, "inprocess": v,
                         "equal": bool(d == v or (d != d and v != v))})  # fmt: skip
    return pd.DataFrame(rows, columns=["output", "index", "deployed", "inprocess", "equal"])


def _scalars(outputs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sorted(outputs.items())
            if isinstance(v, bool | int | float | str) and k != "wall_s"}  # fmt: skip


def execute(
    config: Mapping[str, Any], stage: str, inputs: Mapping[str, str], *,
    engine: str | None = None, workdir: str | Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The rule's library function: ``stage``'s centres of the workflow's split (its hook) run
    on ``engine`` (``deployment.engine`` when None) and in-process; returns the deployed
    ``ledger`` and the ``result`` table, the ``comparison`` record (``equal``: every output bit
    for bit the in-process one; ``equal_to_workflow``: the workflow's own outputs, where the
    hook gives them) and ``wall_s``."""
    dep = config.get("deployment", {})
    wf = hook(stage).build(config, inputs)
    engine = str(engine or dep.get("engine", "localhost"))
    res = run(stage, wf.centres, wf.params, engine=engine, tls=bool(dep.get("tls", True)),
              timeout=float(dep.get("timeout", 900)), workdir=workdir,
              reference=wf.reference)  # fmt: skip
    got, ref = res["deployed"], res["inprocess"]
    wf_eq = res["workflow"]
    comparison = {
        "stage": stage, "unit": wf.unit, "engine": engine,
        "tls": bool(dep.get("tls", True)) if engine == "localhost" else None,
        "centres": list(res["done"]["centres"]), "messages": int(res["done"]["messages"]),
        "dropped": dict(res["done"].get("dropped") or {}),
        "values": json.loads(json.dumps(_scalars(got), default=float)),
        "equal": all(res["equal"].values()), "equal_by_output": res["equal"],
        "equal_to_workflow": None if wf_eq is None else all(wf_eq.values()),
        "equal_to_workflow_by_output": wf_eq,
    }  # fmt: skip
    return {
        "ledger": got["ledger"][LEDGER],
        "result": result_table(got, ref),
        "comparison": comparison,
        "wall_s": res["wall_s"],
    }


def targets(config: Mapping[str, Any]) -> list[str]:
    """The comparison files of the enabled deployment (one job per stage)."""
    if not config.get("deployment", {}).get("enabled", False):
        return []
    return [f"results/deployment/{s}/comparison.json" for s in stages(config)]


__all__: Sequence[str] = ("STAGES", "check", "execute", "inputs", "run", "stages", "unit")
