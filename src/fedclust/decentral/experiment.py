"""One unit of the heart experiment (seed 004): the approaches of a (split, mode), all rounds.

:func:`run_approach` runs one approach with one model object (FL / FL_SMA through
:mod:`.server` over the transport, peer-to-peer approaches in :func:`.simulate.run_peer_approach`);
:func:`run_unit` runs a unit's approaches — in-process, the approaches that share a batch schedule
train in lockstep (:func:`.simulate.run_group`, ``decentral.vectorise``); on another transport
FL / FL_SMA go through it one model each (the numbers of ``vectorise: false``), the peers stay
in-process (no server to carry their messages) — and returns the run files' tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fedclust.federation import INPROCESS, Ledger, Transport

from .clients import ClientData
from .server import run_server_approach
from .simulate import SERVER, RunResult, run_group, run_peer_approach


def run_approach(
    data: list[ClientData], approach: str, mode: str, *, transport: Transport = INPROCESS,
    **kw: Any,
) -> RunResult:  # fmt: skip
    """One approach, one model object: FL / FL_SMA over ``transport``, peers in-process."""
    if approach in SERVER:
        return run_server_approach(data, approach, mode, transport=transport, **kw)
    return run_peer_approach(data, approach, mode, **kw)


@dataclass
class UnitResult:
    metrics: pd.DataFrame
    divergence: pd.DataFrame
    ledger: pd.DataFrame
    runs: list[dict[str, Any]]


def run_unit(
    data: list[ClientData], approaches: Sequence[str], mode: str, *, vectorise: bool,
    impute_ledger: Ledger | None = None, transport: Transport = INPROCESS, **kw: Any,
) -> UnitResult:  # fmt: skip
    """Every approach of a unit, in the given order, with its tables and run information."""
    on_transport = [a for a in approaches if a in SERVER and transport is not INPROCESS]
    rest = [a for a in approaches if a not in on_transport]
    results: dict[str, RunResult] = {}
    if vectorise:
        # lockstep groups; every copy has its own random streams (simulate.copy_seed), so its
        # numbers do not depend on which approaches share this job
        group = run_group(data, [(a, mode) for a in rest], **kw)
        results.update({a: group[(a, mode)] for a in rest})
    else:
        results.update({a: run_approach(data, a, mode, **kw) for a in rest})
    results.update(
        {a: run_approach(data, a, mode, transport=transport, **kw) for a in on_transport}
    )
    metrics, div, info = [], [], []
    ledgers = [(impute_ledger or Ledger()).table().assign(approach="imputation")]
    for approach in approaches:
        res = results[approach]
        metrics.append(res.metrics.assign(approach=approach))
        div.append(res.divergence.assign(approach=approach))
        ledgers.append(res.ledger.table().assign(approach=approach))
        info.append(
            {
                "approach": approach,
                "steps": res.steps,
                "wall_s": res.wall_s,
                "steps_per_s": res.steps / max(res.wall_s, 1e-9),
                "topology": res.topology,
                "messages": res.ledger.n_messages,
                "floats": res.ledger.n_floats,
                "vectorised": vectorise and approach in rest,
                "engine": transport.name if approach in on_transport else "inprocess",
            }  # fmt: skip
        )
    return UnitResult(pd.concat(metrics), pd.concat(div), pd.concat(ledgers), info)
