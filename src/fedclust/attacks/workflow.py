"""Fan-out of the attacks stage (issue 14): one job per (projection, run block).

Units: property inference of one projection condition and one run; known input-output of one
(cohort, preprocessing) and one known set (seed); reconstruction of one run (all its
projections, Figs 4.17–4.19 and the combined attack), plus the Fig 4.18 pseudo-inverse table of
one cohort.
A *part* (the ``{part}`` wildcard) is what one job runs; ``attacks.fanout`` groups units
(``per_projection``, ``run_block``, ``seed_block``). Every seed derives from a unit's own
indices, and the merge functions put rows back into the all-in-one order, so the report reads
the same tables.

Imported by ``rules/attacks.smk`` at parse time: standard library only at module level.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError

ALL = "all"


def _block_key(att: dict[str, Any], key: str) -> int | None:
    block = att["fanout"][key]
    if block is not None and int(block) < 1:
        raise ConfigError(
            f"attacks.fanout.{key} = {block} must be ≥ 1 or null",
            where=f"config attacks.fanout.{key}",
        )
    return None if block is None else int(block)


def fanout(att: dict[str, Any], key: str = "run_block") -> tuple[bool, int | None]:
    """``(per_projection, block)`` of ``attacks.fanout``; ``key``: ``run_block`` (property
    inference, reconstruction) or ``seed_block`` (known input-output). Defaults: grouped, one
    block."""
    per = bool(att["fanout"]["per_projection"])
    return per, _block_key(att, key)


def blocks(n: int, block: int | None) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges covering ``range(n)`` in blocks of ``block`` (None = one)."""
    size = max(1, n if block is None else int(block))
    return [(a, min(a + size, n)) for a in range(0, max(n, 1), size)]


def _block_of(att: dict[str, Any], start: int, n: int, key: str = "run_block") -> str:
    _, block = fanout(att, key)
    return f"b{start // (n if block is None else block)}"


def _parse_block(
    part: str, n: int, att: dict[str, Any], where: str, key: str = "run_block"
) -> tuple[str, range]:
    head, _, b = part.rpartition("-")
    for lo, hi in blocks(n, fanout(att, key)[1]):
        if _block_of(att, lo, n, key) == b:
            return head, range(lo, hi)
    raise ConfigError(f"part {part!r} names no run block of the config", where=where)


# ---- property inference -----------------------------------------------------------------------


def pi_conditions(pi: dict[str, Any]) -> list[dict]:
    """The Fig 4.16 conditions in table order: none, orthogonal, Gaussian k …"""
    conds: list[dict] = [{"kind": "none"}]
    if pi["orthogonal"]:
        conds.append({"kind": "orthogonal"})
    return conds + [{"kind": "gaussian", "k": int(k)} for k in pi["gaussian_k"]]


def condition_slug(cond: dict) -> str:
    """A wildcard-safe name of a condition (``none``, ``orthogonal``, ``gaussian50``)."""
    return cond["kind"] + (str(cond["k"]) if cond["kind"] == "gaussian" else "")


def pi_parts(att: dict[str, Any]) -> list[str]:
    per, _ = fanout(att)
    pi = att["property_inference"]
    heads = [condition_slug(c) for c in pi_conditions(pi)] if per else [ALL]
    n = int(pi["n_runs"])
    return [f"{h}-{_block_of(att, lo, n)}" for h in heads for lo, _ in blocks(n, fanout(att)[1])]


def pi_part(att: dict[str, Any], part: str) -> tuple[list[dict], range]:
    """(conditions, runs) of one property-inference job."""
    pi = att["property_inference"]
    where = f"attack_property_inference {part}"
    head, runs = _parse_block(part, int(pi["n_runs"]), att, where)
    conds = pi_conditions(pi)
    if head != ALL:
        conds = [c for c in conds if condition_slug(c) == head]
    if not conds or part not in pi_parts(att):
        raise ConfigError(
            f"property-inference part {part!r} is not defined by the config",
            where="attacks.fanout / attacks.property_inference",
            fix=f"use one of {pi_parts(att)}",
        )
    return conds, runs


