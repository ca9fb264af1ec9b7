"""The server side of the bayes stage: strategies for the core's one round loop
(:func:`fedclust.federation.run_rounds`), fed only by messages.

- :class:`Scheduled` — who trains in a round (``sequential``: one centre per round in turn,
  PVI's sequential schedule; ``synchronous``: every centre; ``sampled``: ``clients_per_round``
  centres drawn by the server's own seeded generator, VIRTUAL's schedule) and what the server
  learns from the replies (per-round metrics), around an aggregator: the core's FedAvg
  (``make_strategy("fedavg")``) or :class:`NaturalSum`.
- :class:`NaturalSum` — the PVI server update η_q ← η_q + Σ_{m∈B} Δ_m (§3.4 step 4) with the
  precision kept positive (:func:`fedclust.bayes.pvi.clip_precision`).
- :func:`serve` — ``server(proxies)`` for :func:`fedclust.federation.federate`: ``rounds``
  rounds of :func:`run_rounds`, evaluating the global model after each (an evaluation on the
  pooled test images, labelled as such, never part of the protocol).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError
from fedclust.federation import Protocol, Strategy, run_rounds
from fedclust.federation.strategy import NDArrays, Result

from . import pvi as P

SCHEDULES = ("sequential", "synchronous", "sampled")


@dataclass
class NaturalSum(Strategy):
    """η_q + Σ Δ_m (float64), then every precision ≥ 1/var_max (count in ``clipped``)."""

    var_max: float = 1e3
    clipped: list[int] = field(default_factory=list)

    def aggregate_fit(
        self, server_round: int, results: Sequence[Result], current: NDArrays | None = None
    ) -> NDArrays:
        if current is None:
            raise ValueError("the PVI server update needs the current η_q")
        eta = [np.asarray(c, dtype=np.float64) for c in current]
        for r in results:
            eta = P.add(eta, r[0])
        k = 0
        if not P.is_valid(eta):
            eta, k = P.clip_precision(eta, self.var_max)
        self.clipped.append(k)
        return eta


@dataclass
class Scheduled(Strategy):
    """A schedule and a per-round record around an aggregator strategy (module docstring)."""

    inner: Strategy
    schedule: str = "synchronous"
    clients_per_round: int | None = None
    seed: int = 0
    records: list[dict[str, Any]] = field(default_factory=list)
    latest: dict[int, tuple[float, int]] = field(default_factory=dict)  # client -> (acc, n_test)

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ConfigError(
                f"unknown schedule {self.schedule!r}",
                where="bayes.federated.methods.<m>.schedule",
                fix=f"one of {SCHEDULES}",
            )
        self._gen = np.random.default_rng(self.seed)

    def configure_fit(
        self,
        server_round: int,
        parameters: NDArrays,
        clients: Sequence[Any],
        config: Mapping[str, Any],
    ) -> list[tuple[Any, dict[str, Any]]]:
        cfg = {**config, "warm_start": int(server_round > 1)}
        if self.schedule == "sequential":
            chosen = [clients[(server_round - 1) % len(clients)]]
        elif self.schedule == "synchronous":
            chosen = list(clients)
        else:
            k = min(int(self.clients_per_round or len(clients)), len(clients))
            pick = np.sort(self._gen.choice(len(clients), size=k, replace=False))
            chosen = [clients[i] for i in pick]
        return [(c, dict(cfg)) for c in chosen]

    def aggregate_fit(
        self, server_round: int, results: Sequence[Result], current: NDArrays | None = None
    ) -> NDArrays:
        out = self.inner.aggregate_fit(server_round, results, current)
        n = np.array([float(r[1]) for r in results])
        met = [r[2] if len(r) > 2 else {} for r in results]
        rec: dict[str, Any] = {"round": server_round, "participants": len(results)}
        for key in ("loss", "train_accuracy"):
            if all(key in m for m in met):
                rec[key] = float(np.dot(n, [m[key] for m in met]) / n.sum())
        tested = [m for m in met if "test_accuracy" in m]
        if tested:
            nt = np.array([float(m["n_test"]) for m in tested])
            rec["clients_selected_accuracy"] = float(
                np.dot(nt, [m["test_accuracy"] for m in tested]) / nt.sum()
            )
            for m in tested:
                self.latest[int(m["client"])] = (float(m["test_accuracy"]), int(m["n_test"]))
            acc = np.array([a for a, _ in self.latest.values()])
            w = np.array([k for _, k in self.latest.values()], dtype=float)
            rec["clients_accuracy"] = float(np.dot(w, acc) / w.sum())
            rec["clients_seen"] = len(self.latest)
        if isinstance(self.inner, NaturalSum):
            rec["clipped"] = self.inner.clipped[-1]
        if any("units_withheld" in m for m in met):  # FedAvg centres' per-unit floor
            rec["units_withheld"] = int(sum(m.get("units_withheld", 0) for m in met))
        self.records.append(rec)
        return out


def rounds_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The per-round records as a table; ``units_withheld`` (present only when some FedAvg
    centre withheld a unit, :mod:`.unit_floor`) counts 0 in the rounds where none did."""
    rounds = pd.DataFrame(records)
    if "units_withheld" in rounds:
        rounds["units_withheld"] = rounds["units_withheld"].fillna(0).astype(int)
    return rounds


def serve(
    strategy: Scheduled,
    initial: NDArrays,
    rounds: int,
    config: Mapping[str, Any],
    protocol: Protocol,
    evaluate: Callable[[NDArrays], dict[str, float]] | None = None,
    eval_every: int = 1,
    label: str = "",
) -> Callable[[list[Any]], tuple[NDArrays, list[dict[str, Any]]]]:
    """The server function for :func:`fedclust.federation.federate`: returns the final
    global parameters and one record per round (the strategy's, plus ``evaluate``'s numbers
    every ``eval_every`` rounds and at the last)."""

    def server(proxies: list[Any]) -> tuple[NDArrays, list[dict[str, Any]]]:
        evals: dict[int, dict[str, float]] = {}

        def on_round(rnd: int, params: NDArrays) -> None:
            if evaluate is not None and (rnd % eval_every == 0 or rnd == rounds):
                evals[rnd] = evaluate(params)

        final = run_rounds(
            proxies,
            strategy,
            initial,
            rounds,
            dict(config),
            protocol,
            kind=protocol.name,
            label=label,
            on_round=on_round,
        )
        records = [{**r, **evals.get(r["round"], {})} for r in strategy.records]
        return final, records

    return server
