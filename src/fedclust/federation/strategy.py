"""Server strategies, once, in Flower's shape (seed 000 §1.8, seed 004 §4.1).

A strategy has ``configure_fit(server_round, parameters, clients, config)`` (which clients train,
with which config) and ``aggregate_fit(server_round, results, current) -> parameters`` where
``results`` are ``(parameters, num_examples[, metrics])`` as Flower's ``FitRes``. Strategies see
only messages. The Flower engine (when there is one) runs these strategies, not Flower's, so the
numbers never depend on the engine.

FedAdam / FedYogi follow Flower's ``flwr.server.strategy.FedAdam`` / ``FedYogi`` as written in the
Flower 1.x releases that name the round ``server_round`` and have *no* bias correction (e.g.
adap/flower commit 18638bc7, ``fedadam.py``): zero-initialised moments, Δ = FedAvg − current,
m ← β1 m + (1−β1) Δ, v ← β2 v + (1−β2) Δ² (Adam) or v ← v − (1−β2) Δ² sign(v − Δ²) (Yogi),
x ← x + η m / (√v + τ). Later Flower releases scale η by √(1−β2^t)/(1−β1^t) in FedAdam
(``eta_norm``); ``bias_correction=True`` does that here, off by default (the thesis' numbers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedclust.errors import ConfigError

NDArrays = list[np.ndarray]
Result = tuple  # (parameters, num_examples) or (parameters, num_examples, metrics)
STRATEGIES = ("fedavg", "fedavg_simple", "fedadam", "fedyogi", "published")


def weighted_average(results: Sequence[Result]) -> NDArrays:
    """FedAvg aggregate Σ_k (n_k / n) w_k layer-wise (Algorithm 1; seed 004 §4.1 ``ave_weights``).

    Computed in float64 in client order, cast back to the first client's dtype: the former
    ``dec.federated.weighted_average`` and ``decentral.aggregation.aggregate`` bit for bit.
    """
    if not results:
        raise ValueError("FedAvg needs at least one result")
    n = np.asarray([float(r[1]) for r in results], dtype=np.float64)
    if (n <= 0).any():
        raise ValueError("sample counts must be positive")
    coef = n / n.sum()
    first = results[0][0]
    if any(len(r[0]) != len(first) for r in results):
        raise ValueError("all parameter lists must have the same length")
    return [
        sum(
            c * np.asarray(r[0][i], dtype=np.float64) for c, r in zip(coef, results, strict=True)
        ).astype(np.asarray(first[i]).dtype)
        for i in range(len(first))
    ]


def aggregate(weights_list: Sequence[NDArrays], n_list: Sequence[float]) -> NDArrays:
    """``Σ_j (n_j / N) W_j`` layer-wise from parallel lists (float32 out, as Keras weights)."""
    if len(weights_list) != len(n_list):
        raise ValueError(f"{len(weights_list)} weight sets but {len(n_list)} sample counts")
    if len(n_list) == 0:
        raise ValueError("sample counts must be positive and non-empty")
    out = weighted_average([(w, n) for w, n in zip(weights_list, n_list, strict=True)])
    return [np.asarray(a, dtype=np.float32) for a in out]


def ave_weights_published(n_list: Sequence[float], weights_list: Sequence[NDArrays]) -> NDArrays:
    """Seed 004's published ``ave_weights`` (code block 3.3): silently uses only the first
    ``len(n_list)`` entries of ``weights_list`` — the root of the published exchange bug (§4.9)."""
    if len(weights_list) < len(n_list):
        raise ValueError("ave_weights needs at least as many weight sets as sample counts")
    return aggregate(list(weights_list)[: len(n_list)], n_list)


class Strategy:
    """Flower-shaped base: every client trains every round with the same config."""

    def configure_fit(
        self, server_round: int, parameters: NDArrays, clients: Sequence[Any],
        config: Mapping[str, Any],
    ) -> list[tuple[Any, dict[str, Any]]]:  # fmt: skip
        return [(c, dict(config)) for c in clients]

    def aggregate_fit(
        self, server_round: int, results: Sequence[Result], current: NDArrays | None = None
    ) -> NDArrays:
        raise NotImplementedError


@dataclass
class FedAvg(Strategy):
    """FedAvg. ``weighting``: ``weighted`` (by ``num_examples``; WMA) or ``simple`` (SMA)."""

    weighting: str = "weighted"

    def __post_init__(self) -> None:
        if self.weighting not in ("weighted", "simple"):
            raise ValueError("weighting must be 'weighted' or 'simple'")

    def aggregate_fit(
        self, server_round: int, results: Sequence[Result], current: NDArrays | None = None
    ) -> NDArrays:
        if self.weighting == "simple":
            results = [(r[0], 1) for r in results]
        return weighted_average(results)


@dataclass
class PublishedAverage(Strategy):
    """Seed 004's published averaging (``ave_weights``): weighted by the first ``len(n)`` weight
    sets; in a server round (one weight set per count) it equals weighted FedAvg in float32."""

    def aggregate_fit(
        self, server_round: int, results: Sequence[Result], current: NDArrays | None = None
    ) -> NDArrays:
        return ave_weights_published([r[1] for r in results], [r[0] for r in results])


@dataclass
class FedOpt(FedAvg):
    """FedAdam (``kind="adam"``) / FedYogi (``kind="yogi"``) server step (module docstring)."""

    kind: str = "adam"
    eta: float = 0.01
    beta_1: float = 0.9
    beta_2: float = 0.999
    tau: float = 1e-3
    bias_correction: bool = False
    m: NDArrays | None = field(default=None, repr=False)
    v: NDArrays | None = field(default=None, repr=False)
    t: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in ("adam", "yogi"):
            raise ValueError("FedOpt kind must be 'adam' or 'yogi'")

    def aggregate_fit(
        self, server_round: int, results: Sequence[Result], current: NDArrays | None = None
    ) -> NDArrays:
        if current is None:
            raise ValueError("FedOpt needs the current global parameters")
        avg = super().aggregate_fit(server_round, results, current)
        delta = [a.astype(np.float64) - np.asarray(c, dtype=np.float64)
                 for a, c in zip(avg, current, strict=True)]  # fmt: skip
        if self.m is None or self.v is None:
            self.m = [np.zeros_like(d) for d in delta]
            self.v = [np.zeros_like(d) for d in delta]
        self.t += 1
        b1, b2 = self.beta_1, self.beta_2
        self.m = [b1 * m + (1 - b1) * d for m, d in zip(self.m, delta, strict=True)]
        if self.kind == "adam":
            self.v = [b2 * v + (1 - b2) * d * d for v, d in zip(self.v, delta, strict=True)]
        else:
            self.v = [v - (1 - b2) * d * d * np.sign(v - d * d)
                      for v, d in zip(self.v, delta, strict=True)]  # fmt: skip
        eta = self.eta
        if self.bias_correction:
            eta = eta * np.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        return [
            (c + eta * m / (np.sqrt(v) + self.tau)).astype(np.asarray(c).dtype)
            for c, m, v in zip(current, self.m, self.v, strict=True)
        ]


def FedAdam(**kw: Any) -> FedOpt:
    return FedOpt(kind="adam", **kw)


def FedYogi(**kw: Any) -> FedOpt:
    return FedOpt(kind="yogi", **kw)


def make_strategy(name: str, server: Mapping[str, float] | None = None) -> Strategy:
    """``fedavg`` | ``fedavg_simple`` | ``fedadam`` | ``fedyogi`` (``server``: eta, beta_1,
    beta_2, tau[, bias_correction]) | ``published``."""
    if name == "fedavg":
        return FedAvg()
    if name == "fedavg_simple":
        return FedAvg("simple")
    if name == "published":
        return PublishedAverage()
    if name in ("fedadam", "fedyogi"):
        s = dict(server or {})
        missing = [k for k in ("eta", "beta_1", "beta_2", "tau") if k not in s]
        if missing:
            raise ConfigError(f"{name} needs server settings {missing}", where="federated.server")
        return FedOpt(
            kind=name[3:], eta=float(s["eta"]), beta_1=float(s["beta_1"]),
            beta_2=float(s["beta_2"]), tau=float(s["tau"]),
            bias_correction=bool(s.get("bias_correction", False)),
        )  # fmt: skip
    raise ConfigError(f"unknown strategy {name!r}", where="federated strategy",
                      fix=f"one of {STRATEGIES}")  # fmt: skip