def merge_pi(tables: list, pi: dict[str, Any]):
    """Accuracy parts → the all-in-one order: run, then condition (config order), then the
    classifier order within a condition (stable)."""
    import numpy as np
    import pandas as pd

    from .property_inference import condition_name

    t = pd.concat(tables, ignore_index=True)
    names = [condition_name(c["kind"], c.get("k")) for c in pi_conditions(pi)]
    pos = t["condition"].map({n: i for i, n in enumerate(names)}).to_numpy()
    return t.iloc[np.lexsort((pos, t["run"].to_numpy()))].reset_index(drop=True)


# ---- known input-output -----------------------------------------------------------------------


def known_io_parts(att: dict[str, Any]) -> list[str]:
    per, block = fanout(att, "seed_block")
    kio = att["known_io"]
    heads = list(kio["preprocessings"]) if per else [ALL]
    n = int(kio["n_seeds"])
    return [
        f"{h}-{_block_of(att, lo, n, 'seed_block')}" for h in heads for lo, _ in blocks(n, block)
    ]


def known_io_part(att: dict[str, Any], part: str) -> tuple[list[str], range]:
    """(preprocessings, seed indices) of one known input-output job."""
    kio = att["known_io"]
    where = f"attack_known_io {part}"
    head, seeds = _parse_block(part, int(kio["n_seeds"]), att, where, "seed_block")
    preps = list(kio["preprocessings"]) if head == ALL else [head]
    if part not in known_io_parts(att):
        raise ConfigError(
            f"known input-output part {part!r} is not defined by the config",
            where="attacks.fanout / attacks.known_io",
            fix=f"use one of {known_io_parts(att)}",
        )
    return preps, seeds


def merge_known_io(tables: list, kio: dict[str, Any]):
    """Known input-output parts of one cohort → preprocessing, fraction (config order), run."""
    import numpy as np
    import pandas as pd

    t = pd.concat(tables, ignore_index=True)
    prep = t["preprocessing"].map({p: i for i, p in enumerate(kio["preprocessings"])})
    frac = t["fraction"].map({float(f): i for i, f in enumerate(kio["fractions"])})
    key = np.lexsort((t["run"].to_numpy(), frac.to_numpy(), prep.to_numpy()))
    return t.iloc[key].reset_index(drop=True)


# ---- reconstruction ---------------------------------------------------------------------------


def reconstruction_parts(att: dict[str, Any]) -> list[str]:
    """One part per run block (``b0`` …); the Fig 4.18 (left) pseudo-inverse table is one job
    per cohort (``attack_reconstruction_pinv``, :func:`merge_pinv`)."""
    n = int(att["reconstruction"]["n_runs"])
    return [_block_of(att, lo, n) for lo, _ in blocks(n, fanout(att)[1])]


def merge_pinv(tables: dict):
    """Per-cohort pseudo-inverse tables → the all-in-one table (cohorts in sorted order, as
    ``groupby`` lists them)."""
    import pandas as pd

    return pd.concat([tables[c] for c in sorted(tables)], ignore_index=True)


def reconstruction_part(att: dict[str, Any], part: str) -> range:
    """The runs of a reconstruction job."""
    n = int(att["reconstruction"]["n_runs"])
    for lo, hi in blocks(n, fanout(att)[1]):
        if _block_of(att, lo, n) == part:
            return range(lo, hi)
    raise ConfigError(
        f"reconstruction part {part!r} is not defined by the config",
        where="attacks.fanout / attacks.reconstruction",
        fix=f"use one of {reconstruction_parts(att)}",
    )


def merge_reconstruction(errors: list, combined: list):
    """Run parts → the all-in-one ``errors`` (Figs 4.17/4.18 rows of every run, then Fig 4.19
    rows of every run) and ``combined`` (by run), and the Fig 4.19 tests."""
    import numpy as np
    import pandas as pd

    from .reconstruction import reconstruction_tests

    e = pd.concat(errors, ignore_index=True)
    key = np.lexsort((e["run"].to_numpy(), (e["experiment"] == "fig4_19").to_numpy()))
    e = e.iloc[key].reset_index(drop=True)
    c = pd.concat(combined, ignore_index=True)
    if len(c):
        c = c.iloc[np.argsort(c["run"].to_numpy(), kind="stable")].reset_index(drop=True)
    return e, c, reconstruction_tests(e)
