"""Parse-time helpers for ``rules/boosting.smk``: units, job groups, inputs (no heavy imports).

A *unit* is (dataset, split, scheme, repetition). A job runs one group of units and writes one
metrics / messages / timing table for it, ``results/boosting/runs/{dataset}/{group}/``:
``boosting.fanout: all`` (default config) runs every unit in one job (``all/all``), ``dataset``
one job per dataset (``<dataset>/all``), ``unit`` (thesis) one job per unit
(``<dataset>/<split>.<scheme>.rep<r>``). Every number depends on its unit only, so the tables
the report merges do not depend on the grouping.
"""

from __future__ import annotations

import re
from typing import Any

_VOTE = re.compile(r"^vote_(zero|union)_s(all|[1-9][0-9]*)$")
FANOUTS = ("all", "dataset", "unit")


def scheme_ids(cfg: dict[str, Any]) -> list[str]:
    """``boosting.schemes`` with ``vote`` expanded to vote_<variant>_s<S> (same as
    :func:`fedclust.boosting.experiment.scheme_ids`, without its imports)."""
    out = []
    for s in cfg.get("schemes", []):
        if s == "vote":
            v = cfg.get("vote", {})
            out += [f"vote_{var}_s{t}" for var in v.get("variants", ["zero", "union"])
                    for t in v.get("top", [1, 5, 10, "all"])]  # fmt: skip
        else:
            out.append(str(s))
    return out


def units(cfg: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    """Every (dataset, split, scheme, rep) of the config, in a fixed order."""
    out = []
    for ds, dcfg in (cfg.get("datasets") or {}).items():
        for split in dcfg.get("splits") or {}:
            for sch in scheme_ids(cfg):
                out += [(ds, split, sch, r) for r in range(int(cfg.get("repetitions", 1)))]
    return out


def fanout(cfg: dict[str, Any]) -> str:
    return str(cfg.get("fanout", "all"))


def group_of(unit: tuple[str, str, str, int], how: str) -> tuple[str, str]:
    ds, split, sch, rep = unit
    if how == "all":
        return "all", "all"
    return ds, ("all" if how == "dataset" else f"{split}.{sch}.rep{rep}")


def groups(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """(dataset, group) of every job."""
    out: list[tuple[str, str]] = []
    for u in units(cfg):
        g = group_of(u, fanout(cfg))
        if g not in out:
            out.append(g)
    return out


def group_units(cfg: dict[str, Any], dataset: str, group: str) -> list[list[Any]]:
    """The units one job runs (JSON-friendly lists)."""
    how = fanout(cfg)
    return [list(u) for u in units(cfg) if group_of(u, how) == (dataset, group)]


def run_dir(dataset: str, group: str) -> str:
    return f"results/boosting/runs/{dataset}/{group}"


def timing_path(dataset: str, group: str) -> str:
    return f"results/benchmarks/boosting/runs/{dataset}/{group}.tsv"


def data_splits_used(cfg: dict[str, Any], dataset: str) -> list[str]:
    """Names of the data-stage splits (``kind: data``) a dataset's splits read."""
    splits = ((cfg.get("datasets") or {}).get(dataset) or {}).get("splits") or {}
    return [s["name"] for s in splits.values() if s.get("kind") == "data"]


def dataset_inputs(cfg: dict[str, Any], dataset: str) -> dict[str, str]:
    """Rule inputs of a job on ``dataset`` (``all``: every configured dataset): the data
    stage's tables and split files, keyed ``<dataset>_<what>``."""
    if dataset == "all":
        out: dict[str, str] = {}
        for ds in cfg.get("datasets") or {}:
            out.update(dataset_inputs(cfg, ds))
        return out
    if dataset == "heart":
        return {"heart_features": "results/data/heart/features.parquet",
                "heart_obs": "results/data/heart/obs.tsv"}  # fmt: skip
    if dataset == "mds":
        out = {"mds_features": "results/data/mds/features.parquet",
               "mds_obs": "results/data/mds/obs.tsv"}  # fmt: skip
        for name in data_splits_used(cfg, dataset):
            out[f"mds_split_{name}"] = f"results/data/mds/splits/{name}.tsv"
        return out
    return {}


def check(config: dict[str, Any]) -> None:
    """Config checks the schema cannot make (raises ConfigError)."""
    from fedclust.errors import ConfigError

    cfg = config.get("boosting", {})
    if fanout(cfg) not in FANOUTS:
        raise ConfigError(f"unknown fanout {fanout(cfg)!r}", where="boosting.fanout",
                          fix=f"one of {FANOUTS}")  # fmt: skip
    data_splits = (config.get("data") or {}).get("splits") or {}
    for ds in cfg.get("datasets") or {}:
        for name in data_splits_used(cfg, ds):
            spec = data_splits.get(name)
            if spec is None or ds not in spec.get("datasets", []):
                raise ConfigError(
                    f"boosting dataset {ds} uses data split '{name}', which is not a data.splits "
                    f"entry for {ds}",
                    where=f"boosting.datasets.{ds}.splits",
                    fix=f"add `{name}: {{kind: equal, n_centers: 8, datasets: [{ds}]}}` to "
                    "data.splits, or use a split drawn by the stage (kind equal / dirichlet)",
                )
    for s in scheme_ids(cfg):
        base = s if not _VOTE.match(s) else "vote"
        if base not in ("pooled", "pooled_raw", "histogram", "histogram_nofloor", "vote",
                        "isolated", "bagging", "cyclic"):  # fmt: skip
            raise ConfigError(f"unknown boosting scheme {s!r}", where="boosting.schemes",
                              fix="pooled, pooled_raw, histogram, histogram_nofloor, vote, "
                              "isolated, bagging, cyclic")  # fmt: skip
