"""Parse-time helpers of ``rules/dec_d62.smk`` (no heavy imports): the unit list, the fan-out
and the per-unit files. A unit is (Table 7.1 configuration, k, clients), id ``c_k6_n4``."""

from __future__ import annotations

from typing import Any

FILES = ("result.json", "curves.tsv", "labels.tsv", "ledger.tsv")
ROOT = "results/dec/d62"


def on(config: dict[str, Any]) -> bool:
    dec = config.get("dec") or {}
    return bool(dec.get("enabled", False)) and bool((dec.get("d62") or {}).get("enabled", False))


def units(d62: dict[str, Any]) -> list[str]:
    """Every unit id, sorted: the configuration sweep at one client (Figs 7.2–7.4), the client
    sweep of one configuration (Figs 7.5–7.7) and the HDP comparison's (k, clients) (Figs 7.8,
    7.9). Shared units run once."""
    sweep, cl = d62["sweep"], d62["clients"]
    out = {(c, int(k), 1) for c in sweep["configurations"] for k in sweep["k"]}
    out |= {(cl["configuration"], int(k), int(n)) for k in cl["k"] for n in cl["counts"]}
    if hdp_on(d62):
        out |= {(cl["configuration"], int(k), int(n)) for k in d62["hdp"]["k"]
                for n in cl["counts"]}  # fmt: skip
    return [f"{c}_k{k}_n{n}" for c, k, n in sorted(out)]


def fanout(d62: dict[str, Any]) -> str:
    """``unit`` (one job per unit; a cluster) or ``all`` (one job, every unit; small configs)."""
    return str(d62.get("fanout", "unit"))


def unit_path(unit: str, name: str) -> str:
    return f"{ROOT}/units/{unit}/{name}"


def hdp_installed() -> bool:
    """tomotopy (extra ``fedclust[hdp]``) is importable."""
    from importlib.util import find_spec

    return find_spec("tomotopy") is not None


def hdp_on(d62: dict[str, Any]) -> bool:
    """The HDP comparison runs: enabled and tomotopy installed (without it the workflow runs
    on and the report says why the comparison is missing)."""
    return bool((d62.get("hdp") or {}).get("enabled", False)) and hdp_installed()


def hdp_note(d62: dict[str, Any]) -> str:
    """Why the HDP comparison is missing ('' when it runs)."""
    if not (d62.get("hdp") or {}).get("enabled", False):
        return "HDP comparison off in this config (dec.d62.hdp.enabled: false)."
    if not hdp_installed():
        return (
            "HDP comparison NOT RUN: tomotopy is not installed (pip install 'fedclust[hdp]'); "
            "Figs 7.8 and 7.9 are missing."
        )
    return ""
