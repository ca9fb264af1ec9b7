"""Helpers for ``rules/survival.smk``: data source and job list from ``config.survival``."""

from __future__ import annotations

from typing import Any

from fedclust.config import data_mirror
from fedclust.errors import ConfigError

from .names import (
    CENTRALIZED,
    IPSSM_COVARIATES,
    OUTCOME_SUFFIXES,
    SCENARIOS,
    SIMULATED_COVARIATES,
    STRATEGIES,
)

# Centralized training does not depend on the scenario; its CV folds are the balanced IID centres.
CENTRALIZED_SCENARIO = "iid_balanced"
IPSSM_FILES = ("df_clinical.tsv", "df_mut.tsv", "df_cna.tsv")


def source(config: dict[str, Any]) -> str:
    """``ipssm`` (real) or ``simulated``. ``auto``: IPSS-M when the data mirror holds the IPSS-M
    files or the data stage reads IPSS-M, else the simulated fallback (a mirror without
    ``ipssm/``, e.g. one holding only TCGA files, is not a reason to need IPSS-M; issue 30 A)."""
    s = config["survival"]["source"]
    return auto_ipssm(config) if s == "auto" else s


def auto_ipssm(config: dict[str, Any]) -> str:
    """What ``source: auto`` means in every stage that reads the MDS cohort (survival,
    generative): ``ipssm`` when the data stage reads IPSS-M or the data mirror holds its three
    files, else ``simulated`` (issue 30 A: a mirror without ``ipssm/`` needs no IPSS-M)."""
    if config["data"]["mds"]["source"] == "ipssm":
        return "ipssm"
    mirror = data_mirror(config)
    if mirror is not None and all((mirror / "ipssm" / f).is_file() for f in IPSSM_FILES):
        return "ipssm"
    return "simulated"


def cohort_inputs(config: dict[str, Any]) -> dict[str, str]:
    if source(config) != "ipssm":
        return {}
    dl = config["data"]["download_dir"]
    return {k: f"{dl}/ipssm/df_{k}.tsv" for k in ("clinical", "mut", "cna")}


def check_config(config: dict[str, Any], where: str = "config") -> None:
    """Config-time checks of the survival stage (:func:`fedclust.config.check_references`):
    ``survival.clinical`` names no outcome column and only covariates the cohort the source
    resolves to has (issue 30 item 2)."""
    surv = config.get("survival", {})
    if not surv.get("enabled", False):
        return
    clinical = list(surv.get("clinical") or [])
    outcome = [c for c in clinical if str(c).endswith(OUTCOME_SUFFIXES)]
    if outcome:
        raise ConfigError(
            f"survival.clinical names the outcome column(s) {', '.join(outcome)}: an outcome "
            "used as a covariate makes every C-index meaningless",
            where=f"{where}: survival.clinical",
            fix="list only baseline covariates (AGE, SEX, BM_BLAST, HB, PLT, ...)",
        )
    src = source(config)
    allowed = IPSSM_COVARIATES if src == "ipssm" else SIMULATED_COVARIATES
    unknown = [c for c in clinical if c not in allowed]
    if unknown:
        cohort = (
            "IPSS-M"
            if src == "ipssm"
            else "simulated stand-in (survival.source resolves to simulated)"
        )
        raise ConfigError(
            f"survival.clinical names {', '.join(map(repr, unknown))}, which the {cohort} "
            "cohort has no covariate for",
            where=f"{where}: survival.clinical",
            fix=f"use only: {', '.join(allowed)}",
        )


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
    "auto_ipssm",
    "check_config",
    "cohort_inputs",
    "jobs",
    "fanout",
    "unit_pairs",
    "job_path",
]
