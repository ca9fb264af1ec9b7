"""The ``ClientApp`` around a core centre object and the ``ServerApp``-side client proxy.

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
so the ledger counts (and checks) exactly what crossed the wire. ``push_fit`` / ``push_call``
send a request before its reply is awaited (:func:`fedclust.federation.fit_all` /
:func:`~fedclust.federation.call_all` send a round's requests to every centre at once); the
ledger still lists each exchange's request and reply together, in the centres' order. Replies
are pulled every :data:`POLL_S` (Flower's own ``send_and_receive`` sleeps 3 s between pulls
on a deployment). A centre whose ``ClientApp`` raised fails the run with
:class:`CentreFailed` (the SuperNode's own error message); a centre whose node is gone
(Flower's "Node Unavailable" error reply, or no reply within the proxy's ``timeout``) is lost:
the run's :class:`~fedclust.federation.Dropouts` drops it or stops (:mod:`fedclust.federation.
faults`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flwr.app import Context, Message
from flwr.clientapp import ClientApp
from flwr.common.constant import ErrorCode
from flwr.serverapp import Grid

from fedclust.federation import Abstain, Ledger, Protocol
from fedclust.federation.faults import CentreLost, Dropouts
from fedclust.federation.guard import reply
from fedclust.federation.transport import centre_id

from .records import decode, encode

SERVER = "server"
METHOD = "__method__"
PROTOCOL = "__protocol__"
ABSTAIN = "__abstain__"
CID = "__cid__"
REPLY_TIMEOUT_S = 3600.0
POLL_S = 0.05


class CentreFailed(RuntimeError):
    """A centre's ``ClientApp`` raised: the SuperNode's error, with the centre and request."""


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


def make_client_app(
    resolve: Callable[[Context], Any],
    describe: Callable[[Context, Any], Mapping[str, Any]] | None = None,
    save: Callable[[Context, Any], None] | None = None,
) -> ClientApp:
    """A ``ClientApp`` serving the core centre object ``resolve(context)`` of its SuperNode.

    ``describe(context, centre)``: what the opening handshake tells the server besides the centre's
    name (shapes the server needs; :mod:`.deploy`). ``save(context, centre)``: keep the centre's
    state for the next message (a deployment starts a process per message)."""
    app = ClientApp()

    def handle(msg: Message, context: Context, method: str | None = None) -> Message:
        request = decode(msg.content)
        name = method or str(request.pop(METHOD))
        request.pop(METHOD, None)
        centre = resolve(context)
        out = answer(centre, name, request)
        if name == CID and describe is not None:
            out.update(describe(context, centre))
        if save is not None:
            save(context, centre)
        return Message(encode(out), reply_to=msg)

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


# ---------------------------------------------------------------- server side
def push(grid: Grid, node_id: int, message_type: str, payload: Mapping[str, Any],
         method: str | None = None) -> str:  # fmt: skip
    """Send one request; return its message id."""
    body = {**payload, METHOD: method} if method else dict(payload)
    msg = Message(encode(body), dst_node_id=node_id, message_type=message_type)
    ids = list(grid.push_messages([msg]))
    if len(ids) != 1:
        raise RuntimeError(f"the SuperLink did not accept the {message_type} for node {node_id}")
    return ids[0]


def wait_reply(grid: Grid, message_id: str, timeout: float = REPLY_TIMEOUT_S) -> Message | None:
    """The reply to ``message_id`` (Flower's ``Message``, possibly an error), ``None`` when
    none came within ``timeout`` seconds."""
    t0 = time.monotonic()
    while True:
        replies = list(grid.pull_messages([message_id]))
        if replies:
            return replies[0]
        if time.monotonic() - t0 > timeout:
            return None
        time.sleep(POLL_S)


def discover(grid: Grid, n: int, timeout: float = 60.0,
             schema: dict[str, dict[str, Any]] | None = None) -> dict[str, int]:  # fmt: skip
    """Wait for ``n`` SuperNodes and ask each its centre id (all at once): ``{cid: node_id}``.
    ``schema`` (optional) receives what each centre's handshake said besides its name."""
    t0 = time.monotonic()
    while len(list(grid.get_node_ids())) < n:
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(
                f"only {len(list(grid.get_node_ids()))} of {n} SuperNodes "
                f"connected within {timeout}s"
            )
        time.sleep(POLL_S)
    nodes = sorted(grid.get_node_ids())
    pending = [(nid, push(grid, nid, "query", {}, CID)) for nid in nodes]
    out: dict[str, int] = {}
    for nid, mid in pending:
        rep = wait_reply(grid, mid, max(timeout, 1.0))
        if rep is None:
            raise RuntimeError(f"SuperNode {nid} did not answer the handshake within {timeout}s")
        if rep.has_error():
            raise CentreFailed(f"SuperNode {nid} failed on the handshake: {rep.error.reason}")
        info = decode(rep.content)
        cid = str(info.pop("cid"))
        if cid in out:
            raise RuntimeError(f"SuperNodes {out[cid]} and {nid} both serve centre {cid!r}")
        out[cid] = nid
        if schema is not None:
            schema[cid] = info
    if len(out) != n:
        raise RuntimeError(f"{n} SuperNodes but centre ids {sorted(out)}")
    return out


def _check_only(ledger: Ledger, message: Mapping[str, Any], protocol: Protocol | None) -> None:
    """The ledger's checks of a request about to be sent, without recording it (the exchange
    is recorded, request and reply together, when its reply is collected)."""
    Ledger(servers=ledger.servers).send(SERVER, "", dict(message), 0, "", protocol=protocol,
                                        downlink=True)  # fmt: skip


@dataclass
class FlowerClientProxy:
    """The core's ``LedgerClientProxy`` over Flower: same ``fit`` / ``call`` interface.

    ``dropouts``: the run's policy for a centre whose node is gone (``None``: every loss stops
    the run); ``timeout``: seconds to wait for a reply before the centre counts as lost."""

    cid: str
    node_id: int
    grid: Grid
    ledger: Ledger
    dropouts: Dropouts | None = None
    timeout: float = REPLY_TIMEOUT_S
    _pending: dict[tuple, str] = field(default_factory=dict, repr=False)

    # -- one exchange: send (now or earlier), then collect
    def _lost(self) -> bool:
        return self.dropouts is not None and self.cid in self.dropouts.lost

    def _collect(self, key: tuple, send: Callable[[], str], server_round: int,
                 protocol: Protocol, what: str) -> dict[str, Any] | None:  # fmt: skip
        mid = self._pending.pop(key, None) or send()
        rep = wait_reply(self.grid, mid, self.timeout)
        if rep is None:
            reason = f"no reply to {what} within {self.timeout:g}s"
        elif rep.has_error() and rep.error.code == ErrorCode.NODE_UNAVAILABLE:
            reason = f"Node Unavailable (SuperNode {self.node_id} stopped reporting)"
        elif rep.has_error():
            raise CentreFailed(
                f"centre {self.cid!r} (SuperNode {self.node_id}) failed on {what} in round "
                f"{server_round}: {rep.error.reason}"
            )
        else:
            return decode(rep.content)
        if self.dropouts is None:
            raise CentreLost(self.cid, server_round, protocol.name,
                             f"{reason}; this protocol needs every centre")  # fmt: skip
        self.dropouts.lose(self.cid, server_round, protocol, reason, self.ledger)
        return None

    def push_fit(self, parameters: list, config: dict[str, Any], server_round: int, kind: str,
                 protocol: Protocol) -> None:  # fmt: skip
        """Send this round's ``train`` request now; :meth:`fit` collects the reply."""
        if self._lost():
            return
        _check_only(self.ledger, {"parameters": parameters}, protocol)
        payload = {**config, "parameters": parameters, PROTOCOL: protocol.name}
        self._pending[("fit", server_round, kind)] = push(self.grid, self.node_id, "train",
                                                          payload)  # fmt: skip

    def fit(
        self,
        parameters: list,
        config: dict[str, Any],
        server_round: int,
        kind: str,
        protocol: Protocol,
    ) -> tuple[list, int, dict] | None:
        if self.dropouts is not None and self.dropouts.skip(self.cid, server_round, protocol,
                                                             self.ledger):  # fmt: skip
            return None
        down = self.ledger.send(
            SERVER, self.cid, {"parameters": parameters}, server_round, f"{kind}_global",
            protocol=protocol, downlink=True,
        )  # fmt: skip
        payload = {**config, "parameters": down["parameters"], PROTOCOL: protocol.name}
        out = self._collect(("fit", server_round, kind),
                            lambda: push(self.grid, self.node_id, "train", payload),
                            server_round, protocol, "train")  # fmt: skip
        if out is None:
            return None
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

    def push_call(self, method: str, server_msg: dict[str, Any], server_round: int, kind: str,
                  protocol: Protocol, down_protocol: Protocol | None = None) -> None:  # fmt: skip
        """Send the request of :meth:`call` now; :meth:`call` collects the reply."""
        if self._lost():
            return
        _check_only(self.ledger, server_msg, down_protocol)
        payload = {**server_msg, PROTOCOL: protocol.name}
        self._pending[("call", method, server_round, kind)] = push(
            self.grid, self.node_id, "query", payload, method
        )

    def call(
        self,
        method: str,
        server_msg: dict[str, Any],
        server_round: int,
        kind: str,
        protocol: Protocol,
        down_protocol: Protocol | None = None,
    ) -> dict[str, Any] | None:
        if self.dropouts is not None and self.dropouts.skip(self.cid, server_round, protocol,
                                                             self.ledger):  # fmt: skip
            return None
        down = self.ledger.send(
            SERVER, self.cid, server_msg, server_round, f"{kind}_request", protocol=down_protocol,
            downlink=True,
        )  # fmt: skip
        payload = {**down, PROTOCOL: protocol.name}
        out = self._collect(("call", method, server_round, kind),
                            lambda: push(self.grid, self.node_id, "query", payload, method),
                            server_round, protocol, method)  # fmt: skip
        if out is None:
            return None
        if ABSTAIN in out:
            self.ledger.abstain(self.cid, server_round, protocol, str(out[ABSTAIN]))
            return None
        return self.ledger.send(self.cid, SERVER, out, server_round, kind, protocol=protocol,
                                downlink=False)  # fmt: skip
