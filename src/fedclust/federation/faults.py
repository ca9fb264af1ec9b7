"""A centre that stops answering, and what a run does about it (issue 30, B.5).

A transport that can lose a centre (a Flower SuperNode that crashed or was shut down: Flower's
"Node Unavailable" error reply, or no reply within the run's deadline) tells the federation
through :class:`Dropouts`, the run's policy shared by its client proxies:

- **FedAvg-type protocols with ``min_available``** (Flower's ``min_available_clients``): while at
  least ``min_available`` centres remain, a lost centre is *dropped*: the ledger records it
  (``kind == "dropped"``, the round and the reason), the proxy answers ``None`` — as for an
  abstention, which every round loop already skips — now and for every later request, and the
  run goes on with the remaining centres.
- **exact protocols** (``min_available=None``, the default: the result is defined over every
  centre, e.g. heart FL's per-hospital table, a sequential visit, an exact distance) stop at
  once with :class:`CentreLost`, which names the site, the round and the protocol.

The in-process transport never loses a centre.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fedclust.errors import FedclustError

from .ledger import Ledger, Protocol


class CentreLost(FedclustError):
    """A centre stopped answering and the run cannot go on without it."""

    def __init__(self, cid: str, round: int, protocol: str, reason: str, fix: str | None = None):
        self.cid, self.round, self.protocol, self.reason = cid, round, protocol, reason
        super().__init__(
            f"centre {cid!r} was lost in round {round} of protocol {protocol!r}: {reason}",
            where=f"centre {cid!r}, round {round}, protocol {protocol!r}",
            fix=fix
            or "restart the centre's SuperNode and run again; FedAvg-type protocols can "
            "go on without a lost centre when the run sets min_available",
        )


@dataclass
class Dropouts:
    """The run's policy for lost centres (shared by all of its proxies).

    ``min_available``: the fewest centres a round may go on with (``None``: every centre is
    needed, a loss stops the run). ``lost``: centre → the round it was lost in.
    """

    n_centres: int
    min_available: int | None = None
    lost: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.min_available is not None and not 1 <= self.min_available <= self.n_centres:
            raise ValueError(f"min_available must be in 1..{self.n_centres} (or None)")

    def lose(self, cid: str, round: int, protocol: Protocol | str, reason: str,
             ledger: Ledger) -> None:  # fmt: skip
        """``cid`` stopped answering in ``round``: record the drop, or raise :class:`CentreLost`."""
        pname = protocol.name if isinstance(protocol, Protocol) else str(protocol)
        remaining = self.n_centres - len(self.lost) - (cid not in self.lost)
        if self.min_available is None:
            raise CentreLost(cid, round, pname, f"{reason}; this protocol needs every centre")
        if remaining < self.min_available:
            raise CentreLost(cid, round, pname, f"{reason}; {remaining} centre(s) left, "
                             f"min_available = {self.min_available}")  # fmt: skip
        self.lost.setdefault(cid, round)
        ledger.dropped(cid, round, pname, reason)

    def skip(self, cid: str, round: int, protocol: Protocol | str, ledger: Ledger) -> bool:
        """Whether ``cid`` is already lost (then the request is recorded as dropped, not sent)."""
        if cid not in self.lost:
            return False
        pname = protocol.name if isinstance(protocol, Protocol) else str(protocol)
        ledger.dropped(cid, round, pname, f"lost in round {self.lost[cid]}")
        return True
