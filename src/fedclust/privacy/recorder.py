"""A ledger that keeps what it delivers: the record of an honest-but-curious server.

The core :class:`~fedclust.federation.Ledger` records who sent what kind of message and how many
floats; a server that *stores* its traffic keeps the values too. :class:`RecordingLedger` does
exactly that (the deep copy the receiver got), so the attacks of :mod:`fedclust.privacy.attacks`
see what a real server would see, and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fedclust.federation import Ledger, Message


@dataclass
class RecordingLedger(Ledger):
    """:class:`Ledger` that also keeps each delivered message (``kept``: one
    ``(record, message)`` per send, in order)."""

    kept: list[tuple[dict[str, Any], Message]] = field(default_factory=list)

    def send(self, sender, receiver, message, round=0, kind="", protocol=None, **kw) -> Message:
        out = super().send(sender, receiver, message, round, kind, protocol, **kw)
        self.kept.append((dict(self.records[-1]), out))
        return out

    def received(
        self, protocol: str | None = None, sender: str | None = None, kind: str | None = None
    ) -> list[tuple[dict[str, Any], Message]]:
        """The kept ``(record, message)`` pairs matching every given filter."""
        return [
            (r, m)
            for r, m in self.kept
            if (protocol is None or r["protocol"] == protocol)
            and (sender is None or r["sender"] == sender)
            and (kind is None or r["kind"] == kind)
        ]
