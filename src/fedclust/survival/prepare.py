"""Split, preprocess and partition one survival repetition (seed 003 §7.5), torch-free so the
report can compare pooled and federated preprocessing (issue 23) without loading a model."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError
from fedclust.federation import Ledger
from fedclust.seeds import derive_seed, rng

from .cohort import (
    PREPROCESS_MODES,
    fit_preprocess,
    fit_preprocess_federated,
    preprocess_difference,
    select_endpoint,
)
from .scenarios import SCENARIOS, partition, split_train_test


def prepare(
    x: pd.DataFrame,
    obs: pd.DataFrame,
    endpoint: str,
    scenario: str,
    rep: int,
    cfg: dict[str, Any],
    seed: int,
    transport=None,
) -> dict[str, Any]:
    """Split, preprocess and partition one repetition (deterministic given the seed).
    ``survival.preprocess: federated``: imputation and scaling fitted from the centres'
    summaries after the partition (:func:`~.cohort.fit_preprocess_federated`); the partition
    itself, a simulation of where the patients are, reads the pooled-imputed BM_BLAST."""
    if scenario not in SCENARIOS:
        raise ConfigError(
            f"unknown scenario {scenario!r}",
            where="survival.scenarios",
            fix=f"one of {', '.join(SCENARIOS)}",
        )
    xs, t, e, n_drop = select_endpoint(x, obs, endpoint, where=f"survival cohort ({endpoint})")
    tr, te = split_train_test(
        len(t), e, cfg["test_fraction"], derive_seed(seed, "survival", endpoint, rep, "split")
    )
    pp = fit_preprocess(xs.iloc[tr], where=f"survival {endpoint} repetition {rep} training part")
    bm = None
    if "BM_BLAST" in xs.columns:
        j = pp.columns.index("BM_BLAST")
        raw = xs["BM_BLAST"].to_numpy(float)[tr]
        bm = np.where(np.isnan(raw), pp.fill[j], raw)
    centre = partition(
        scenario,
        int(cfg["n_centres"]),
        rng(seed, "survival", endpoint, rep, scenario, "partition"),
        time=t[tr],
        bm_blast=bm,
        hub_fraction=float(cfg["hub_fraction"]),
    )
    mode = cfg.get("preprocess", "pooled")
    if mode not in PREPROCESS_MODES:
        raise ConfigError(f"unknown survival.preprocess {mode!r}", where="survival.preprocess",
                          fix=f"one of {', '.join(PREPROCESS_MODES)}")  # fmt: skip
    if mode == "federated":  # the centres' summaries (the partition above is the simulation)
        fp = cfg.get("federated") or {}
        pp = fit_preprocess_federated(
            xs.iloc[tr], centre, where=f"survival {endpoint} repetition {rep} training part",
            min_samples=int(fp.get("min_samples", 3)), bins=int(fp.get("bins", 50)),
            transport=transport,
        )  # fmt: skip
    return {
        "x_train": pp.transform(xs.iloc[tr]),
        "t_train": t[tr],
        "e_train": e[tr],
        "x_test": pp.transform(xs.iloc[te]),
        "t_test": t[te],
        "e_test": e[te],
        "ids_test": xs.index[te].to_numpy(),
        "centre": centre,
        "n_dropped": n_drop,
        "covariates": pp.columns,
        "bm_blast_train": bm,
    }


def preprocess_agreement(
    x: pd.DataFrame, obs: pd.DataFrame, cfg: dict[str, Any], seed: int, rep: int = 0
) -> pd.DataFrame:
    """Federated vs pooled imputation and min–max scaling (issue 23) for repetition ``rep`` of
    every (endpoint, scenario): per covariate the fill values, ranges and the largest
    difference of the scaled training values. Cheap (no training): the report's table."""
    fp = cfg.get("federated") or {}
    rows = []
    for endpoint in cfg.get("endpoints", []):
        for scenario in cfg.get("scenarios", []):
            d = prepare(x, obs, endpoint, scenario, rep, {**cfg, "preprocess": "pooled"}, seed)
            xs, t, e, _ = select_endpoint(x, obs, endpoint, where="survival cohort")
            tr, _ = split_train_test(
                len(t), e, cfg["test_fraction"], derive_seed(seed, "survival", endpoint, rep,
                                                             "split")
            )  # fmt: skip
            where = f"survival {endpoint} repetition {rep} training part"
            pooled = fit_preprocess(xs.iloc[tr], where=where)
            led = Ledger()
            fed = fit_preprocess_federated(
                xs.iloc[tr], d["centre"], where=where, min_samples=int(fp.get("min_samples", 3)),
                bins=int(fp.get("bins", 50)), ledger=led,
            )  # fmt: skip
            diff = preprocess_difference(pooled, fed, xs.iloc[tr])
            diff.insert(0, "scenario", scenario)
            diff.insert(0, "endpoint", endpoint)
            diff["floats_per_centre_max"] = int(led.summary()["floats"].max())
            diff["abstentions"] = int(led.n_abstentions)
            rows.append(diff)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
