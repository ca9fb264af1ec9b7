"""Input functions of rules/dec.smk (file lists from the config and a job's wildcards), kept in
the library so the rule file holds only rules (snakemake --lint) and tests can call them."""

from __future__ import annotations

from typing import Any

from .units import (
    central_level,
    central_units,
    federated_level,
    federated_units,
    unit_needs_tsae,
)

CENTRAL = "results/dec/{dataset}/centralized"
FEDERATED = "results/dec/{dataset}/federated/{split}"


def central_unit_ids(cfg: dict) -> list[str]:
    return list(central_units(cfg)) if cfg else []


def federated_unit_ids(cfg: dict) -> list[str]:
    return list(federated_units(cfg)) if cfg else []


def unit_tsae(cfg: dict, w: Any) -> list[str]:
    """Per-configuration units read their optimizer's TSAE (rule dec_tsae); coarser units
    train it themselves."""
    if not unit_needs_tsae(central_level(cfg)):
        return []
    opts = dict.fromkeys(c[0] for c in central_units(cfg)[w.unit])
    return [f"{CENTRAL.format(dataset=w.dataset)}/tsae/{o}.pt" for o in opts]


def merge_tsae(cfg: dict, w: Any) -> list[str]:
    """The TSAE files whose curves the merge reports (per-configuration level only)."""
    if not unit_needs_tsae(central_level(cfg)):
        return []
    return [f"{CENTRAL.format(dataset=w.dataset)}/tsae/{o}.pt" for o in cfg["grid"]["optimizers"]]


def fed_unit_tsae(cfg: dict, w: Any) -> list[str]:
    """Per-aggregation units read their strategy's TSAE state (rule dec_fed_tsae)."""
    if not unit_needs_tsae(federated_level(cfg)):
        return []
    strategies = dict.fromkeys(r[0] for r in federated_units(cfg)[w.unit])
    base = FEDERATED.format(dataset=w.dataset, split=w.split)
    return [f"{base}/tsae/{s}.pt" for s in strategies]


def central_unit_files(cfg: dict, w: Any, name: str) -> list[str]:
    base = CENTRAL.format(dataset=w.dataset)
    return [f"{base}/units/{u}/{name}" for u in central_unit_ids(cfg)]


def federated_unit_files(cfg: dict, w: Any, name: str) -> list[str]:
    base = FEDERATED.format(dataset=w.dataset, split=w.split)
    return [f"{base}/units/{u}/{name}" for u in federated_unit_ids(cfg)]
