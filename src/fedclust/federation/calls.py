"""One request to every centre at once (:func:`call_all`): below the round engine and the
secure sum (:mod:`.privacy`), which both fan a request out with it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .ledger import Message, Protocol


def call_all(
    proxies: Sequence[Any], method: str, requests: Message | Sequence[Message],
    server_round: int, kind: str, protocol: Protocol, down_protocol: Protocol | None = None,
) -> list[Message | None]:  # fmt: skip
    """``proxy.call(method, request, ...)`` for every proxy (one request for all, or one each),
    sent all at once where the transport can (``push_call``), answers in ``proxies``' order
    (``None`` for a centre that abstained or was dropped)."""
    reqs = [requests] * len(proxies) if isinstance(requests, Mapping) else list(requests)
    if len(reqs) != len(proxies):
        raise ValueError(f"{len(reqs)} requests for {len(proxies)} centres")
    for proxy, req in zip(proxies, reqs, strict=True):
        push = getattr(proxy, "push_call", None)
        if push is not None:
            push(method, req, server_round, kind, protocol, down_protocol)
    return [p.call(method, r, server_round, kind, protocol, down_protocol)
            for p, r in zip(proxies, reqs, strict=True)]  # fmt: skip
