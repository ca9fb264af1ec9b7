"""The centre side of a message a stage sends without a client proxy (issue 22).

Most exchanges go through :class:`~fedclust.federation.LedgerClientProxy` /
:func:`fedclust.federation.guard.reply`, which check a centre's answer at the centre. Stages
whose protocols are long sequences of centre-initiated messages (HAC gradual sharing, consensus
ADMM, the standardisation round) call :func:`centre_send` instead: the same checks — the
ledger's rules with the protocol's floor, then the centre's own
:class:`~fedclust.federation.disclosure.DisclosurePolicy` with its true number of samples — run
*before* the message is handed to the ledger of record (which applies the ledger's rules).
"""

from __future__ import annotations

from fedclust.federation import Ledger, Protocol
from fedclust.federation.disclosure import DisclosurePolicy, check_outgoing
from fedclust.federation.ledger import snapshot

SERVER = "server"


def centre_send(
    led: Ledger,
    policy: DisclosurePolicy,
    sender: str,
    n_samples: int,
    msg: dict,
    round: int,
    kind: str,
    protocol: Protocol,
    receiver: str = SERVER,
) -> dict:
    """A centre's message: checked at the centre against its own policy with its true
    ``n_samples`` and only then handed to the ledger, which applies the protocol's rules before
    anything is delivered (in-process the two run back to back: the ledger's check is not
    repeated here); returns the receiver's copy."""
    snap = snapshot(msg, protocol, sender)
    check_outgoing(snap, protocol, policy, sender, int(n_samples))
    return led.send(sender, receiver, snap, round, kind, protocol=protocol, downlink=False)


def server_send(
    led: Ledger, receiver: str, msg: dict, round: int, kind: str, protocol: Protocol
) -> dict:
    """A server broadcast (re-distributes what centres sent; no count rules)."""
    return led.send(SERVER, receiver, msg, round, kind, protocol=protocol, downlink=True)


def glm_floor(policy: DisclosurePolicy, n_parameters: int, protocol_min: int = 1) -> int:
    """The fewest samples behind a fitted model of ``n_parameters`` (DataSHIELD's
    ``nfilter.glm``: parameters ≤ nfilter_glm · n) and the centre's floor."""
    import math

    return max(policy.floor(protocol_min), math.ceil(n_parameters / float(policy.nfilter_glm)))
