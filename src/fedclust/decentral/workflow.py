"""Parse-time helpers of rules/decentral.smk: the (split, mode) runs of the ``decentral``
section, the approaches each mode trains, the fan-out units (issue 14) and the centralized
grid-search cells."""

from __future__ import annotations

from typing import Any

#: the approaches with a server (the others are peer-to-peer)
SERVER = ("FL", "FL_SMA")


def runs(cfg: dict[str, Any]) -> list[str]:
    """``split/mode`` of every run, splits outer."""
    return [f"{s}/{m}" for s in cfg.get("splits", []) for m in cfg.get("modes", [])]


def approaches(cfg: dict[str, Any]) -> dict[str, list[str]]:
    """mode -> the approaches it trains. FL has no exchange bug: it runs once, in
    ``as_described`` when that mode is on."""
    modes = cfg.get("modes", [])
    return {
        m: [
            a
            for a in cfg.get("approaches", [])
            if a not in SERVER or m == "as_described" or "as_described" not in modes
        ]
        for m in modes
    }


def units(cfg: dict[str, Any]) -> dict[str, list[str]]:
    """run -> its ``decentral_train`` units. ``fanout: mode``: one unit ``all`` per split × mode
    (its approaches trained in lockstep groups when vectorise is on); ``approach``: one unit per
    approach. Every copy has its own random streams (:func:`fedclust.decentral.simulate.
    copy_seed`), so a unit's numbers do not depend on the grouping; decentral_merge
    concatenates the units."""
    per_mode = approaches(cfg)
    by_approach = cfg.get("fanout", "mode") == "approach"
    return {r: per_mode[r.split("/")[1]] if by_approach else ["all"] for r in runs(cfg)}


def unit_runs(cfg: dict[str, Any]) -> list[str]:
    """``split/mode/units/<unit>`` of every unit."""
    return [f"{r}/units/{u}" for r, us in units(cfg).items() for u in us]


def centralized_cells(cfg: dict[str, Any]) -> list[str]:
    """Grid search on: one job per (batch size, epochs) cell, batch sizes outer (the table's
    order); off: none."""
    c = cfg.get("centralized", {})
    if not c.get("grid_search"):
        return []
    return [
        f"results/decentral/centralized/grid/b{b}_e{e}.tsv"
        for b in c.get("batch_sizes", [])
        for e in c.get("epochs", [])
    ]
