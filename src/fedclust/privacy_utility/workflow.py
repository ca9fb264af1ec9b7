"""Parse-time helpers for ``rules/privacy_utility.smk``: the methods and each one's input files
(the data stage's and the survival stage's contract paths). No heavy imports."""

from __future__ import annotations

from typing import Any

from fedclust.errors import ConfigError

METHODS = ("dp_lloyd", "hac", "km", "known_io", "survival", "heart", "dec")
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


def inputs(method: str, cfg: dict[str, Any]) -> dict[str, str]:
    """The named input files of one method's job."""
    m = cfg.get(method, {})
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
    if method == "survival":
        return {
            "features": "results/survival/cohort/covariates.parquet",
            "obs": "results/survival/cohort/outcomes.tsv",
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
