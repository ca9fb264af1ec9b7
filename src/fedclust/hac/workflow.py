"""Fan-out of the hac stage (issue 14): one job per (cohort, variant, panel/linkage, seed block).

A *unit* is the smallest independent piece of a cohort's HAC tables: gradual sharing of one
(preprocessing, metric, linkage), simultaneous sharing of one linkage, random projections of one
(preprocessing, metric, estimator) and one block of seeds. A *part* (the ``{part}`` wildcard) is
what one job runs: one unit (``hac.fanout.per_unit: true``) or every unit of a variant
(``"all"``), times one projection seed block (``hac.fanout.seed_block``). Each unit's numbers do
not depend on the grouping (a projection seed is derived from the seed's index, not from a
running stream), and :func:`merge_gradual` / :func:`merge_projection` / … put the parts' rows
back into the order of the all-in-one tables, so the report reads the same tables as before.

This module is imported by ``rules/hac.smk`` at parse time: the listing functions use only the
standard library and :mod:`fedclust.hac.pooled`'s constants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .nmin import nmin_grid


def check_config(config: dict[str, Any], where: str = "config") -> None:
    """Config-time checks of the hac stage (:func:`fedclust.config.check_references`): the
    gradual n_min grid of every simulated cohort (its size is in the config) is not empty."""
    hac, rnaseq = config.get("hac", {}), config.get("data", {}).get("rnaseq", {})
    if not hac.get("enabled", False) or rnaseq.get("source") != "simulated":
        return
    g = hac.get("gradual", {})
    over = rnaseq.get("simulate_cohorts") or {}
    for cohort in hac.get("cohorts") or rnaseq.get("cohorts") or []:
        sim = {**rnaseq.get("simulate", {}), **over.get(cohort, {})}
        if "n_samples" in sim and g.get("n_min"):
            nmin_grid(int(sim["n_samples"]), g["n_min"], float(g.get("fraction", 0.1)), cohort)


VARIANTS = ("gradual", "simultaneous", "projection")
ALL = "all"
GRADUAL_METRICS = ("euclidean", "cityblock", "cosine", "correlation")
PROJECTION_METRICS = ("euclidean", "cityblock", "cosine")
PREPS = ("sf", "vst")
EUCLIDEAN_ONLY = ("centroid", "ward")  # = fedclust.hac.pooled.EUCLIDEAN_ONLY (tested)


@dataclass(frozen=True)
class Unit:
    """One independent piece of a cohort's tables (``linkage`` / ``estimator`` / ``seeds`` only
    where the variant has them)."""

    variant: str
    prep: str
    metric: str
    linkage: str | None = None
    estimator: str | None = None
    seeds: tuple[int, int] | None = None  # [start, stop) of the projection seed indices

    @property
    def name(self) -> str:
        return _UNIT_NAMES[self.variant](self)


_UNIT_NAMES: dict[str, Callable[[Unit], str]] = {
    "simultaneous": lambda u: str(u.linkage),
    "gradual": lambda u: f"{u.prep}-{u.metric}-{u.linkage}",
    "projection": lambda u: f"{u.prep}-{u.metric}-{u.estimator}",
}


def _panels(panels: list, metrics: tuple[str, ...], where: str) -> list[tuple[str, str]]:
    out = []
    for entry in panels:
        if len(entry) != 2 or entry[0] not in PREPS or entry[1] not in metrics:
            raise ConfigError(
                f"bad panel {entry!r}: expected [preprocessing, metric]",
                where=where,
                fix=f"preprocessing one of {PREPS}, metric one of {metrics}",
            )
        out.append((str(entry[0]), str(entry[1])))
    return out


def linkages_for(linkages: list[str], metric: str) -> list[str]:
    """The configured linkages that are defined for ``metric`` (centroid/Ward: Euclidean only)."""
    return [m for m in linkages if metric == "euclidean" or m not in EUCLIDEAN_ONLY]


def fanout(cfg: dict[str, Any]) -> tuple[bool, int | None]:
    """``(per_unit, seed_block)`` of ``hac.fanout`` (defaults: grouped, one seed block)."""
    f = cfg["fanout"]
    block = f["seed_block"]
    if block is not None and int(block) < 1:
        raise ConfigError(
            f"hac.fanout.seed_block = {block} must be ≥ 1 or null",
            where="config hac.fanout.seed_block",
        )
    return bool(f["per_unit"]), None if block is None else int(block)


def seed_blocks(n_seeds: int, block: int | None) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges covering ``range(n_seeds)`` in blocks of ``block`` (None = one)."""
    size = n_seeds if block is None else max(1, int(block))
    return [(a, min(a + size, n_seeds)) for a in range(0, max(n_seeds, 1), max(size, 1))]


