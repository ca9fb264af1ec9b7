"""One job of the survival stage: (endpoint, scenario, strategy, repetition) — seed 003 §7.4–7.5.

1. keep the patients with a known endpoint; 75/25 train / blind-test split (stratified by event);
2. imputation + min-max scaling fitted on the training part;
3. the scenario distributes the training part over K centres;
4. hyper-parameter grid chosen by centre-based (leave-one-centre-out) CV: each fold trains the
   strategy on K−1 centres and the held-out centre scores the fold's model on its own patients,
   sending Harrell's concordant / comparable pair counts (issue 22; D6.2 sent every held-out
   patient's risk, time and event for a pooled C-index). The CV C-index is Σ concordant /
   Σ comparable over the folds (pairs within centres). Centralized uses the same folds.
   Isolated centres have no other centre to validate on: each runs a stratified K-fold CV on its
   own patients and keeps its own grid point;
5. the chosen grid point is trained on all K centres and scored on the blind test set.
"""

from __future__ import annotations

import itertools
import time as _time
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import INPROCESS, Ledger, Transport, federate
from fedclust.seeds import derive_seed, rng

from .cox import c_index
from .model import get_parameters
from .prepare import prepare, preprocess_agreement  # noqa: F401  (re-exported)
from .strategies import (
    CV_CONCORDANCE,
    CV_REQUEST,
    DEFAULT,
    STRATEGIES,
    Federation,
    Model,
    SurvivalClient,
    blind_c_index,
    pack_model,
    predict_model,
    train_strategy,
)
from .train import HyperParams, ModelConfig, predict


def model_config(cfg: dict[str, Any]) -> ModelConfig:
    m = cfg["model"]
    return ModelConfig(
        tuple(m["hidden"]),
        m["activation"],
        float(m["l1"]),
        float(m["l2"]),
        m["optimizer"],
        float(m["lr_floor"]),
    )


def grid(cfg: dict[str, Any]) -> list[HyperParams]:
    g = cfg["grid"]
    return [
        HyperParams(int(fe), int(ie), int(b), float(lr))
        for fe, ie, b, lr in itertools.product(
            g["federated_epochs"], g["internal_epochs"], g["batches"], g["lr"]
        )
    ]


def init_parameters(mc: ModelConfig, n_in: int, seed: int) -> list[np.ndarray]:
    import torch

    torch.manual_seed(seed)
    return get_parameters(mc.build(n_in))


def _clients(d, idx_centres, mc, seed, endpoint, rep, scenario,
             min_samples: int) -> list[SurvivalClient]:  # fmt: skip
    out = []
    for k in idx_centres:
        m = d["centre"] == k
        s = derive_seed(seed, "survival", endpoint, rep, scenario, "batches", int(k))
        out.append(
            SurvivalClient(
                f"centre{k}", d["x_train"][m], d["t_train"][m], d["e_train"][m], mc, s, min_samples
            )  # fmt: skip
        )
    return out


def _cv_federated(strategy, clients, init, hp, mc, ledger, seed_label, fed=DEFAULT) -> float:
    """Leave-one-centre-out CV scored at the held-out centres: Σ concordant / Σ comparable."""
    conc, comp = 0.0, 0.0
    local: list[Model] | None = None
    if strategy == "ensemble":  # the local models do not depend on the fold: train them once
        # one list per centre (empty where the centre abstained below its floor)
        local = [train_strategy("isolated", [c], init, hp, mc, ledger, None, fed) for c in clients]
    for k, held in enumerate(clients):
        rest = [c for i, c in enumerate(clients) if i != k]
        if local is not None:
            members = [m for i, ms in enumerate(local) if i != k for m in ms]
            if not members:  # every other centre abstained: no model for this fold
                continue
            tot = sum(w for _, w in members)
            model = [(p, w / tot) for p, w in members]
        else:
            model = train_strategy(
                strategy, rest, init, hp, mc, ledger, rng(*seed_label, "order", k), fed
            )
        request = pack_model(model)
        msg = federate(
            [held],
            lambda ps, r=request, k=k: ps[0].call(
                "cv_concordance", r, k, "cv_concordance", CV_CONCORDANCE, CV_REQUEST
            ),
            ledger=ledger,
            transport=fed.transport,
        )
        if msg is not None:
            conc, comp = conc + msg["concordant"], comp + msg["comparable"]
    return conc / comp if comp else float("nan")


def _cv_isolated(client: SurvivalClient, init, hp, mc, folds: int, seed: int) -> float:
    """A centre alone: stratified K-fold CV on its own patients, pooled C-index."""
    skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    risk = np.empty(client.n)
    for trn, val in skf.split(client.x_np, client.e_np):
        sub = SurvivalClient(
            client.cid, client.x_np[trn], client.t_np[trn], client.e_np[trn], mc, client.seed
        )
        p, _ = sub.fit_local(init, hp)
        risk[val] = predict(client.model, p, client.x_np[val])
    return c_index(client.t_np, risk, client.e_np)


