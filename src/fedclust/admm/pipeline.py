"""One ADMM job = one (task, mode): load data, run ADMM, compare with the library reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..data.split import center_names, make_split
from ..errors import ConfigError, DisclosureError, InputDataError
from ..federation import INPROCESS, Ledger, Transport
from . import data as D
from . import problems as P
from .admm import AdmmResult, AdmmSettings, admm_centralized, admm_federated, centres_from_rows
from .reference import reference_solution
from .workflow import task_inputs

MODES = ("centralized", "distributed")


def settings_for(cfg: dict[str, Any], task: dict[str, Any]) -> AdmmSettings:
    """AdmmSettings from the ``admm`` config section and one ``admm.tasks`` entry."""
    svm, inner, eps_abs = cfg["svm"], cfg["inner"], cfg["eps_abs"]
    return AdmmSettings(
        problem=P.check_problem(task["problem"]),
        lam=float(task["lam"]),
        rho=float(task.get("rho", cfg["rho"])),  # a task may override the section's value
        max_iter=int(task.get("max_iter", cfg["max_iter"])),
        eps_abs=None if eps_abs is None else float(eps_abs),
        eps_rel=float(cfg["eps_rel"]),
        penalize_bias=bool(cfg["penalize_bias"]),
        scaling=cfg["scaling"],
        inner_tol=float(inner["tol"]),
        max_inner=int(inner["max_iter"]),
        svm_method=svm["x_update"],
        svm_step=float(svm["step"]),
        svm_substeps=int(svm["substeps"]),
    )


@dataclass
class TaskData:
    X: np.ndarray
    y: np.ndarray
    centers: np.ndarray
    names: list[str]
    source: str


def load_task(
    cfg: dict[str, Any],
    task: dict[str, Any],
    seed: int,
    name: str,
    features: str | None = None,
    obs: str | None = None,
    split: str | None = None,
    source: str = "",
) -> TaskData:
    """Features, target (±1 for classification) and each sample's center for one task."""
    problem, dataset = P.check_problem(task["problem"]), task["dataset"]
    if dataset in D.BUNDLED_DATASETS:
        X, y = D.load_sklearn(dataset)
        k = int(task.get("n_blocks", cfg["n_blocks"]))
        names = center_names(k)
        centers = np.array(names)[make_split(len(y), "equal", k, seed, raw_seed=False)]
        src = D.BUNDLED_SOURCES[dataset]
    elif dataset == "mds":
        if not (features and obs and split):
            raise ConfigError(
                f"task '{name}' on mds needs the data-stage files and a split",
                where=f"admm.tasks.{name}.split",
            )
        Xdf, y = D.load_table_task(
            features,
            obs,
            task["outcome"],
            task["positive"] if problem in P.CLASSIFICATION else None,
        )
        X = Xdf.to_numpy(dtype=float)
        tab = pd.read_csv(split, sep="\t", dtype={"sample_id": str}).set_index("sample_id")
        missing = Xdf.index.difference(tab.index)
        if len(missing):
            raise InputDataError(
                f"{len(missing)} MDS samples have no center in {split}",
                where=split,
                fix="rebuild the split from the same obs.tsv",
            )
        centers = tab.loc[Xdf.index, "center"].astype(str).to_numpy()
        names = sorted(set(centers))
        src = source or "MDS cohort of the data stage"
    else:
        D.load_sklearn(dataset)  # raises the unknown-dataset error
        raise AssertionError  # pragma: no cover
    return TaskData(X, D.encode_target(problem, y), centers, names, src)


def check_floor(data: TaskData, min_samples: int, standardize: bool) -> None:
    """A center with fewer than ``admm.min_samples`` rows abstains at the center (issue 22: the
    consensus is then over the others, the abstention recorded); when every center is below
    the floor nothing can run: the :class:`DisclosureError` the ledger would raise, with a fix
    for the user (the config keys to change; issue 30 item 11)."""
    names, counts = np.unique(data.centers, return_counts=True)
    if len(counts) and counts.max() < min_samples:
        i = int(np.argmax(counts))
        raise DisclosureError(
            f"every center holds fewer rows than admm.min_samples = {min_samples} (the largest, "
            f"{names[i]}, holds {counts[i]}): every center would abstain",
            center=str(names[i]),
            protocol="admm_standardize" if standardize else "admm_local_update",
            rule=f"min-samples>={min_samples}",
            fix=f"lower admm.min_samples to ≤ {counts[i]}, or use fewer centers "
            "(admm.n_blocks, or n_centers of the task's split)",
        )


