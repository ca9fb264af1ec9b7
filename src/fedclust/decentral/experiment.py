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

SPLIT_COLUMN = {"hospitals": "hospital", "sources": "source"}


@dataclass
class UnitData:
    """The clients of a (split, mode) and, for ``as_described``, the per-centre imputation's
    ledger and fills (None: the data stage's pooled imputation, ``as_published``)."""

    clients: list[ClientData]
    impute_ledger: Ledger
    impute_info: pd.DataFrame | None


def unit_data(
    feats: pd.DataFrame, obs: pd.DataFrame, split: str, mode: str, cfg: dict[str, Any],
    heart: dict[str, Any],
) -> UnitData:  # fmt: skip
    """The clients of rule ``decentral_train``: the data stage's features split by ``split``;
    ``as_described`` with ``decentral.impute_per_center`` redoes the imputation per centre
    (the data stage imputed on the pooled table, as the published code does); then each
    client's train/test split and scaler (:func:`.clients.make_client_data`)."""
    from fedclust.data.heart import load_from_config
    from fedclust.errors import InputDataError

    from .clients import make_client_data
    from .imputation import COLUMNS, impute_per_center

    obs = obs.loc[feats.index]
    groups = obs[SPLIT_COLUMN[split]].to_numpy()
    impute_ledger, impute_info = Ledger(), None
    if mode == "as_described" and cfg.get("impute_per_center", True):
        raw, _ = load_from_config(heart)
        if len(raw) != len(feats):
            raise InputDataError(f"{len(raw)} raw rows vs {len(feats)} feature rows",
                                 where="results/data/heart/features.parquet")  # fmt: skip
        missing = pd.DataFrame({c: (raw[c] == 0).to_numpy() for c in COLUMNS}, index=feats.index)
        feats, impute_info = impute_per_center(
            feats, missing, obs["HeartDisease"].to_numpy(), groups,
            heart.get("imputation", "median"), int(cfg.get("impute_min_samples", 5)),
            impute_ledger,
        )  # fmt: skip
    data = make_client_data(feats, obs["HeartDisease"].to_numpy(), groups,
                            test_size=cfg["test_size"],
                            random_state=cfg["split_random_state"])  # fmt: skip
    return UnitData(data, impute_ledger, impute_info)


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
