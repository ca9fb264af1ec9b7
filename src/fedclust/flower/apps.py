"""The ``ClientApp`` around a core client object and the ``ServerApp``-side client proxy.

Client side (:func:`make_client_app`): a Flower ``ClientApp`` whose handlers run the centre side
of the exchange, :func:`fedclust.federation.guard.reply` — the very code the in-process proxy
runs — for ``fit`` (message type ``train``), ``evaluate`` and any other method by name
(``query``), in Flower's ``NumPyClient`` calling convention ``method(parameters, config)``. The
centre applies the protocol *it* declares for the method (the request only names it,
``__protocol__``) and its own disclosure policy, *before* the reply is encoded; a refusal or an
:class:`~fedclust.federation.Abstain` goes back as its reason only. No algorithm lives here.

Server side (:class:`FlowerClientProxy`): the core's ``LedgerClientProxy`` interface (``fit``,
``call``) with a Flower ``Grid`` as transport. The ledger hook sits on the server: every request
is passed through :meth:`Ledger.send` before it is sent and every received reply as it arrives,
so the ledger counts (and checks) exactly what crossed the wire.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flwr.app import Context, Message
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid

from fedclust.federation import Abstain, Ledger, Protocol, Strategy
from fedclust.federation.guard import reply
from fedclust.federation.transport import centre_id

from .records import decode, encode

SERVER = "server"
METHOD = "__method__"
PROTOCOL = "__protocol__"
ABSTAIN = "__abstain__"
CID = "__cid__"
REPLY_TIMEOUT_S = 3600.0


def answer(client: Any, method: str, request: dict[str, Any]) -> dict[str, Any]:
    """The centre side of one request (:func:`fedclust.federation.guard.reply`), as a message."""
    if method == CID:
        return {"cid": centre_id(client)}
    protocol = request.pop(PROTOCOL, None)
    params = request.pop("parameters", None)
    out = reply(client, method, params, request, None if protocol is None else str(protocol))
    if isinstance(out, Abstain):
        return {ABSTAIN: out.reason}
    return out


def make_client_app(resolve: Callable[[Context], Any]) -> ClientApp:
    """A ``ClientApp`` serving the core client object ``resolve(context)`` of its SuperNode."""
    app = ClientApp()

    def handle(msg: Message, context: Context, method: str | None = None) -> Message:
        request = decode(msg.content)
        name = method or str(request.pop(METHOD))
        request.pop(METHOD, None)
        return Message(encode(answer(resolve(context), name, request)), reply_to=msg)

    @app.train()
    def _train(msg: Message, context: Context) -> Message:
        return handle(msg, context, "fit")

    @app.evaluate()
    def _evaluate(msg: Message, context: Context) -> Message:
        return handle(msg, context, "evaluate")

    @app.query()
    def _query(msg: Message, context: Context) -> Message:
        return handle(msg, context)

    return app


def exchange(
    grid: Grid,
    node_id: int,
    message_type: str,
    payload: dict[str, Any],
    method: str | None = None,
    timeout: float = REPLY_TIMEOUT_S,
) -> dict[str, Any]:
    """One request to one SuperNode and its decoded reply (errors name the node)."""
    body = {**payload, METHOD: method} if method else dict(payload)
    msg = Message(encode(body), dst_node_id=node_id, message_type=message_type)
    replies = list(grid.send_and_receive([msg], timeout=timeout))
    if not replies:
        raise RuntimeError(f"no reply from node {node_id} to {message_type} within {timeout}s")
    rep = replies[0]
    if rep.has_error():
        raise RuntimeError(f"node {node_id} failed on {message_type}: {rep.error.reason}")
    return decode(rep.content)


def discover(grid: Grid, n: int, timeout: float = 60.0) -> dict[str, int]:
    """Wait for ``n`` SuperNodes and ask each its center id: ``{cid: node_id}``."""
    t0 = time.monotonic()
    while len(list(grid.get_node_ids())) < n:
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(
                f"only {len(list(grid.get_node_ids()))} of {n} SuperNodes "
                f"connected within {timeout}s"
            )
        time.sleep(0.05)
    out = {
        str(exchange(grid, nid, "query", {}, CID)["cid"]): nid
        for nid in sorted(grid.get_node_ids())
    }
    if len(out) != n:
        raise RuntimeError(f"{n} SuperNodes but center ids {sorted(out)}")
    return out


def collect(grid: Grid, message_id: str, node_id: int, timeout: float = REPLY_TIMEOUT_S) -> dict:
    """The reply to an already pushed message (see :class:`FlowerStrategy`)."""
    t0 = time.monotonic()
    while True:
        replies = list(grid.pull_messages([message_id]))
        if replies:
            rep = replies[0]
            if rep.has_error():
                raise RuntimeError(f"node {node_id} failed on train: {rep.error.reason}")
            return decode(rep.content)
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"no reply from node {node_id} to train within {timeout}s")
        time.sleep(0.05)


@dataclass
class FlowerStrategy(Strategy):
    """Flower-side adapter of a core strategy. ``configure_fit`` asks the core strategy who trains
    with which config and sends the round's ``train`` messages to all of them at once (the centers
    train in parallel); each :class:`FlowerClientProxy` then collects its reply, in the core loop's
    order. ``aggregate_fit`` is the core strategy's. Used by the deployment; the simulation keeps
    one request at a time (its centers share one process and one global torch RNG)."""

    inner: Strategy
    grid: Grid
    protocol: Protocol

    def configure_fit(
        self, server_round: int, parameters: list, clients: Sequence[Any], config: Any
    ) -> list[tuple[Any, dict[str, Any]]]:
        pairs = self.inner.configure_fit(server_round, parameters, clients, config)
        msgs = [
            Message(encode({**cfg, "parameters": parameters, PROTOCOL: self.protocol.name}),
                    dst_node_id=p.node_id, message_type="train")
            for p, cfg in pairs
        ]  # fmt: skip
        ids = list(self.grid.push_messages(msgs))
        if len(ids) != len(pairs):
            raise RuntimeError(f"pushed {len(ids)} of {len(pairs)} train messages")
        for (p, _), mid in zip(pairs, ids, strict=True):
            p.pending = mid
        return pairs

    def aggregate_fit(self, server_round: int, results: Sequence, current: list | None = None):
        return self.inner.aggregate_fit(server_round, results, current)


@dataclass
class FlowerClientProxy:
    """The core's ``LedgerClientProxy`` over Flower: same ``fit`` / ``call`` interface."""

    cid: str
    node_id: int
    grid: Grid
    ledger: Ledger
    pending: str | None = field(default=None, repr=False)  # a train message already pushed

    def fit(
        self,
        parameters: list,
        config: dict[str, Any],
        server_round: int,
        kind: str,
        protocol: Protocol,
    ) -> tuple[list, int, dict] | None:
        down = self.ledger.send(
            SERVER,
            self.cid,
            {"parameters": parameters},
            server_round,
            f"{kind}_global",
            protocol=protocol,
            downlink=True,
        )
        if self.pending is not None:  # sent by FlowerStrategy.configure_fit (same parameters)
            out = collect(self.grid, self.pending, self.node_id)
            self.pending = None
        else:
            out = self._train(down["parameters"], config, protocol)
        if ABSTAIN in out:
            self.ledger.abstain(self.cid, server_round, protocol, str(out[ABSTAIN]))
            return None
        up = self.ledger.send(
            self.cid, SERVER, out, server_round, f"{kind}_update", protocol=protocol,
            downlink=False,
        )  # fmt: skip
        return (
            up["parameters"],
            up["n"],
            {k: v for k, v in up.items() if k not in ("parameters", "n")},
        )

    def _train(self, parameters: list, config: dict[str, Any], protocol: Protocol) -> dict:
        payload = {**config, "parameters": parameters, PROTOCOL: protocol.name}
        return exchange(self.grid, self.node_id, "train", payload)

    def call(
        self,
        method: str,
        server_msg: dict[str, Any],
        server_round: int,
        kind: str,
        protocol: Protocol,
        down_protocol: Protocol | None = None,
    ) -> dict[str, Any] | None:
        down = self.ledger.send(
            SERVER, self.cid, server_msg, server_round, f"{kind}_request", protocol=down_protocol,
            downlink=True,
        )  # fmt: skip
        out = exchange(self.grid, self.node_id, "query", {**down, PROTOCOL: protocol.name}, method)
        if ABSTAIN in out:
            self.ledger.abstain(self.cid, server_round, protocol, str(out[ABSTAIN]))
            return None
        return self.ledger.send(self.cid, SERVER, out, server_round, kind, protocol=protocol,
                                downlink=False)  # fmt: skip
