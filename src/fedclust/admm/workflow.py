"""Parse-time helpers of rules/admm.smk: the runs and jobs of the ``admm`` section, each job's
input files, the MDS data's honest label, and the config checks that need only the config and
the data shapes (issue 30 items 10-12), run by :func:`fedclust.config.check_references` so that
``fedclust check-config`` and the Snakefile refuse a config before anything runs. No heavy
imports (numpy only)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .problems import CLASSIFICATION, check_problem

#: rows of the bundled scikit-learn sets (load_diabetes, load_breast_cancer)
SKLEARN_SIZES = {"diabetes": 442, "breast_cancer": 569}
#: obs.tsv columns of the mds dataset (IPSS-M and simulated; data contract)
MDS_OUTCOMES = ("OS_YEARS", "OS_STATUS", "LFS_YEARS", "LFS_STATUS", "AMLt_YEARS", "AMLt_STATUS")


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


#: bundled data sets with a continuous target (regression only)
REGRESSION_DATASETS = ("diabetes", "boston")


def check_target(problem: str, dataset: str, key: str) -> None:
    """A classifier (logistic, svm) needs a binary target: not a regression data set's (the
    run failed only in the job with 'needs a binary target', issue 30 C item 12)."""
    if problem in CLASSIFICATION and dataset in REGRESSION_DATASETS:
        raise ConfigError(
            f"{key}: problem {problem} needs a binary target, but {dataset}'s is continuous",
            where=f"{key}.problem / {key}.dataset",
            fix="use dataset breast_cancer (or mds with an outcome and positive) for "
            f"{problem}, or problem ridge / lasso for {dataset}",
        )


def check_tasks(admm: dict[str, Any], data_cfg: dict[str, Any]) -> None:
    """Config checks the schema cannot make: an MDS task's split exists and covers mds, its
    outcome is an obs.tsv column and, for a classifier on a ``*_STATUS`` outcome, ``positive``
    is 0 or 1."""
    for name, task in admm["tasks"].items():
        problem = check_problem(task["problem"], where=f"admm.tasks.{name}.problem")
        check_target(problem, task["dataset"], f"admm.tasks.{name}")
        if task["dataset"] != "mds":
            continue
        split = task["split"]
        spec = data_cfg["splits"].get(split)
        if spec is None or "mds" not in spec["datasets"]:
            raise ConfigError(
                f"admm.tasks.{name}.split = {split!r}, which is not a data.splits entry "
                "for the mds dataset",
                where=f"admm.tasks.{name}.split",
                fix="add e.g. `equal8: {kind: equal, n_centers: 8, datasets: [mds]}` to "
                "data.splits, or name an existing mds split",
            )
        outcome = task["outcome"]
        if outcome not in MDS_OUTCOMES:
            raise ConfigError(
                f"admm.tasks.{name}.outcome = {outcome!r} is not a column of the mds obs.tsv",
                where=f"admm.tasks.{name}.outcome",
                fix=f"use one of: {', '.join(MDS_OUTCOMES)}",
            )
        positive = task["positive"]
        if problem in CLASSIFICATION and outcome.endswith("_STATUS"):
            if str(positive) not in ("0", "1", "0.0", "1.0"):
                raise ConfigError(
                    f"admm.tasks.{name}.positive = {positive!r}: {outcome} holds only 0 "
                    "(censored) and 1 (event)",
                    where=f"admm.tasks.{name}.positive",
                    fix="positive: 1 (the event is the +1 class) or 0",
                )


def center_sizes(
    admm: dict[str, Any], task: dict[str, Any], split_sizes: dict[str, dict[str, list]]
) -> list[int] | None:
    """Rows per center of one task when the config fixes them (scikit-learn sets: an equal split
    into ``n_blocks``; mds: the split's sizes), else None."""
    dataset = task["dataset"]
    if dataset in SKLEARN_SIZES:
        # a task may override the section's n_blocks
        n, k = SKLEARN_SIZES[dataset], int(task.get("n_blocks", admm["n_blocks"]))
        return [n // k + (i < n % k) for i in range(k)]
    if dataset == "mds":
        return split_sizes.get(task["split"], {}).get("mds")
    return None


def check_config(
    config: dict[str, Any], split_sizes: dict[str, dict[str, list]], where: str = "config"
) -> None:
    """Config-time checks of the admm stage: :func:`check_tasks`, and ``admm.min_samples`` is
    met by at least one center of every distributed task (a center below it abstains, issue 22;
    with every center below it nothing would run)."""
    admm = config.get("admm", {})
    if not admm.get("enabled", False):
        return
    check_tasks(admm, config["data"])
    m = int(admm["min_samples"])
    if "distributed" not in admm["modes"] or m <= 1:
        return
    for name, task in admm["tasks"].items():
        sizes = center_sizes(admm, task, split_sizes)
        if sizes and max(sizes) < m:
            raise ConfigError(
                f"admm.min_samples = {m}, but every center of task {name} holds fewer rows "
                f"(the largest {max(sizes)}): every center would abstain",
                where=f"{where}: admm.min_samples",
                fix=f"lower admm.min_samples to ≤ {max(sizes)}, or use fewer centers "
                "(admm.n_blocks, or n_centers of the task's split)",
            )


MDS_SOURCES = {
    "ipssm": "IPSS-M cohort (real; the public stand-in for D6.2's private MDS cohort)",
    "simulated": "SIMULATED MDS-like cohort (default config; config/thesis.yaml uses real IPSS-M)",
}


def mds_source(data_cfg: dict[str, Any]) -> str:
    """Honest label of the MDS data the data stage builds (real IPSS-M or simulated)."""
    src = data_cfg["mds"]["source"]
    return MDS_SOURCES.get(src, str(src))