def _gradual_units(cfg: dict[str, Any]) -> list[Unit]:
    panels = _panels(cfg["gradual"]["panels"], GRADUAL_METRICS, "hac.gradual.panels")
    links = list(cfg["linkages"])
    return [Unit("gradual", p, m, link) for p, m in panels for link in linkages_for(links, m)]


def _simultaneous_units(cfg: dict[str, Any]) -> list[Unit]:
    prep = cfg["simultaneous"]["preprocessing"]
    return [Unit("simultaneous", prep, "euclidean", link) for link in cfg["linkages"]]


def _projection_units(cfg: dict[str, Any]) -> list[Unit]:
    p = cfg["projection"]
    panels = _panels(p["panels"], PROJECTION_METRICS, "hac.projection.panels")
    _, block = fanout(cfg)
    out = []
    for prep, metric in panels:
        ests = [p["estimator"]]
        if metric == "cityblock" and p["compare_median"] and p["estimator"] != "median":
            ests.append("median")
        for est in ests:
            for seeds in seed_blocks(int(p["seeds"]), block):
                out.append(Unit("projection", prep, metric, None, est, seeds))
    return out


#: variant -> its units in the order of the all-in-one tables
_UNITS: dict[str, Callable[[dict[str, Any]], list[Unit]]] = {
    "gradual": _gradual_units,
    "simultaneous": _simultaneous_units,
    "projection": _projection_units,
}


def units(cfg: dict[str, Any], variant: str) -> list[Unit]:
    """Every unit of ``variant`` in the order of the all-in-one tables."""
    if variant not in _UNITS:
        raise ValueError(f"unknown hac variant {variant!r}: use one of {VARIANTS}")
    return _UNITS[variant](cfg)


def _block_index(cfg: dict[str, Any], seeds: tuple[int, int]) -> int:
    _, block = fanout(cfg)
    return seeds[0] // (int(cfg["projection"]["seeds"]) if block is None else block)


def part_of(cfg: dict[str, Any], unit: Unit) -> str:
    """The ``{part}`` wildcard of the job that runs ``unit``."""
    per_unit, _ = fanout(cfg)
    head = unit.name if per_unit else ALL
    if unit.variant != "projection":
        return head
    return f"{head}-b{_block_index(cfg, unit.seeds)}"


def parts(cfg: dict[str, Any], variant: str) -> list[str]:
    """The jobs' ``{part}`` values of ``variant`` (ordered, unique)."""
    return list(dict.fromkeys(part_of(cfg, u) for u in units(cfg, variant)))


def units_of_part(cfg: dict[str, Any], variant: str, part: str) -> list[Unit]:
    """The units one job runs, in table order; a clear error for a part the config does not
    define (a stale path or a typo on the command line)."""
    chosen = [u for u in units(cfg, variant) if part_of(cfg, u) == part]
    if not chosen:
        raise ConfigError(
            f"hac {variant} part {part!r} is not defined by the config",
            where="hac.fanout / hac." + variant,
            fix=f"use one of {parts(cfg, variant)}",
        )
    return chosen