def run_job(
    x: pd.DataFrame,
    obs: pd.DataFrame,
    endpoint: str,
    scenario: str,
    strategy: str,
    rep: int,
    cfg: dict[str, Any],
    seed: int,
    transport: Transport = INPROCESS,
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """Returns (result dict, CV table, blind-test predictions); ``transport`` carries every
    federated exchange (:func:`fedclust.transports.from_config`)."""
    if strategy not in STRATEGIES:
        raise ConfigError(
            f"unknown strategy {strategy!r}",
            where="survival.strategies",
            fix=f"one of {', '.join(STRATEGIES)}",
        )
    t0 = _time.perf_counter()
    d = prepare(x, obs, endpoint, scenario, rep, cfg, seed, transport)
    mc = model_config(cfg)
    K = int(cfg["n_centres"])
    fed = Federation.from_config(cfg, transport)
    clients = _clients(d, range(K), mc, seed, endpoint, rep, scenario, fed.min_samples)
    init = init_parameters(
        mc, d["x_train"].shape[1], derive_seed(seed, "survival", endpoint, rep, "init")
    )
    hps = grid(cfg)
    label = (seed, "survival", endpoint, rep, scenario, strategy)
    cv_ledger, ledger = Ledger(), Ledger()
    rows = []
    if strategy == "isolated":
        best_per = []
        for c in clients:
            scores = [
                _cv_isolated(
                    c, init, hp, mc, int(cfg["isolated_folds"]), derive_seed(*label, c.cid)
                )
                for hp in hps
            ]
            rows += [
                {"centre": c.cid, "hp": hp.label(), "cv_c_index": s}
                for hp, s in zip(hps, scores, strict=True)
            ]
            best_per.append(hps[int(np.argmax(scores))])
        model = []
        for c, hp in zip(clients, best_per, strict=True):
            model += train_strategy("isolated", [c], init, hp, mc, ledger, None, fed)
        if not model:
            raise InputDataError(
                "every centre abstained from its isolated model", where="survival isolated",
                fix="lower survival.min_samples / the centres' disclosure.nfilter_subset",
            )  # fmt: skip
        best = {c.cid: hp.label() for c, hp in zip(clients, best_per, strict=True)}
    else:
        scores = []
        for hp in hps:
            s = (
                _cv_federated(strategy, clients, init, hp, mc, cv_ledger, label, fed)
                if len(hps) > 1
                else float("nan")
            )
            scores.append(s)
            rows.append({"centre": "all", "hp": hp.label(), "cv_c_index": s})
        hp = hps[int(np.nanargmax(scores))] if len(hps) > 1 else hps[0]
        model = train_strategy(
            strategy, clients, init, hp, mc, ledger, rng(*label, "order", "final"), fed
        )
        best = hp.label()
    ci, each = blind_c_index(
        clients[0].model, model, strategy, d["x_test"], d["t_test"], d["e_test"]
    )
    if strategy == "isolated":
        risk = np.mean([predict(clients[0].model, p, d["x_test"]) for p, _ in model], axis=0)
    else:
        risk = predict_model(clients[0].model, model, d["x_test"])
    pred = pd.DataFrame(
        {"time": d["t_test"], "event": d["e_test"], "risk": risk},
        index=pd.Index(d["ids_test"], name="sample_id"),
    )
    result = {
        "endpoint": endpoint,
        "scenario": scenario,
        "strategy": strategy,
        "rep": int(rep),
        "test_c_index": ci,
        "isolated_c_index": each,
        "best": best,
        "n_train": int(len(d["t_train"])),
        "n_test": int(len(d["t_test"])),
        "events_train": int(d["e_train"].sum()),
        "events_test": int(d["e_test"].sum()),
        "n_dropped_missing_endpoint": d["n_dropped"],
        "n_covariates": len(d["covariates"]),
        "centre_sizes": [c.n for c in clients],
        "centre_events": [int(c.e_np.sum()) for c in clients],
        # hidden units the centres withheld under their per-unit floor, CV and final fits
        "units_withheld": int(sum(c.units_withheld for c in clients)),
        "grid_size": len(hps),
        "wall_s": _time.perf_counter() - t0,
        "messages_final": ledger.n_messages,
        "floats_final": ledger.n_floats,
        "messages_cv": cv_ledger.n_messages,
        "floats_cv": cv_ledger.n_floats,
    }
    return result, pd.DataFrame(rows), pred


def run_units(
    x: pd.DataFrame,
    obs: pd.DataFrame,
    endpoint: str,
    units: list[tuple[str, str]],
    rep: int,
    cfg: dict[str, Any],
    seed: int,
    transport: Transport = INPROCESS,
) -> list[tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]]:
    """Several (scenario, strategy) units of one (endpoint, rep) in one process (``fanout:
    repetition``, issue 15): each unit's seeds derive from its own identity, so every result
    equals :func:`run_job` of that unit alone."""
    return [run_job(x, obs, endpoint, sc, st, rep, cfg, seed, transport) for sc, st in units]
