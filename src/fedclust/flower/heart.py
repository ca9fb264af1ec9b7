"""Heart FL (seed 004, approaches FL / FL_SMA) on Flower.

The same protocol state as the in-process engine — :class:`fedclust.decentral.simulate.
ApproachRun` (the core's FedAvg strategy, the ledger, the records) and the hospitals'
:class:`~fedclust.decentral.clients.HeartClient` — with Flower carrying the training request,
the trained weights (only ``parameters`` and ``n`` leave the hospital) and the evaluation
metrics. The peer-to-peer approaches (GL, RAR, customized) have no server and stay in-process.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fedclust.decentral.clients import ClientData, HeartClient
from fedclust.decentral.simulate import (
    SERVER,
    ApproachRun,
    RunResult,
    copy_seed,
    initial_weights,
    optimizer_state_for,
    validation_split,
)
from fedclust.decentral.training import Trainer
from fedclust.errors import ConfigError
from fedclust.federation import RoundLog
from fedclust.seeds import derive_seed

from .apps import FIELDS, exchange
from .simulation import simulate


def run_approach(
    data: list[ClientData],
    approach: str,
    mode: str,
    rounds: int,
    epochs: int,
    batch_size: int,
    lr: float = 1e-3,
    optimizer_state: str | None = None,
    seed: int = 0,
    published_validation_split: bool = True,
    on_round: Callable[[int, list[dict], list[dict]], None] | None = None,
) -> RunResult:
    """:func:`fedclust.decentral.simulate.run_approach` for FL / FL_SMA on Flower."""
    if approach not in SERVER:
        raise ConfigError(
            f"approach {approach!r} has no server; it cannot run on Flower",
            where="decentral.engine",
            fix=f"flower runs {SERVER}",
        )
    t0 = time.perf_counter()
    n_feat = data[0].X_train.shape[1]
    w0 = initial_weights(n_feat, seed)
    policy = optimizer_state_for(mode, optimizer_state)
    trainer = Trainer(
        n_feat, lr, policy, derive_seed(seed, "decentral", "shuffle"),
        dropout_seed=copy_seed(seed, approach, mode),
    )  # fmt: skip
    clients = [HeartClient(d, trainer) for d in data]
    split = validation_split(approach, mode, published_validation_split)
    run = ApproachRun(
        approach, mode, [c.name for c in clients], [c.n_train for c in clients], w0, seed, split
    )
    cfg: dict[str, Any] = {"epochs": epochs, "batch_size": batch_size, "validation_split": split}

    def main(grid: Any, node_of: dict[str, int]) -> None:
        nodes = [node_of[c.name] for c in clients]
        clock = RoundLog(f"{approach} {mode} (optimizer state {policy}) [flower]", rounds)
        for t in range(1, rounds + 1):
            # the requests carry the weights ApproachRun already sent through the ledger
            new = [
                exchange(grid, nid, "train", {**cfg, "parameters": w, FIELDS: "parameters,n"})[
                    "parameters"
                ]
                for nid, w in zip(nodes, run.start_weights(), strict=True)
            ]
            states = run.finish_round(t, new)  # ledger: updates received, global sent
            evals = []
            for nid, w in zip(nodes, states, strict=True):
                e = exchange(grid, nid, "evaluate", {"parameters": w})
                loss, n_te = e.pop("loss"), e.pop("n")
                evals.append((loss, n_te, e))
            run.record(t, evals)  # ledger: evaluation metrics received
            clock.done(t, f", {trainer.steps} steps")
            if on_round is not None:
                on_round(t, run.rows, run.drows)

    simulate(main, clients)
    return run.result(trainer.steps, time.perf_counter() - t0)
