"""The in-process engine: a client proxy whose transport is the ledger, and the one round loop.

``run_rounds`` is Flower's ``fit`` round (``Server.fit_round``) without the network: broadcast the
global parameters (ledger), local fit at every center (it sees only its own data), the updates
back (ledger, checked against the fit protocol), ``strategy.aggregate_fit``. Every round is
logged with its time, the elapsed time and an ETA. Centers may answer :class:`Abstain` instead
of a message; the proxy records the abstention in the ledger and the round goes on without them.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from typing import Protocol as TypingProtocol

from .abstain import Abstain
from .calls import call_all
from .guard import answer
from .ledger import Ledger, Message, Protocol
from .privacy import PrivacySettings, PrivateRounds
from .privacy import current as current_privacy
from .strategy import NDArrays, Strategy

log = logging.getLogger(__name__)
SERVER = "server"
__all__ = [
    "Abstain",
    "History",
    "LedgerClientProxy",
    "RoundLog",
    "call_all",
    "fit_all",
    "fit_protocol",
    "run_rounds",
]


class FitClient(TypingProtocol):
    """Flower's ``NumPyClient.fit``: local training from ``parameters``."""

    def fit(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[NDArrays, int, dict]: ...


class EveryCentreAbstained(RuntimeError):
    """A round of :func:`run_rounds` with no reply: every centre abstained or was lost."""


def fit_protocol(name: str, metrics: Sequence[str] = ("loss",), min_samples: int = 1) -> Protocol:
    """The protocol of a fit update: parameters, the number of training samples, metrics. Its
    server step is a (weighted) mean: ``summed`` (secure aggregation and central DP apply)."""
    fields = {"parameters": "parameters", "n": "count", **{m: "aggregate" for m in metrics}}
    return Protocol(name, fields, min_samples=min_samples, summed=True)


@dataclass
class LedgerClientProxy:
    """Flower's ``ClientProxy`` with the ledger as transport: every call's arguments travel
    server → center and its answer center → server through :meth:`Ledger.send`. The centre's
    side of each exchange is :func:`.guard.reply` (its own protocol, its own disclosure policy,
    checked before the answer leaves it); a refusal is recorded as an abstention. An answer
    the guard checked against the very protocol the server expects, and made a plain copy of
    that nothing else holds (:func:`.guard.answer`: a :class:`.ledger.Checked`), is recorded by
    the ledger without a second copy and check; any other answer is copied and checked again."""

    cid: str
    client: Any
    ledger: Ledger

    # -- told ahead (fit_all / call_all): Flower sends the request now; in-process nothing
    # travels early, but a centre that can start its work before its answer is asked for
    # (``client.prefetch(method, parameters, config)``: a simulation's centres batching their
    # trainings on one shared device) learns what the request will be. The request itself is
    # sent, checked and recorded when the answer is asked for, as before.
    def push_fit(self, parameters: NDArrays, config: dict[str, Any], server_round: int,
                 kind: str, protocol: Protocol) -> None:  # fmt: skip
        self._hint("fit", parameters, config)

    def push_call(self, method: str, server_msg: Message, server_round: int, kind: str,
                  protocol: Protocol, down_protocol: Protocol | None = None) -> None:  # fmt: skip
        msg = dict(server_msg)
        self._hint(method, msg.pop("parameters", None), msg)

    def _hint(self, method: str, parameters: Any, config: Mapping[str, Any]) -> None:
        prefetch = getattr(self.client, "prefetch", None)
        if prefetch is not None:
            prefetch(method, copy.deepcopy(parameters), copy.deepcopy(dict(config)))

    def fit(
        self, parameters: NDArrays, config: dict[str, Any], server_round: int, kind: str,
        protocol: Protocol,
    ) -> tuple[NDArrays, int, dict] | None:  # fmt: skip
        down = self.ledger.send(SERVER, self.cid, {"parameters": parameters}, server_round,
                                f"{kind}_global", protocol=protocol, downlink=True)  # fmt: skip
        out = answer(self.client, "fit", down["parameters"], config, protocol)
        if isinstance(out, Abstain):
            self.ledger.abstain(self.cid, server_round, protocol, out.reason)
            return None
        up = self.ledger.send(self.cid, SERVER, out, server_round, f"{kind}_update",
                              protocol=protocol, downlink=False)  # fmt: skip
        return up["parameters"], up["n"], {k: v for k, v in up.items()
                                           if k not in ("parameters", "n")}  # fmt: skip

    def call(
        self, method: str, server_msg: Message, server_round: int, kind: str,
        protocol: Protocol, down_protocol: Protocol | None = None,
    ) -> Message | None:  # fmt: skip
        """A one-message exchange in Flower's ``NumPyClient`` style: the request's
        ``parameters`` and the rest as ``config``, ``client.<method>(parameters, config)``; the
        client answers a message or :class:`Abstain`."""
        down = self.ledger.send(SERVER, self.cid, server_msg, server_round, f"{kind}_request",
                                protocol=down_protocol, downlink=True)  # fmt: skip
        params = down.pop("parameters", None)
        out = answer(self.client, method, params, down, protocol)
        if isinstance(out, Abstain):
            self.ledger.abstain(self.cid, server_round, protocol, out.reason)
            return None
        return self.ledger.send(self.cid, SERVER, out, server_round, kind, protocol=protocol,
                                downlink=False)  # fmt: skip


def fit_all(
    jobs: Sequence[tuple[Any, NDArrays, dict[str, Any]]], server_round: int, kind: str,
    protocol: Protocol,
) -> list[tuple[NDArrays, int, dict] | None]:  # fmt: skip
    """``proxy.fit(parameters, config, ...)`` for every ``(proxy, parameters, config)``.

    A proxy that can send a request before its reply is awaited (``push_fit``: Flower) gets
    every request first, so the centres work at the same time; the answers — and the ledger's
    rows — are those of the calls one after another, in ``jobs``' order."""
    for proxy, parameters, config in jobs:
        push = getattr(proxy, "push_fit", None)
        if push is not None:
            push(parameters, config, server_round, kind, protocol)
    return [p.fit(w, cfg, server_round, kind, protocol) for p, w, cfg in jobs]


@dataclass
class RoundLog:
    """Per-round timing with an ETA (linear in the mean round time so far)."""

    label: str
    rounds: int
    t0: float = field(default_factory=time.perf_counter)
    seconds: list[float] = field(default_factory=list)
    _last: float = 0.0

    def __post_init__(self) -> None:
        self._last = self.t0

    def done(self, rnd: int, extra: str = "") -> float:
        now = time.perf_counter()
        self.seconds.append(now - self._last)
        self._last = now
        elapsed = now - self.t0
        eta = elapsed / rnd * (self.rounds - rnd)
        log.info("%s round %d/%d: %.2fs (elapsed %.1fs, ETA %.1fs)%s", self.label, rnd,
                 self.rounds, self.seconds[-1], elapsed, eta, extra)  # fmt: skip
        return eta


@dataclass
class History:
    """What the server learns per round: the sample-weighted training loss, timings."""

    loss: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    participants: list[int] = field(default_factory=list)


def run_rounds(
    proxies: Sequence[LedgerClientProxy],
    strategy: Strategy,
    parameters: NDArrays,
    rounds: int,
    config: Mapping[str, Any],
    protocol: Protocol,
    *,
    kind: str = "fit",
    label: str = "",
    on_round: Callable[[int, NDArrays], None] | None = None,
    history: History | None = None,
    privacy: PrivacySettings | None = None,
) -> NDArrays:
    """``rounds`` rounds of broadcast → local fit → ledger → ``aggregate_fit``.

    ``proxies`` come from :func:`fedclust.federation.federate`: the same loop runs in-process and,
    inside a Flower ``ServerApp``, on Flower (the transport is the proxies' business).
    ``privacy`` (default: the process's :func:`.privacy.current`): with secure aggregation or
    central DP on, each round's results are the one unmasked (noised) mean
    (:class:`.privacy.PrivateRounds`); off, this loop is unchanged.
    """
    hist = history if history is not None else History()
    clock = RoundLog(label or kind, rounds)
    settings = privacy if privacy is not None else current_privacy()
    private = (
        PrivateRounds.start(settings, proxies, strategy, rounds, label or kind)
        if settings.active else None
    )  # fmt: skip
    for rnd in range(1, rounds + 1):
        pairs = strategy.configure_fit(rnd, parameters, proxies, config)
        if private is not None:
            results, n_part = private.round(rnd, parameters, pairs, kind, protocol)
        else:
            outs = fit_all([(p, parameters, cfg) for p, cfg in pairs], rnd, kind, protocol)
            results = [out for out in outs if out is not None]
            n_part = len(results)
        if not results:
            raise EveryCentreAbstained(
                f"{label or kind} round {rnd}: every center abstained or was lost"
            )
        parameters = strategy.aggregate_fit(rnd, results, parameters)
        if all("loss" in r[2] for r in results):
            tot = sum(r[1] for r in results)
            hist.loss.append(float(sum(r[2]["loss"] * r[1] for r in results) / tot))
        hist.participants.append(n_part)
        clock.done(rnd, f", loss {hist.loss[-1]:.4g}" if hist.loss else "")
        hist.seconds.append(clock.seconds[-1])
        if on_round is not None:
            on_round(rnd, parameters)
    return parameters
