"""The round loops: FL (server) and the peer-to-peer approaches in both modes (spec §4).

Sequential synchronous simulation in client order 1..K, as the thesis. Every weight message goes
through :class:`fedclust.federation.Ledger`; clients only see their own arrays; the aggregation sees
only messages. :class:`ApproachRun` holds one approach's protocol state; it is driven by
:func:`run_peer_approach` (one peer-to-peer approach, one model), by :mod:`.server` (FL / FL_SMA
over client proxies, any transport) and by :func:`run_group` (several approaches whose local
training shares the batch schedule, trained in lockstep by a :class:`BatchedTrainer`; in-process).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError
from fedclust.federation import FedAvg, Ledger, Protocol, RoundLog, aggregate
from fedclust.federation.disclosure import configured_policy
from fedclust.federation.strategy import NDArrays
from fedclust.privacy.centre import centre_send, server_send
from fedclust.seeds import derive_seed, seed_torch

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
SERVER = ("FL", "FL_SMA")
#: The heart protocols (what crosses the ledger). NDArrays are trained on the sender's samples and
#: carry their count; evaluation metrics carry the test-set size.
HEART_GLOBAL = Protocol("heart_fl_global", {"weights": "parameters"})
HEART_UPDATE = Protocol("heart_fl_update", {"weights": "parameters", "n": "count"})
HEART_PEER = Protocol("heart_peer_weights", {"weights": "parameters", "n": "count"})
HEART_EVAL = Protocol(
    "heart_eval_metrics",
    {"loss": "aggregate", "loss_bce": "aggregate", "accuracy": "aggregate", "auc": "aggregate",
     "auc_keras": "aggregate", "n": "count"},
)  # fmt: skip
OPTIMIZER_STATE_DEFAULT = "per_client"


def optimizer_state_for(mode: str, optimizer_state: str | None = None) -> str:
    """The local optimizer state policy of a mode: ``as_published`` always shares one Adam state
    across clients and rounds, as the published code (spec §4.0, §8.3); ``as_described`` keeps
    the configured policy (default ``per_client``: every hospital its own Adam state)."""
    if mode == "as_published":
        return "shared"
    policy = optimizer_state or OPTIMIZER_STATE_DEFAULT
    if policy == "shared":
        raise ConfigError(
            "the shared Adam state of the published code is only available in as_published mode",
            where="decentral.optimizer_state",
            fix="per_client or fresh_each_fit",
        )
    return policy


@dataclass
class RunResult:
    metrics: pd.DataFrame  # round, client, name, n_train, n_test, loss_total, loss_bce, acc, auc
    divergence: pd.DataFrame  # round, pair, divergence
    topology: list[str] = field(default_factory=list)  # the ``clients`` list of each round
    ledger: Ledger = field(default_factory=Ledger)
    steps: int = 0
    wall_s: float = 0.0


def copy_seed(seed: int, approach: str, mode: str) -> int:
    """The identity seed of one model copy (approach × mode): its dropout streams, one per client
    (:func:`~.training.client_generator`; the split is in the client names). The same in a lockstep
    group, alone, or on Flower, so a copy's numbers do not depend on who trains beside it."""
    return derive_seed(seed, "decentral", "dropout", approach, mode)


def initial_weights(n_features: int, seed: int) -> NDArrays:
    """The common start of every approach (thesis: all clients start from the same model)."""
    from .model import HeartNet

    seed_torch(seed, "decentral", "init")
    return HeartNet(n_features).get_weights()


def validation_split(approach: str, mode: str, published_validation_split: bool) -> float:
    if mode == "as_published" and published_validation_split:
        return PUBLISHED_VALIDATION_SPLIT.get(approach, 0.0)
    return 0.0


