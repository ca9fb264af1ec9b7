"""The one seam between a federated method and what carries its messages.

A stage writes its federated method as

- **centre objects** (one per centre, holding only that centre's data, with a ``cid`` and the
  methods the server may call, ``method(parameters, config) -> message | Abstain``), and
- a **server function** ``server(proxies) -> result`` that talks to the centres only through
  the proxies (``proxy.fit(...)``, ``proxy.call(...)``, :func:`fedclust.federation.run_rounds`).

:func:`federate` connects the two through a :class:`Transport`, which the rule script passes in
as an object (built once from the config by :func:`fedclust.transports.from_config`), as
Flower's ``Strategy.start(grid=...)`` and pydeseq2's ``DeseqDataSet(inference=...)`` take theirs.
Stages never name an engine. :data:`INPROCESS` is the core's own transport (the ledger carries
every message); the Flower transports live in :mod:`fedclust.flower` and register themselves
here, so this core never imports Flower.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from typing import Protocol as TypingProtocol

from .engine import LedgerClientProxy
from .ledger import Ledger

T = TypeVar("T")
Server = Callable[[list[Any]], T]


def centre_id(centre: Any) -> str:
    """A centre object's name: its ``cid`` (or, for older stage objects, ``name``)."""
    cid = getattr(centre, "cid", None)
    return str(cid if cid is not None else centre.name)


class Transport(TypingProtocol):
    """What carries a federation's messages: builds one client proxy per centre and runs the
    server function with them."""

    name: str

    def run(self, centres: Sequence[Any], server: Server[T], ledger: Ledger) -> T: ...


@dataclass(frozen=True)
class InProcess:
    """The core's transport: centres in this process, every message through the ledger."""

    name: str = "inprocess"

    def run(self, centres: Sequence[Any], server: Server[T], ledger: Ledger) -> T:
        return server([LedgerClientProxy(centre_id(c), c, ledger) for c in centres])


INPROCESS = InProcess()

#: transport name -> factory; :mod:`fedclust.flower` adds its transports on import.
TRANSPORTS: dict[str, Callable[[], Transport]] = {"inprocess": lambda: INPROCESS}


def register(name: str, factory: Callable[[], Transport]) -> None:
    """Make a transport available by name (used by :mod:`fedclust.flower`)."""
    TRANSPORTS[name] = factory


def federate(
    centres: Sequence[Any],
    server: Server[T],
    *,
    ledger: Ledger | None = None,
    transport: Transport = INPROCESS,
) -> T:
    """Run ``server(proxies)`` with one proxy per centre, the messages carried by ``transport``
    and recorded (and checked) by ``ledger``. Returns what the server function returns."""
    ids = [centre_id(c) for c in centres]
    if len(set(ids)) != len(ids):
        raise ValueError(f"centre ids must be unique, got {ids}")
    return transport.run(list(centres), server, ledger if ledger is not None else Ledger())
