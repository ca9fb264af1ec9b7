"""Heart FL / FL_SMA (seed 004) with the hospitals behind client proxies, on any transport.

The protocol state is :class:`~.simulate.ApproachRun` (the core's FedAvg strategy, the ledger
of record, the per-round rows); the hospitals are :class:`~.clients.HeartClient` objects reached
through :func:`fedclust.federation.federate`, so the same server function runs in-process and on
Flower. Only ``parameters`` and ``n`` leave a hospital after training (``heart_train``), only
its evaluation metrics after evaluation (``heart_eval_metrics``). The peer-to-peer approaches
(GL, RAR, customized) have no server and run in :func:`~.simulate.run_approach`'s own rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from fedclust.errors import ConfigError
from fedclust.federation import (
    INPROCESS,
    Ledger,
    Protocol,
    RoundLog,
    Transport,
    call_all,
    federate,
    fit_all,
    fit_protocol,
)
from fedclust.seeds import derive_seed

from .clients import ClientData, HeartClient
from .simulate import (
    HEART_EVAL,
    SERVER,
    ApproachRun,
    RunResult,
    copy_seed,
    initial_weights,
    optimizer_state_for,
    validation_split,
)
from .training import Trainer

HEART_TRAIN = fit_protocol("heart_train", metrics=())
HEART_EVAL_REQUEST = Protocol("heart_eval_request", {"parameters": "parameters"})


def serve_fl(
    proxies: Sequence[Any], run: ApproachRun, cfg: dict[str, Any], rounds: int,
    clock: RoundLog, steps: Callable[[], int],
    on_round: Callable[[int, list[dict], list[dict]], None] | None = None,
) -> None:  # fmt: skip
    """``rounds`` FL rounds: each hospital trains from its current weights, the server
    aggregates (``run.finish_round``), each hospital evaluates the global model."""
    for t in range(1, rounds + 1):
        jobs = [(p, w, cfg) for p, w in zip(proxies, run.start_weights(), strict=True)]
        new = []
        for p, out in zip(proxies, fit_all(jobs, t, "heart_train", HEART_TRAIN), strict=True):
            if out is None:
                raise ConfigError(
                    f"hospital {p.cid} abstained from FL round {t}",
                    where="decentral",
                    fix="see the ledger's abstention reason",
                )
            new.append(out[0])
        states = run.finish_round(t, new)
        evals = []
        requests = [{"parameters": w} for w in states]
        for e in call_all(proxies, "evaluate", requests, t, "heart_eval", HEART_EVAL,
                          HEART_EVAL_REQUEST):  # fmt: skip
            loss, n_te = e.pop("loss"), e.pop("n")
            evals.append((loss, n_te, e))
        run.record(t, evals)
        clock.done(t, f", {steps()} steps")
        if on_round is not None:
            on_round(t, run.rows, run.drows)


def run_server_approach(
    data: list[ClientData], approach: str, mode: str, rounds: int, epochs: int,
    batch_size: int, lr: float = 1e-3, optimizer_state: str | None = None, seed: int = 0,
    published_validation_split: bool = True,
    on_round: Callable[[int, list[dict], list[dict]], None] | None = None,
    transport: Transport = INPROCESS,
) -> RunResult:  # fmt: skip
    """FL / FL_SMA with one model object (the thesis' setting) over ``transport``."""
    if approach not in SERVER:
        raise ConfigError(f"approach {approach!r} has no server", where="decentral.approaches",
                          fix=f"server approaches: {SERVER}")  # fmt: skip
    t0 = time.perf_counter()
    n_feat = data[0].X_train.shape[1]
    w0 = initial_weights(n_feat, seed)
    policy = optimizer_state_for(mode, optimizer_state)
    trainer = Trainer(n_feat, lr, policy, derive_seed(seed, "decentral", "shuffle"),
                      dropout_seed=copy_seed(seed, approach, mode))  # fmt: skip
    clients = [HeartClient(d, trainer) for d in data]
    split = validation_split(approach, mode, published_validation_split)
    run = ApproachRun(approach, mode, [c.name for c in clients], [c.n_train for c in clients],
                      w0, seed, split)  # fmt: skip
    cfg = {"epochs": epochs, "batch_size": batch_size, "validation_split": split}
    clock = RoundLog(f"{approach} {mode} (optimizer state {policy}) [{transport.name}]", rounds)
    # the ledger of record is the run's own (ApproachRun); the transport's copy goes here
    federate(clients, lambda ps: serve_fl(ps, run, cfg, rounds, clock, lambda: trainer.steps,
                                          on_round),
             ledger=Ledger(), transport=transport)  # fmt: skip
    return run.result(trainer.steps, time.perf_counter() - t0)
