"""The DEC stage cut into independent units (issue 14): one TSAE per (dataset, optimizer), one
DEC run per (dataset, optimizer, α, scaler); one federated TSAE per (dataset, split, strategy),
one federated DEC per (dataset, split, strategy, centroid aggregation). Merges
(:mod:`fedclust.dec.merge`) rebuild the tables the all-in-one runs (:mod:`fedclust.dec.pipeline`)
write, row for row.

``dec.fanout`` picks the job granularity (the default config keeps one job per dataset / split;
the thesis config one per configuration). A unit's numbers depend only on its identity and the
config: every seed is derived from the unit's labels. The one exception is kept on purpose so
the tables do not change: a federated client's minibatch generator lives across the DEC runs of
one strategy, in the config's aggregation order (the all-in-one loop); a per-aggregation unit
restores the generator after the TSAE stage and advances it by exactly the draws of the
aggregations before it (:func:`skip_dec_draws`).
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from fedclust.errors import ConfigError

CENTRAL_LEVELS = ("dataset", "optimizer", "configuration")
FEDERATED_LEVELS = ("split", "strategy", "aggregation")
SEP = "__"


# ------------------------------------------------------------------ unit enumeration
def central_configs(cfg: dict) -> list[tuple[str, float, str]]:
    """(optimizer, α, scaler) in the all-in-one loop order (optimizer, then α, then scaler).
    α stays as the config spells it (1, not 1.0): the unit's seeds are derived from it."""
    g = cfg["grid"]
    return [(o, a, s) for o in g["optimizers"] for a in g["alphas"] for s in g["scalers"]]


def config_id(opt: str, alpha: float, scaler: str) -> str:
    return f"{opt}{SEP}a{alpha:g}{SEP}{scaler}"


def central_level(cfg: dict) -> str:
    level = cfg["fanout"]["centralized"]
    if level not in CENTRAL_LEVELS:
        raise ConfigError(f"unknown level {level!r}", where="dec.fanout.centralized",
                          fix=f"one of {CENTRAL_LEVELS}")  # fmt: skip
    return level


def federated_level(cfg: dict) -> str:
    level = cfg["fanout"]["federated"]
    if level not in FEDERATED_LEVELS:
        raise ConfigError(f"unknown level {level!r}", where="dec.fanout.federated",
                          fix=f"one of {FEDERATED_LEVELS}")  # fmt: skip
    return level


def central_units(cfg: dict) -> dict[str, list[tuple[str, float, str]]]:
    """unit id → its configurations in loop order (``all``, ``<opt>``, ``<opt>__a<α>__<s>``)."""
    level, configs = central_level(cfg), central_configs(cfg)
    if level == "dataset":
        return {"all": configs}
    if level == "optimizer":
        return {o: [c for c in configs if c[0] == o] for o in cfg["grid"]["optimizers"]}
    return {config_id(*c): [c] for c in configs}


def federated_units(cfg: dict) -> dict[str, list[tuple[str, str]]]:
    """unit id → its (strategy, aggregation) runs in loop order (``all``, ``<s>``, ``<s>__<m>``)."""
    f = cfg["federated"]
    runs = [(s, m) for s in f["strategies"] for m in f["centroid_aggregation"]]
    level = federated_level(cfg)
    if level == "split":
        return {"all": runs}
    if level == "strategy":
        return {s: [r for r in runs if r[0] == s] for s in f["strategies"]}
    return {f"{s}{SEP}{m}": [(s, m)] for s, m in runs}


def unit_needs_tsae(level: str) -> bool:
    """Per-configuration units read a TSAE trained by its own job; coarser units train it."""
    return level in ("configuration", "aggregation")


# ------------------------------------------------------------------ settings fed forward
def apply_settings(cfg: dict, dataset: str, settings: dict | None) -> dict:
    """``cfg`` with ``settings`` (a selection rule's output: per-dataset keys such as
    ``autoencoder_lr``, ``clustering_lr``, ``clustering_batch_size``) laid over
    ``dec.datasets.<dataset>``; per-optimizer dicts are merged key by key. ``model`` (the batch
    grid's activations, Table A.4) is laid over ``dec.model``: a job reads one dataset, so its
    copy of the model section is that dataset's."""
    if not settings:
        return cfg
    out = copy.deepcopy(cfg)
    ds = out["datasets"].setdefault(dataset, {})
    for key, value in settings.items():
        if key == "model":
            out["model"] = {**out["model"], **value}
        elif isinstance(value, dict) and isinstance(ds.get(key), dict):
            ds[key] = {**ds[key], **value}
        else:
            ds[key] = value
    return out


# ------------------------------------------------------------------ federated generator replay
def skip_dec_draws(gen: torch.Generator, n: int, draws: int, shuffle: bool) -> None:
    """Advance a client's minibatch generator by ``draws`` epochs' permutations of ``n`` samples
    (:func:`fedclust.dec.train.batches` draws one ``randperm(n)`` per epoch when shuffling)."""
    if shuffle:
        for _ in range(draws):
            torch.randperm(n, generator=gen)


def read_settings(inp: Any) -> dict | None:
    """The selected-settings file among a rule's inputs (``settings``: none or one file)."""
    from fedclust.io import read_json

    files = inp.get("settings", []) if hasattr(inp, "get") else []
    files = [files] if isinstance(files, str) else list(files or [])
    return read_json(files[0]) if files else None
