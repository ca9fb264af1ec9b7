"""The HAC protocols' declarations for the ledger's disclosure rules (issue 13).

Each message type of the federated HAC algorithms is declared as a
:class:`fedclust.ledger.Protocol` whose ``min_samples`` is the run's ``n_min``: the ledger then
refuses any centroid / sum / size over fewer than ``n_min`` samples, and a center that cannot meet
the rule *abstains* (:func:`abstain`) instead of sending. Distances and merge candidates are
declared ``metadata``: the thesis' protocol discloses them by design (spec §5.3 "Shared with the
server"), they summarise no sample set of their own.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from ..ledger import Ledger

try:
    from ..ledger import Protocol
except ImportError:  # pragma: no cover - before the core ledger (issue 13) is merged

    @dataclass(frozen=True)
    class Protocol:  # type: ignore[no-redef]
        name: str
        fields: Any = field(default_factory=dict)
        min_samples: int = 1
        per_sample: bool = False


SERVER = "server"
_HAS_PROTOCOL = "protocol" in inspect.signature(Ledger.send).parameters


def send(led: Ledger, sender: str, receiver: str, msg: dict, round: int, kind: str,
         protocol: Protocol) -> dict:  # fmt: skip
    """``led.send`` with the message's protocol (checked by the core ledger)."""
    if _HAS_PROTOCOL:
        return led.send(sender, receiver, msg, round, kind, protocol=protocol)
    return led.send(sender, receiver, msg, round, kind)  # pragma: no cover


def genewise_protocol(n_min: int) -> Protocol:
    """Algorithm 3: per-gene moments (round 1) and additive distance contributions (round 2)."""
    agg = ("mean", "m2", "sumsq", "constant", "d", "norm", "cnorm")
    return Protocol(
        "hac.genewise", {"n": "count", **{k: "aggregate" for k in agg}}, min_samples=int(n_min)
    )


def simultaneous_protocol(n_min: int) -> Protocol:
    """§3.3.2: centroids and sizes of the recursive cut, partial dendrograms."""
    return Protocol(
        "hac.simultaneous",
        {
            "centroids": "aggregate",
            "sizes": "count",
            "dendrogram": "metadata",
            "roots": "metadata",
            "n": "count",
        },
        min_samples=int(n_min),
    )


def gradual_protocols(n_min: int) -> dict[str, Protocol]:
    """Algorithm 4: the centroid publication (≥ n_min samples) and the distance traffic."""
    meta = "metadata"
    return {
        "centroid": Protocol(
            "hac.gradual.centroid",
            {"centroid": "aggregate", "size": "count", "cluster": meta},
            min_samples=int(n_min),
        ),
        "candidate": Protocol(
            "hac.gradual.candidate", {"d": meta, "pair": meta, "reported": meta}
        ),
        "merge": Protocol("hac.gradual.merge", {"pair": meta, "h": meta, "sizes": meta}),
        "distances": Protocol(
            "hac.gradual.distances",
            {"cluster": meta, "to": meta, "d": meta, "min": meta, "max": meta, "sum": meta,
             "count": meta, "delta": meta},
        ),  # fmt: skip
    }


def abstain(led: Ledger, center: str, round: int, protocol: Protocol, reason: str) -> None:
    """Record that ``center`` sends nothing for ``protocol`` in ``round`` (and why)."""
    if hasattr(led, "abstain"):
        led.abstain(center, round, protocol, reason)
    else:  # pragma: no cover - before the core ledger is merged
        if not hasattr(led, "abstention_records"):
            led.abstention_records = []  # type: ignore[attr-defined]
        led.abstention_records.append(  # type: ignore[attr-defined]
            {"round": round, "sender": center, "protocol": protocol.name, "reason": reason}
        )


def n_abstentions(led: Ledger) -> int:
    return len(getattr(led, "abstention_records", []))
