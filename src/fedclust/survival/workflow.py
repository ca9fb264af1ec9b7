"""Helpers for ``rules/survival.smk``: data source and job list from ``config.survival``."""

from __future__ import annotations

from typing import Any

from fedclust.config import data_mirror

from .names import CENTRALIZED, SCENARIOS, STRATEGIES

# Centralized training does not depend on the scenario; its CV folds are the balanced IID centres.
CENTRALIZED_SCENARIO = "iid_balanced"


def source(config: dict[str, Any]) -> str:
    """``ipssm`` (real) or ``simulated``. ``auto``: IPSS-M when a mirror is set or the data stage
    reads IPSS-M, else the simulated fallback."""
    s = config["survival"]["source"]
    if s != "auto":
        return s
    if data_mirror(config) is not None or config["data"]["mds"]["source"] == "ipssm":
        return "ipssm"
    return "simulated"


def cohort_inputs(config: dict[str, Any]) -> dict[str, str]:
    if source(config) != "ipssm":
        return {}
    dl = config["data"]["download_dir"]
    return {k: f"{dl}/ipssm/df_{k}.tsv" for k in ("clinical", "mut", "cna")}


def jobs(surv: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    """(endpoint, scenario, strategy, rep) of every job; each centralized bound once per rep."""
    out = []
    for ep in surv["endpoints"]:
        for rep in range(int(surv["repetitions"])):
            for st in surv["strategies"]:
                scen = [CENTRALIZED_SCENARIO] if st in CENTRALIZED else surv["scenarios"]
                out += [(ep, sc, st, rep) for sc in scen]
    return out


def fanout(surv: dict[str, Any]) -> str:
    """``unit`` (one job per (endpoint, scenario, strategy, rep)) or ``repetition`` (one job per
    (endpoint, rep) running every (scenario, strategy); issue 15). Numbers do not depend on it."""
    return str(surv["fanout"])


def unit_pairs(surv: dict[str, Any]) -> list[tuple[str, str]]:
    """(scenario, strategy) of every unit of one (endpoint, rep), in :func:`jobs` order; the
    same list for every endpoint and repetition, so a grouped job has a fixed output pattern."""
    if not surv.get("endpoints"):
        return []
    ep = surv["endpoints"][0]
    return [(sc, st) for e, sc, st, r in jobs(surv) if e == ep and r == 0]


def job_path(ep: str, sc: str, st: str, rep: int, name: str) -> str:
    return f"results/survival/{ep}/{sc}/{st}/rep{rep}/{name}"


__all__ = [
    "SCENARIOS",
    "STRATEGIES",
    "source",
    "cohort_inputs",
    "jobs",
    "fanout",
    "unit_pairs",
    "job_path",
]
