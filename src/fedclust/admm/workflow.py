"""Parse-time helpers of rules/admm.smk: the runs and jobs of the ``admm`` section, each job's
input files, the config checks the schema cannot make, and the MDS data's honest label."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from . import problems as P


def runs(admm: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (task, mode) of the section, tasks first (the report's order)."""
    return [(t, m) for t in admm.get("tasks", {}) for m in admm.get("modes", [])]


def task_inputs(task: dict[str, Any]) -> dict[str, str]:
    """Rule inputs of a task: the MDS tables and center split, nothing for scikit-learn sets."""
    if task["dataset"] != "mds":
        return {}
    return {
        "features": "results/data/mds/features.parquet",
        "obs": "results/data/mds/obs.tsv",
        "split": f"results/data/mds/splits/{task['split']}.tsv",
    }


def fanout(admm: dict[str, Any]) -> str:
    """``unit`` (one admm_run job per (task, mode)) or ``all`` (one job running every run;
    issue 15). The runs are deterministic and independent: the numbers do not depend on it."""
    return str(admm["fanout"]) if admm else "unit"


def group_inputs(tasks: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Union of :func:`task_inputs` over every task: the inputs of the one grouped job."""
    out: dict[str, list[str]] = {}
    for task in tasks.values():
        for k, v in task_inputs(task).items():
            if v not in out.setdefault(k, []):
                out[k].append(v)
    return out


def check_tasks(admm: dict[str, Any], data_cfg: dict[str, Any]) -> None:
    """Config checks the schema cannot make: an MDS task's split exists and covers mds."""
    for name, task in admm["tasks"].items():
        P.check_problem(task["problem"], where=f"admm.tasks.{name}.problem")
        if task["dataset"] != "mds":
            continue
        split = task["split"]
        spec = data_cfg["splits"].get(split)
        if spec is None or "mds" not in spec["datasets"]:
            raise ConfigError(
                f"admm task '{name}' uses split '{split}', which is not a data.splits entry "
                "for the mds dataset",
                where=f"admm.tasks.{name}.split",
                fix="add e.g. `equal8: {kind: equal, n_centers: 8, datasets: [mds]}` to "
                "data.splits, or name an existing mds split",
            )


MDS_SOURCES = {
    "ipssm": "IPSS-M cohort (real; the public stand-in for D6.2's private MDS cohort)",
    "simulated": "SIMULATED MDS-like cohort (default config; config/thesis.yaml uses real IPSS-M)",
}


def mds_source(data_cfg: dict[str, Any]) -> str:
    """Honest label of the MDS data the data stage builds (real IPSS-M or simulated)."""
    src = data_cfg["mds"]["source"]
    return MDS_SOURCES.get(src, str(src))