def part_paths(cfg: dict[str, Any], variant: str, cohort: str, what: str, ext: str) -> list[str]:
    """Paths of the per-part tables of one cohort (``what``: table, cuts or bench)."""
    root = "results/benchmarks/hac" if what == "bench" else "results/hac"
    suffix = "" if what in ("table", "bench") else f"_{what}"
    return [f"{root}/{cohort}/parts/{variant}/{p}{suffix}.{ext}" for p in parts(cfg, variant)]


def part_inputs(cfg: dict[str, Any], variant: str, what: str = "table", ext: str = "parquet"):
    """An input function of ``hac_merge``: the per-part tables of ``wildcards.cohort``."""
    return lambda wc: part_paths(cfg, variant, wc.cohort, what, ext)


# ---- release logs: the chain of jobs that release sums of one cohort's matrices (issue 22) -----
RELEASING = ("gradual", "simultaneous")


def release_chain(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """(variant, part) of every job that publishes centroid sums of a cohort's matrices, in the
    order their releases are logged: gradual parts, then simultaneous parts."""
    return [(v, p) for v in RELEASING for p in parts(cfg, v)]


def part_preps(cfg: dict[str, Any], variant: str, part: str) -> set[str]:
    return {u.prep for u in units_of_part(cfg, variant, part)}


def log_path(cohort: str, variant: str, part: str) -> str:
    """The release log a job writes (the centres' released sets after its runs)."""
    return f"results/hac/{cohort}/release_log/{variant}_{part}.json"


def previous_logs(cfg: dict[str, Any], variant: str, part: str, cohort: str) -> list[str]:
    """The logs a job starts from: for each matrix (preprocessing) it releases sums of, the log
    of the latest earlier job of the chain on that matrix (latest first). Jobs on the same matrix
    therefore run one after another; jobs on different matrices stay parallel."""
    if not cfg.get("release_log", True):
        return []
    chain = release_chain(cfg)
    need = part_preps(cfg, variant, part)
    out = []
    for v, p in reversed(chain[: chain.index((variant, part))]):
        got = part_preps(cfg, v, p) & need
        if got:
            out.append(log_path(cohort, v, p))
            need -= got
        if not need:
            break
    return out


def log_inputs(cfg: dict[str, Any], variant: str):
    """An input function of ``hac_gradual`` / ``hac_simultaneous``: :func:`previous_logs`."""
    return lambda wc: previous_logs(cfg, variant, wc.part, wc.cohort)


def read_logs(paths: list[str], preps: set[str]):
    """The centres' logs per matrix from :func:`previous_logs`' files (latest first)."""
    from ..privacy.release_log import from_json

    logs: dict = {}
    for path in paths:
        for prep, c in from_json(path).items():
            if prep in preps and prep not in logs:
                logs[prep] = c
    return logs


def release_floor(policies) -> int:
    """The floor a release log checks: the largest of the centres' nfilter_subset."""
    return max((int(p.nfilter_subset) for p in policies), default=3)


# ---- running units (imports the numerical code lazily: not at workflow parse time) ------------


def _logs_of(logs: dict | None, prep: str, centers):
    """The per-centre release logs of matrix ``prep`` (created on first use), or None."""
    if logs is None:
        return None
    import numpy as np

    from ..privacy.release_log import logs_for
    from .boundary import policy_of

    sizes = np.bincount(np.unique(centers, return_inverse=True)[1])
    pols = [policy_of(None, f"center{k}", k) for k in range(len(sizes))]
    return logs_for(logs, prep, sizes, release_floor(pols))


def run_gradual(data: dict, centers, cfg: dict[str, Any], unit: Unit, cohort: str,
                logs: dict | None = None, transport=None):  # fmt: skip
    """Gradual sharing of one (prep, metric, linkage): (table with timing columns, cuts).
    ``logs``: the centres' release logs by matrix (updated in place); ``transport``: what
    carries the messages (default in-process; the rule script's
    :func:`fedclust.transports.from_config`)."""
    import pandas as pd

    from ..federation import INPROCESS
    from . import experiments as ex

    g = cfg["gradual"]
    n = len(centers)
    cut_rows: list[dict] = []
    t = ex.gradual_table(
        data[unit.prep], centers, [unit.linkage], unit.metric,
        nmin_grid(n, g["n_min"], g["fraction"], cohort), int(cfg["k_max"]), g["d_min"],
        tuple(g["average_delta"]), cut_rows,
        logs=_logs_of(logs if cfg.get("release_log", True) else None, unit.prep, centers),
        transport=INPROCESS if transport is None else transport,
    )  # fmt: skip
    ran = t.loc[~t.skipped, "n_min"]
    t = t.assign(cohort=cohort, prep=unit.prep, n=n, n_min_top=ran.max())
    cuts = pd.DataFrame(cut_rows).assign(method="gradual", prep=unit.prep)
    return t, cuts


def run_simultaneous(data: dict, centers, cfg: dict[str, Any], unit: Unit, cohort: str,
                     logs: dict | None = None, seed: int = 0, transport=None):  # fmt: skip
    """Simultaneous sharing of one linkage: (table, cuts). ``logs``: release logs by matrix;
    ``transport``: what carries the messages (default in-process; the rule script's
    :func:`fedclust.transports.from_config`)."""
    import pandas as pd

    from ..federation import INPROCESS
    from . import experiments as ex

    s = cfg["simultaneous"]
    cut_rows: list[dict] = []
    t = ex.simultaneous_table(
        data[unit.prep], centers, [unit.linkage], "euclidean", s["n_min"], int(cfg["k_max"]),
        cut_rows, seed=seed, transport=INPROCESS if transport is None else transport,
        logs=_logs_of(logs if cfg.get("release_log", True) else None, unit.prep, centers),
    )  # fmt: skip
    t = t.assign(cohort=cohort, prep=unit.prep)
    cuts = pd.DataFrame(cut_rows).assign(method="simultaneous", prep=unit.prep)
    return t, cuts


def run_projection(data: dict, centers, cfg: dict[str, Any], unit: Unit, cohort: str, seed: int,
                   transport=None):  # fmt: skip
    """Random projections of one (prep, metric, estimator) and seed block (with timings);
    ``transport``: what carries the sketches (default in-process)."""
    from ..federation import INPROCESS
    from . import experiments as ex

    p = cfg["projection"]
    t = ex.projection_table(
        data[unit.prep], centers, list(cfg["linkages"]), unit.metric, p["sketch_sizes"],
        range(*unit.seeds), seed, int(cfg["k_max"]), unit.estimator,
        kind=p["kind"], density=p["density"],
        dtype=p["dtype"], threads=int(p["threads"]),
        transport=INPROCESS if transport is None else transport,
    )  # fmt: skip
    return t.assign(cohort=cohort, prep=unit.prep)


# ---- merging parts into the all-in-one tables --------------------------------------------------


def _concat(tables: list):
    import pandas as pd

    return pd.concat(tables, ignore_index=True)


def merge_rows(tables: list):
    """Gradual / simultaneous tables and cuts: units are contiguous blocks of the all-in-one
    table, so the parts (in :func:`parts` order) are simply concatenated."""
    return _concat(tables)


def merge_cuts(gradual: list, simultaneous: list, cohort: str):
    """``cuts.tsv``: the gradual panels' cut rows, then simultaneous, then the cohort column."""
    return _concat([*gradual, *simultaneous]).assign(cohort=cohort)


def merge_projection(tables: list, cfg: dict[str, Any]):
    """Projection parts → the all-in-one order: per (prep, metric, estimator) unit group, sketch
    size (config order), then seed index, then linkage (stable within a part)."""
    import numpy as np

    t = _concat(tables)
    group = t["prep"] + "|" + t["metric"] + "|" + t["estimator"].astype(str)
    first = {g: i for i, g in enumerate(dict.fromkeys(group))}
    sketch = {int(k): i for i, k in enumerate(cfg["projection"]["sketch_sizes"])}
    key = np.lexsort(
        (t["run"].to_numpy(), t["sketch"].map(sketch).to_numpy(), group.map(first).to_numpy())
    )
    return t.iloc[key].reset_index(drop=True)