class ApproachRun:
    """Protocol state of one approach × mode: who holds which weights, the ledger, the records."""

    def __init__(self, approach: str, mode: str, names: list[str], n: list[int], w0: NDArrays,
                 seed: int, split: float):  # fmt: skip
        if approach not in APPROACHES:
            raise ValueError(f"approach must be one of {APPROACHES}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.approach, self.mode, self.names, self.n = approach, mode, names, n
        self.split = split
        self.ledger = Ledger()
        self.rows: list[dict] = []
        self.drows: list[dict] = []
        self.topology: list[str] = []
        k = len(names)
        if approach in SERVER:
            self.strategy = FedAvg("simple" if approach == "FL_SMA" else "weighted")
            self.states = [server_send(self.ledger, c, {"weights": w0}, 0, "init",
                                       HEART_GLOBAL)["weights"]
                           for c in names]  # fmt: skip
        else:
            self.states = [w0 for _ in names]
            self.order = list(range(1, k + 1))
            self.rnd = random.Random(derive_seed(seed, "decentral", "gl_random"))

    def start_weights(self) -> list[NDArrays]:
        """The weights each client trains from this round (its own current model)."""
        return list(self.states)

    def finish_round(self, t: int, new: list[NDArrays]) -> list[NDArrays]:
        """Exchange this round's trained weights and aggregate (server or peers)."""
        led, names, n = self.ledger, self.names, self.n
        if self.approach in SERVER:
            results = []
            for c, p, n_ex in zip(names, new, n, strict=True):
                msg = centre_send(led, configured_policy(c), c, n_ex, {"weights": p, "n": n_ex},
                                  t, "weights", HEART_UPDATE)  # fmt: skip
                results.append((msg["weights"], msg["n"], {}))
            w_glob = self.strategy.aggregate_fit(t, results, self.states[0])
            self.states = [
                server_send(led, c, {"weights": w_glob}, t, "global_weights",
                            HEART_GLOBAL)["weights"]
                for c in names
            ]  # fmt: skip
            self.topology.append("server")
            return self.states
        k = len(names)
        if self.approach == "GL_random":
            spec = derangement(self.rnd, self.order)
        else:
            spec = fixed_topology(self.approach, k)
        self.topology.append(str(spec))
        plan = plan_round(spec, n, self.mode)
        inbox: dict[tuple[int, int], NDArrays] = {}
        for s, r, used in plan.messages:
            kind = "weights" if used else "weights_unused"
            # peer to peer: checked at the sending hospital with its own policy (issue 22)
            msg = centre_send(led, configured_policy(names[s - 1]), names[s - 1], n[s - 1],
                              {"weights": new[s - 1], "n": n[s - 1]}, t, kind, HEART_PEER,
                              receiver=names[r - 1])  # fmt: skip
            inbox[(s, r)] = msg["weights"]
        old, states = self.states, []
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
        self.states = states
        return states

    def record(self, t: int, evals: list[tuple]) -> None:
        """Per-client evaluation results (sent to the observer) and pairwise divergence."""
        for i, (c, (loss, n_te, met)) in enumerate(zip(self.names, evals, strict=True), 1):
            centre_send(self.ledger, configured_policy(c), c, n_te,
                        {"loss": loss, "n": n_te, **met}, t, "eval_metrics", HEART_EVAL,
                        receiver="observer")  # fmt: skip
            self.rows.append({"round": t, "client": i, "name": c, "n_train": self.n[i - 1],
                              "n_test": n_te, "loss_total": loss, **met})  # fmt: skip
        for pair, d in pairwise_divergence(self.states).items():
            self.drows.append({"round": t, "pair": pair, "divergence": d})

    def result(self, steps: int, wall_s: float) -> RunResult:
        return RunResult(
            pd.DataFrame(self.rows),
            pd.DataFrame(self.drows, columns=["round", "pair", "divergence"]),
            self.topology, self.ledger, steps, wall_s,
        )  # fmt: skip


def run_peer_approach(
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
    """Run one peer-to-peer approach (GL_*, RAR, customized) for ``rounds`` rounds with one model
    object (the thesis' setting). They have no server, so no transport: every peer message goes
    through the run's ledger in this process (FL / FL_SMA: :mod:`.server`).

    ``optimizer_state``: see :func:`optimizer_state_for` (``as_published``: shared Adam state).
    ``on_round(t, metric_rows, divergence_rows)`` is called after every round (progress files).
    """
    if approach in SERVER:
        raise ConfigError(f"{approach} has a server: run it with decentral.server",
                          where="decentral.simulate.run_peer_approach")  # fmt: skip
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
    clock = RoundLog(f"{approach} {mode} (optimizer state {policy})", rounds)
    for t in range(1, rounds + 1):
        new = [c.fit(w, cfg)[0] for c, w in zip(clients, run.start_weights(), strict=True)]
        states = run.finish_round(t, new)
        run.record(t, [c.evaluate(w) for c, w in zip(clients, states, strict=True)])
        clock.done(t, f", {trainer.steps} steps")
        if on_round is not None:
            on_round(t, run.rows, run.drows)
    return run.result(trainer.steps, time.perf_counter() - t0)


def run_group(
    data: list[ClientData],
    runs: Sequence[tuple[str, str]],
    rounds: int,
    epochs: int,
    batch_size: int,
    lr: float = 1e-3,
    optimizer_state: str | None = None,
    seed: int = 0,
    published_validation_split: bool = True,
    on_round: Callable[[int, dict[tuple[str, str], ApproachRun]], None] | None = None,
) -> dict[tuple[str, str], RunResult]:
    """Several (approach, mode) runs at once: runs with the same local batch schedule (same
    validation split) are trained in lockstep as one stacked model. Same protocol, same data,
    same shuffling and dropout streams as :func:`run_approach` (:func:`copy_seed`); each run keeps
    its own weights and Adam state, so a run's numbers do not depend on its group.
    Runs are grouped by validation split and optimizer state policy."""
    from .batched import BatchedTrainer

    n_feat = data[0].X_train.shape[1]
    w0 = initial_weights(n_feat, seed)
    groups: dict[tuple[float, str], list[tuple[str, str]]] = {}
    for a, m in runs:
        key = (validation_split(a, m, published_validation_split),
               optimizer_state_for(m, optimizer_state))  # fmt: skip
        groups.setdefault(key, []).append((a, m))
    out: dict[tuple[str, str], RunResult] = {}
    for (split, policy), members in groups.items():
        t0 = time.perf_counter()
        trainer = BatchedTrainer(len(members), n_feat, lr, policy,
                                 derive_seed(seed, "decentral", "shuffle"),
                                 [copy_seed(seed, a, m) for a, m in members])  # fmt: skip
        clock = RoundLog(f"group {members} (optimizer state {policy})", rounds)
        clients = [HeartClient(d, trainer) for d in data]
        names, n = [c.name for c in clients], [c.n_train for c in clients]
        state = [ApproachRun(a, m, names, n, w0, seed, split) for a, m in members]
        cfg = {"epochs": epochs, "batch_size": batch_size, "validation_split": split}
        for t in range(1, rounds + 1):
            starts = [r.start_weights() for r in state]
            new: list[list[NDArrays]] = [[] for _ in state]
            for k, c in enumerate(clients):
                fitted = c.fit_many([s[k] for s in starts], cfg)
                for j, (w, _, _) in enumerate(fitted):
                    new[j].append(w)
            finals = [r.finish_round(t, nw) for r, nw in zip(state, new, strict=True)]
            evals: list[list[tuple]] = [[] for _ in state]
            for k, c in enumerate(clients):
                for j, e in enumerate(c.evaluate_many([f[k] for f in finals])):
                    evals[j].append(e)
            for r, e in zip(state, evals, strict=True):
                r.record(t, e)
            clock.done(t, f", {trainer.steps} steps")
            if on_round is not None:
                on_round(t, dict(zip(members, state, strict=True)))
        wall = time.perf_counter() - t0
        for (a, m), r in zip(members, state, strict=True):
            out[(a, m)] = r.result(trainer.steps, wall)
    return out


def weighted_summary(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per round: n_train-weighted mean over clients (the thesis' averaging, spec §4.0) and the
    simple mean, of loss_total, loss_bce, accuracy, auc."""
    cols = [
        c
        for c in ("loss_total", "loss_bce", "accuracy", "auc", "auc_keras")
        if c in metrics.columns
    ]
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


__all__ = ["PEER_TO_PEER", "ApproachRun", "RunResult", "copy_seed", "run_group",
           "run_peer_approach", "weighted_summary"]  # fmt: skip
