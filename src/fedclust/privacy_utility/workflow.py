"""Parse-time helpers for ``rules/privacy_utility.smk``: the methods and each one's input files
(the data stage's and the survival stage's contract paths). No heavy imports."""

from __future__ import annotations

from typing import Any

from fedclust.errors import ConfigError

METHODS = ("dp_lloyd", "hac", "km", "known_io", "survival", "heart", "dec", "admm", "boosting",
           "generative", "fedprep")  # fmt: skip
METHODS += ("fedcref", "bayes", "property_inference", "reconstruction")
#: what every method writes under results/privacy_utility/{method}/
UNIT_FILES = ("curve", "budget")


def methods(cfg: dict[str, Any]) -> list[str]:
    out = [str(m) for m in cfg.get("methods", [])]
    bad = sorted(set(out) - set(METHODS))
    if bad:
        raise ConfigError(
            f"unknown privacy–utility method(s) {bad}",
            where="privacy_utility.methods",
            fix=f"use {list(METHODS)}",
        )
    return out


def fanout(cfg: dict[str, Any]) -> str:
    """``method``: one ``privacy_utility_run`` job per method (thesis: a cluster runs them in
    parallel); ``all``: one job running every method in one process (small configs: saves the
    interpreter / torch start-up of six jobs). Same numbers either way (seeds per method)."""
    out = str(cfg.get("fanout", "all"))
    if out not in ("method", "all"):
        raise ConfigError(
            f"privacy_utility.fanout is {out!r}",
            where="privacy_utility.fanout",
            fix="use method or all",
        )
    return out


def job_methods(cfg: dict[str, Any], wildcards: Any) -> list[str]:
    """The methods one ``privacy_utility_run`` job runs: all (fanout ``all``) or ``{method}``."""
    return methods(cfg) if fanout(cfg) == "all" else [str(wildcards.method)]


def job_inputs(cfg: dict[str, Any], wildcards: Any) -> dict[str, str]:
    """The named inputs of one job: ``<method>_<name>`` for each of its methods."""
    return {f"{m}_{k}": v for m in job_methods(cfg, wildcards) for k, v in inputs(m, cfg).items()}


def unit_outputs(grouped: list[str] | None) -> dict[str, str]:
    """Outputs of one job: ``<file>_<method>`` per method of a grouped job, else ``<file>``
    under the ``{method}`` wildcard."""
    if grouped is None:
        return {f: f"results/privacy_utility/{{method}}/{f}.tsv" for f in UNIT_FILES}
    return {f"{f}_{m}": f"results/privacy_utility/{m}/{f}.tsv" for m in grouped for f in UNIT_FILES}


def inputs(method: str, cfg: dict[str, Any]) -> dict[str, str]:
    """The named input files of one method's job."""
    m = cfg.get(method, {})
    if method in ("admm", "boosting", "generative"):  # bundled / simulated in the job
        return {}
    if method in ("fedcref", "bayes"):  # bundled images (digits; no downloaded file)
        return {}
    if method in ("dp_lloyd", "km", "dec"):
        return {
            "features": "results/data/mds/features.parquet",
            "obs": "results/data/mds/obs.tsv",
            "split": f"results/data/mds/splits/{m.get('split', 'uniform10')}.tsv",
        }
    if method in ("hac", "known_io"):
        c, p = m.get("cohort", "SIMA"), m.get("preprocessing", "vst")
        return {
            "features": f"results/data/rnaseq/{c}/{p}.parquet",
            "obs": f"results/data/rnaseq/{c}/obs.tsv",
        }
    if method in ("property_inference", "reconstruction"):  # raw counts (each side preprocesses)
        c = m.get("cohort", "COAD")
        return {
            "features": f"results/data/rnaseq/{c}/counts.parquet",
            "obs": f"results/data/rnaseq/{c}/obs.tsv",
        }
    if method == "survival":
        return {
            "features": "results/survival/cohort/covariates.parquet",
            "obs": "results/survival/cohort/outcomes.tsv",
        }
    if method == "fedprep":  # the cohort's raw counts and its centre split
        c = m.get("cohort", "SIMA")
        return {
            "features": f"results/data/rnaseq/{c}/counts.parquet",
            "obs": f"results/data/rnaseq/{c}/obs.tsv",
            "split": f"results/data/rnaseq/{c}/splits/{m.get('split', 'region')}.tsv",
        }
    if method == "heart":
        return {
            "features": "results/data/heart/features.parquet",
            "obs": "results/data/heart/obs.tsv",
        }
    raise ConfigError(
        f"unknown privacy–utility method {method!r}",
        where="privacy_utility.methods",
        fix=f"use {list(METHODS)}",
    )
