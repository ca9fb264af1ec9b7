"""Experiment settings of FedCRef (seed 002 §5.4) from config: plain config logic, no torch.

``rules/fedcref.smk`` calls :func:`settings` (via :mod:`.workflow`) when Snakemake parses the
workflow; it lived in :mod:`.experiments`, whose torch import cost every parse ~1.5 CPU-s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fedclust.errors import ConfigError

EXPERIMENTS = ("exp1", "exp2", "exp3", "exp4")
#: The dirtiness a DEC initial clustering is calibrated at (§3.5: DEC "around 0.2").
DEC_DIRTINESS = 0.2


def level_of(setting: dict, cfg: dict) -> float:
    """The initial dirtiness a setting's θ is calibrated at: its dirtiness; a DEC start at
    ``calibration.dec_dirtiness``."""
    if setting.get("init") == "dec":
        return float(cfg.get("calibration", {}).get("dec_dirtiness", DEC_DIRTINESS))
    return float(setting.get("dirtiness", 0.0))


def _tag(v: float) -> str:
    return f"{int(round(float(v) * 100)):03d}"


def _sweep(
    e: dict, key: str, tag: Callable[[Any], str], cast: Callable[[Any], Any]
) -> dict[str, dict[str, Any]]:
    """One dataset at one dirtiness, ``key`` swept over ``e[key]`` (exp3: overlap, exp4:
    n_clients); setting names ``<dataset>_<tag(value)>``."""
    return {
        f"{e['dataset']}_{tag(v)}": {
            "dataset": e["dataset"],
            "init": "dirty_uniform",
            "dirtiness": float(e["dirtiness"]),
            key: cast(v),
        }
        for v in e[key]
    }


def settings(cfg: dict) -> dict[str, dict[str, dict[str, Any]]]:
    """{experiment: {setting name: overrides}} from ``fedcref.experiments``.

    exp1: DEC initial clustering per dataset; exp2: dataset × dirtiness; exp3: overlap;
    exp4: number of clients. Overrides: dataset, init, dirtiness, overlap, n_clients.
    """
    ex = cfg.get("experiments", {})
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if "exp1" in ex:
        e = ex["exp1"]
        out["exp1"] = {
            f"{d}_dec": {"dataset": d, "init": "dec", "dirtiness": 0.0, "cross_method": True}
            for d in e["datasets"]
        }
    if "exp2" in ex:
        e = ex["exp2"]
        out["exp2"] = {
            f"{d}_d{_tag(t)}": {"dataset": d, "init": "dirty_uniform", "dirtiness": float(t)}
            for d in e["datasets"]
            for t in e["dirtiness"]
        }
    if "exp3" in ex:
        out["exp3"] = _sweep(ex["exp3"], "overlap", lambda o: f"o{_tag(o)}", float)
    if "exp4" in ex:
        out["exp4"] = _sweep(ex["exp4"], "n_clients", lambda n: f"n{int(n):03d}", int)
    size = cfg.get("size_study") or {}
    if size.get("enabled") and size.get("dataset") not in cfg["datasets"]:
        raise ConfigError(
            f"size_study uses dataset {size.get('dataset')!r}, not in fedcref.datasets",
            where="fedcref.size_study.dataset",
            fix=f"use one of {sorted(cfg['datasets'])}",
        )
    for exp, s in out.items():
        for name, o in s.items():
            if "variants" in ex[exp]:
                o["variants"] = list(ex[exp]["variants"])
            if o["dataset"] not in cfg["datasets"]:
                raise ConfigError(
                    f"{exp} setting {name} uses dataset {o['dataset']!r}, not in fedcref.datasets",
                    where=f"fedcref.experiments.{exp}",
                    fix=f"use one of {sorted(cfg['datasets'])}",
                )
    return out
