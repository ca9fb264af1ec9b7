"""The DEC stage cut into independent units (issue 14): one TSAE per (dataset, optimizer), one
DEC run per (dataset, optimizer, α, scaler); one federated TSAE per (dataset, split, strategy),
one federated DEC per (dataset, split, strategy, centroid aggregation). Merges rebuild the tables
the all-in-one runs (:mod:`fedclust.dec.pipeline`) write, row for row.

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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
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
    level = (cfg.get("fanout") or {}).get("centralized", "dataset")
    if level not in CENTRAL_LEVELS:
        raise ConfigError(f"unknown level {level!r}", where="dec.fanout.centralized",
                          fix=f"one of {CENTRAL_LEVELS}")  # fmt: skip
    return level


def federated_level(cfg: dict) -> str:
    level = (cfg.get("fanout") or {}).get("federated", "split")
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


@dataclass
class UnitOutput:
    """What one unit hands to its merge (tables in loop order)."""

    table: pd.DataFrame
    curves: pd.DataFrame
    extra: dict[str, Any] = field(default_factory=dict)


def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if f is not None and len(f.columns)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def save_pt(path: str, obj: Any) -> None:
    """``torch.save`` through :func:`fedclust.io.atomic_path` (TSAE / model hand-over files)."""
    from fedclust.io import atomic_path

    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def load_pt(path: str) -> Any:
    """A hand-over file written by :func:`save_pt` (our own files: full unpickling)."""
    return torch.load(path, map_location="cpu", weights_only=False)


# ------------------------------------------------------------------ centralized hand-over
def tsae_record(tsae: torch.nn.Module, curve: list[float]) -> dict[str, Any]:
    return {"state": {k: v.detach().cpu() for k, v in tsae.state_dict().items()},
            "curve": list(curve)}  # fmt: skip


def load_tsae(record: dict[str, Any], cfg: dict, n_features: int) -> tuple[torch.nn.Module, list]:
    from .pipeline import make_tsae

    tsae = make_tsae(cfg, n_features)
    tsae.load_state_dict(record["state"])
    return tsae, list(record["curve"])


def best_record(res: Any) -> dict[str, Any]:
    """The unit's best model (key + state) for the merge's figures and labels."""
    model = res.best["model"]
    return {"key": tuple(res.best["key"]), "alpha": float(model.alpha),
            "state": {k: v.detach().cpu() for k, v in model.state_dict().items()}}  # fmt: skip


def merge_central(
    units: list[dict[str, pd.DataFrame]],
    tsae_records: dict[str, dict[str, Any]],
    bests: list[dict[str, Any]],
    x: np.ndarray,
    cfg: dict,
    dataset: str,
) -> Any:
    """The all-in-one :class:`~fedclust.dec.pipeline.CentralizedResult` from unit outputs in loop
    order (``units``: ``table``, ``ae_curves``, ``dec_curves``; TSAE curves of per-configuration
    units from ``tsae_records``; ``bests``: each unit's best model)."""
    from .model import DECModel
    from .pipeline import CentralizedResult, embed, make_tsae, predict, sort_results

    table = sort_results(concat([u["table"] for u in units]), cfg["datasets"][dataset]["selection"])
    ae = concat([u["ae_curves"] for u in units] + [
        pd.DataFrame({"optimizer": o, "epoch": np.arange(1, len(r["curve"]) + 1),
                      "loss": r["curve"]}) for o, r in tsae_records.items()
    ])  # fmt: skip
    order = {o: i for i, o in enumerate(cfg["grid"]["optimizers"])}
    ae = ae.sort_values("optimizer", key=lambda s: s.map(order), kind="mergesort")
    key = tuple(table.iloc[0][["optimizer", "alpha", "scaler"]])
    rec = next(b for b in bests if tuple(b["key"]) == key)
    model = DECModel(make_tsae(cfg, x.shape[1]), int(cfg["datasets"][dataset]["k"]), rec["alpha"])
    model.load_state_dict(rec["state"])
    xt = torch.as_tensor(x)
    best = {"key": key, "model": model, "labels": predict(model, xt),
            "features": embed(model.tsae, xt)}  # fmt: skip
    return CentralizedResult(table, ae.reset_index(drop=True),
                             concat([u["dec_curves"] for u in units]), best)  # fmt: skip


def read_settings(inp: Any) -> dict | None:
    """The selected-settings file among a rule's inputs (``settings``: none or one file)."""
    from fedclust.io import read_json

    files = inp.get("settings", []) if hasattr(inp, "get") else []
    files = [files] if isinstance(files, str) else list(files or [])
    return read_json(files[0]) if files else None
