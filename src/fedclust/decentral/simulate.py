"""The round loops: FL (server) and the peer-to-peer approaches in both modes (spec §4).

Sequential synchronous simulation in client order 1..K, as the thesis. Every weight message goes
through :class:`fedclust.ledger.Ledger`; clients only see their own arrays; the aggregation sees
only messages.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedclust.ledger import Ledger
from fedclust.seeds import derive_seed, seed_torch

from .aggregation import FedAvgStrategy, Weights, aggregate
from .clients import ClientData, HeartClient
from .divergence import pairwise_divergence
from .topologies import (
    APPROACHES,
    MODES,
    PEER_TO_PEER,
    PUBLISHED_VALIDATION_SPLIT,
    derangement,
    fixed_topology,
    plan_round,
)
from .training import Trainer

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    metrics: pd.DataFrame  # round, client, name, n_train, n_test, loss_total, loss_bce, acc, auc
    divergence: pd.DataFrame  # round, pair, divergence
    topology: list[str] = field(default_factory=list)  # the ``clients`` list of each round
    ledger: Ledger = field(default_factory=Ledger)
    steps: int = 0
    wall_s: float = 0.0


def initial_weights(n_features: int, seed: int) -> Weights:
    """The common start of every approach (thesis: all clients start from the same model)."""
    from .model import HeartNet

    seed_torch(seed, "decentral", "init")
    return HeartNet(n_features).get_weights()


def run_approach(
    data: list[ClientData],
    approach: str,
    mode: str,
    rounds: int,
    epochs: int,
    batch_size: int,
    lr: float = 1e-3,
    optimizer_state: str = "shared",
    seed: int = 0,
    published_validation_split: bool = True,
    on_round: Callable[[int, list[dict], list[dict]], None] | None = None,
) -> RunResult:
    """Run one approach for ``rounds`` rounds; metrics per client per round, divergence per pair.

    ``on_round(t, metric_rows, divergence_rows)`` is called after every round (progress files).
    """
    if approach not in APPROACHES:
        raise ValueError(f"approach must be one of {APPROACHES}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    t0 = time.perf_counter()
    n_feat = data[0].X_train.shape[1]
    w0 = initial_weights(n_feat, seed)
    trainer = Trainer(n_feat, lr, optimizer_state, derive_seed(seed, "decentral", "shuffle"))
    clients = [HeartClient(d, trainer) for d in data]
    k = len(clients)
    n = [c.n_train for c in clients]
    ledger = Ledger()
    split = (
        PUBLISHED_VALIDATION_SPLIT.get(approach, 0.0)
        if mode == "as_published" and published_validation_split
        else 0.0
    )
    fit_cfg = {"epochs": epochs, "batch_size": batch_size, "validation_split": split}
    rows, drows, topo = [], [], []
    if approach in ("FL", "FL_SMA"):
        strategy = FedAvgStrategy("simple" if approach == "FL_SMA" else "weighted")
        held = [ledger.send("server", c.name, {"weights": w0}, 0, "init") for c in clients]
        states = [m["weights"] for m in held]
    else:
        states = [w0 for _ in clients]
        order = list(range(1, k + 1))
        rnd = random.Random(derive_seed(seed, "decentral", "gl_random"))
    for t in range(1, rounds + 1):
        if approach in ("FL", "FL_SMA"):
            results = []
            for c, w in zip(clients, states, strict=True):
                p, n_ex, met = c.fit(w, fit_cfg)
                msg = ledger.send(c.name, "server", {"weights": p, "n": n_ex}, t, "weights")
                results.append((msg["weights"], msg["n"], met))
            w_glob, _ = strategy.aggregate_fit(t, results)
            states = [
                ledger.send("server", c.name, {"weights": w_glob}, t, "global_weights")["weights"]
                for c in clients
            ]
            topo.append("server")
        else:
            spec = (
                derangement(rnd, order) if approach == "GL_random" else fixed_topology(approach, k)
            )
            topo.append(str(spec))
            plan = plan_round(spec, n, mode)
            new = [c.fit(w, fit_cfg)[0] for c, w in zip(clients, states, strict=True)]
            inbox: dict[tuple[int, int], Weights] = {}
            for s, r, used in plan.messages:
                kind = "weights" if used else "weights_unused"
                msg = ledger.send(clients[s - 1].name, clients[r - 1].name, {"weights": new[s - 1]},
                                  t, kind)  # fmt: skip
                inbox[(s, r)] = msg["weights"]
            old = states
            states = []
            for r, (refs, wts) in enumerate(zip(plan.entries, plan.weights, strict=True), 1):
                sets = []
                for what, who in refs:
                    if who == r:  # the receiver's own model, old or new: no message
                        sets.append(new[r - 1] if what == "new" else old[r - 1])
                    elif what == "new":
                        sets.append(inbox[(who, r)])
                    else:
                        raise AssertionError("a client never holds another client's old weights")
                states.append(aggregate(sets, wts))
        for i, (c, w) in enumerate(zip(clients, states, strict=True), 1):
            loss, n_te, met = c.evaluate(w)
            ledger.send(c.name, "observer", {"loss": loss, **met}, t, "eval_metrics")
            rows.append(
                {
                    "round": t,
                    "client": i,
                    "name": c.name,
                    "n_train": c.n_train,
                    "n_test": n_te,
                    "loss_total": loss,
                    **met,
                }  # fmt: skip
            )
        for pair, d in pairwise_divergence(states).items():
            drows.append({"round": t, "pair": pair, "divergence": d})
        log.info("%s %s round %d/%d done (%d steps)", approach, mode, t, rounds, trainer.steps)
        if on_round is not None:
            on_round(t, rows, drows)
    return RunResult(
        pd.DataFrame(rows),
        pd.DataFrame(drows, columns=["round", "pair", "divergence"]),
        topo,
        ledger,
        trainer.steps,
        time.perf_counter() - t0,
    )


def weighted_summary(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per round: n_train-weighted mean over clients (the thesis' averaging, spec §4.0) and the
    simple mean, of loss_total, loss_bce, accuracy, auc."""
    cols = ["loss_total", "loss_bce", "accuracy", "auc"]
    out = []
    for t, g in metrics.groupby("round"):
        w = g["n_train"].to_numpy(float)
        row = {"round": t}
        for c in cols:
            v = g[c].to_numpy(float)
            row[c] = float(np.average(v, weights=w))
            row[f"{c}_simple"] = float(v.mean())
        out.append(row)
    return pd.DataFrame(out)


__all__ = ["PEER_TO_PEER", "RunResult", "run_approach", "weighted_summary"]