def run_job(
    cfg: dict[str, Any], task: dict[str, Any], mode: str, data: TaskData,
    transport: Transport = INPROCESS,
) -> tuple[AdmmResult, dict[str, Any]]:  # fmt: skip
    """Run ADMM in ``mode`` and compare with the reference solve on the pooled standardised data.

    The reference (and the pooled design it uses) is an evaluation only; the distributed run
    is one centre object per center (its own rows) and the server over ``transport``.
    """
    if mode not in MODES:
        raise ConfigError(
            f"unknown ADMM mode '{mode}'", where="admm.modes", fix=f"use {', '.join(MODES)}"
        )
    s = settings_for(cfg, task)
    std = bool(cfg["standardize"])
    A, b = D.pooled_blocks(data.X, data.y, s.problem, std)
    if mode == "centralized":
        res = admm_centralized(A, b, s)
    else:
        ledger = Ledger()
        m = int(cfg["min_samples"])  # admm.min_samples: the ledger's rule
        check_floor(data, m, std)
        centres = centres_from_rows(data.X, data.y, data.centers, data.names, s, std, m)
        res = admm_federated(centres, s, ledger, m, transport)
    # node scaling (3.34) with equal-size centers = the centralized problem with λ/N_b
    lam_ref = s.lam if s.scaling == "total" or mode == "centralized" else s.lam / len(data.names)
    x_ref = reference_solution(s.problem, A, b, lam_ref, s.penalize_bias)
    f_ref = P.objective(s.problem, A, b, x_ref, lam_ref, s.penalize_bias)
    f_z = P.objective(s.problem, A, b, res.z, lam_ref, s.penalize_bias)
    m = A @ res.z
    if s.problem in P.CLASSIFICATION:
        metric, metric_name = float(np.mean(np.sign(m) == b)), "train_accuracy"
    else:
        metric = float(1.0 - np.sum((b - m) ** 2) / np.sum((b - b.mean()) ** 2))
        metric_name = "train_r2"
    info = {
        "problem": s.problem,
        "dataset": task.get("dataset"),
        "source": data.source,
        "mode": mode,
        "n": int(len(b)),
        "d": int(A.shape[1]),
        "centers": 1 if mode == "centralized" else len(data.names),
        "lam": s.lam,
        "rho": s.rho,
        "iterations": res.iterations,
        "converged": bool(res.converged),
        "objective": f_z,
        "reference_objective": f_ref,
        "relative_gap": (f_z - f_ref) / abs(f_ref),
        "max_abs_coef_diff": float(np.max(np.abs(res.z - x_ref))),
        "metric_name": metric_name,
        "metric": metric,
        "nonzero_coefs": int(np.sum(np.abs(res.z) > 1e-8)),
        "messages": res.ledger.n_messages,
        "floats": res.ledger.n_floats,
        "seconds": res.seconds,
        "z": res.z,
        "reference_x": x_ref,
    }
    return res, info


def run_units(
    cfg: dict[str, Any], units: list[tuple[str, str]], seed: int, source: str = "",
    transport: Transport = INPROCESS,
) -> list[tuple[AdmmResult, dict[str, Any]]]:  # fmt: skip
    """Run every (task name, mode) of ``units`` in order (one job of any ``fanout``), reading each
    task's data once from the files :func:`task_inputs` names; a run's numbers depend on its own
    (task, mode) only. ``transport``: what carries the distributed runs' messages."""
    tasks, data, out = cfg["tasks"], {}, []
    for name, mode in units:
        task = tasks[name]
        if name not in data:
            data[name] = load_task(cfg, task, seed, name, **task_inputs(task), source=source)
        res, info = run_job(cfg, task, mode, data[name], transport)
        out.append((res, {"task": name, **info}))
    return out
