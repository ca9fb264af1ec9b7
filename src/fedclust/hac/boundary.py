"""The HAC protocols' declarations for the ledger's disclosure rules (issue 13).

Each message type of the federated HAC algorithms is declared as a
:class:`fedclust.federation.Protocol` whose ``min_samples`` is the run's ``n_min``: the ledger then
refuses any centroid / sum / size over fewer than ``n_min`` samples, and a center that cannot meet
the rule *abstains* (:func:`abstain`) instead of sending. Distances and merge candidates are
declared ``metadata``: the thesis' protocol discloses them by design (spec §5.3 "Shared with the
server"), they summarise no sample set of their own.
"""

from __future__ import annotations

from ..federation import Ledger, Protocol

SERVER = "server"


def send(led: Ledger, sender: str, receiver: str, msg: dict, round: int, kind: str,
         protocol: Protocol) -> dict:  # fmt: skip
    """``led.send`` under the message type's protocol; returns the receiver's copy."""
    return led.send(sender, receiver, msg, round, kind, protocol=protocol)


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
            "dendrogram": "per_sample",  # local merge heights: distances between patients
            "roots": "metadata",
            "n": "count",
        },
        min_samples=int(n_min),
        per_sample=True,
    )


def gradual_protocols(n_min: int) -> dict[str, Protocol]:
    """Algorithm 4: the centroid publication (≥ n_min samples) and the distance traffic.
    Distances, merge heights and cluster sizes below the floor are per-sample information
    (issue 22): they are declared ``per_sample``, not metadata; ids stay metadata."""
    meta, row = "metadata", "per_sample"
    return {
        "centroid": Protocol(
            "hac.gradual.centroid",
            {"centroid": "aggregate", "size": "count", "cluster": meta},
            min_samples=int(n_min),
        ),
        "setup": Protocol("hac.gradual.setup", {"n": meta}),
        "candidate": Protocol(
            "hac.gradual.candidate", {"d": row, "pair": meta, "reported": row}, per_sample=True
        ),
        "merge": Protocol(
            "hac.gradual.merge", {"pair": meta, "h": row, "sizes": row}, per_sample=True
        ),
        "distances": Protocol(
            "hac.gradual.distances",
            {
                "cluster": meta,
                "to": meta,
                "d": row,
                "min": row,
                "max": row,
                "sum": row,
                "count": row,
                "delta": row,
            },
            per_sample=True,
        ),  # fmt: skip
    }


def abstain(led: Ledger, center: str, round: int, protocol: Protocol, reason: str) -> None:
    """Record that ``center`` sends nothing for ``protocol`` in ``round`` (and why)."""
    led.abstain(center, round, protocol, reason)
