"""The centre side of every exchange, shared by every transport.

:func:`reply` is what a centre does with a request, wherever it runs — in the job's process
(:class:`~.engine.LedgerClientProxy`) or inside a Flower ``ClientApp`` before encoding
(:mod:`fedclust.flower.apps`): it resolves the protocol *the centre itself* declares for the
method (a server cannot name an undeclared method or relabel a field), calls the method, keeps
only declared fields, copies the answer to plain values and checks it against the ledger's rules
with the protocol's floor and against the centre's own :class:`~.disclosure.DisclosurePolicy`
with the centre's true sample count. A violation is not sent: the centre abstains, with a
reason that names the rule and carries no numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fedclust.errors import DisclosureError, InputDataError

from . import secagg
from .abstain import Abstain
from .disclosure import DEFAULT_POLICY, DisclosurePolicy, check_outgoing, configured_policy
from .ledger import REGISTRY, Checked, Message, Protocol, check_disclosure, snapshot
from .privacy import pop_instruction, privatise

_NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)?(?:e[-+]?\d+)?")


def centre_name(centre: Any) -> str:
    cid = getattr(centre, "cid", None)
    return str(cid if cid is not None else getattr(centre, "name", "centre"))


def centre_policy(centre: Any) -> DisclosurePolicy:
    """The centre's own disclosure settings: ``centre.disclosure`` when the object carries them,
    else its entry of the configured ``disclosure`` section (:func:`.disclosure.configure`)."""
    return getattr(centre, "disclosure", None) or configured_policy(centre_name(centre))


def sanitise(reason: str, policy: DisclosurePolicy = DEFAULT_POLICY) -> str:
    """An abstention reason as it may leave the centre: no numbers (a count below a floor is
    itself a disclosure), at most ``nfilter_string`` characters."""
    return _NUMBER.sub("#", str(reason))[: policy.nfilter_string]


def resolve_protocol(centre: Any, method: str, offered: Protocol | str | None) -> Protocol:
    """The protocol the centre applies to ``method``: its own declaration (``centre.protocols``,
    a mapping method → Protocol) when it has one, else the offered one (in-process: the server
    code's object; on Flower: looked up by name among the declared protocols)."""
    own = getattr(centre, "protocols", None)
    if isinstance(own, Mapping):
        if method not in own:
            raise DisclosureError(
                f"method {method!r} is not one the centre answers", center=centre_name(centre),
                protocol=str(getattr(offered, "name", offered)), rule="declared-methods-only",
            )  # fmt: skip
        return own[method]
    if isinstance(offered, Protocol):
        return offered
    if isinstance(offered, str) and offered in REGISTRY:
        return REGISTRY[offered]
    raise DisclosureError(
        f"no declared protocol for method {method!r}", center=centre_name(centre),
        protocol=str(offered), rule="every-message-has-a-protocol",
    )  # fmt: skip


def as_message(method: str, out: Any) -> Message:
    """A centre's answer as one message: Flower's ``NumPyClient`` tuples become fields
    (``fit -> (parameters, n, metrics)``, ``evaluate -> (loss, n, metrics)``)."""
    if isinstance(out, tuple):
        first, n, metrics = out
        head = "parameters" if method == "fit" else "loss"
        return {head: first, "n": n, **dict(metrics or {})}
    return out


def reply(
    centre: Any, method: str, parameters: Any, config: Mapping[str, Any],
    protocol: Protocol | str | None,
) -> Message | Abstain:  # fmt: skip
    """Run ``centre.<method>(parameters, config)`` and return what may leave the centre: the
    checked plain message, or an :class:`Abstain` (the centre's own or the guard's refusal).
    The core's secure-aggregation methods (:data:`.secagg.CONTROL`) are answered here; a
    request's privacy instruction (:mod:`.privacy`) is applied to the checked message (clip,
    weight, mask) and never reaches the method."""
    out = answer(centre, method, parameters, config, protocol)
    return dict(out) if type(out) is Checked else out


def answer(
    centre: Any, method: str, parameters: Any, config: Mapping[str, Any],
    protocol: Protocol | str | None,
) -> Message | Abstain:  # fmt: skip
    """:func:`reply` for the in-process proxy: an answer that is the checked plain copy itself
    (made here, never seen by the method, unchanged by the privacy step) comes as a
    :class:`.ledger.Checked` carrying the protocol it was checked against, which
    :meth:`.ledger.Ledger.send` records without copying and checking it a second time."""
    cid, policy = centre_name(centre), centre_policy(centre)
    if method in secagg.CONTROL:
        return _control(centre, cid, method, config, policy)
    config = dict(config)
    instruction = pop_instruction(config)
    try:
        proto = resolve_protocol(centre, method, protocol)
    except DisclosureError as err:
        return Abstain(sanitise(f"refused: {err.rule}", policy))
    out = getattr(centre, method)(parameters, config)
    if isinstance(out, Abstain):
        return Abstain(sanitise(out.reason, policy))
    msg = as_message(method, out)
    if not isinstance(msg, Mapping):
        return Abstain(sanitise("refused: numeric-only", policy))
    msg = {k: v for k, v in msg.items() if proto.kind(str(k)) is not None}
    try:
        snap = snapshot(msg, proto, cid)
        check_disclosure(snap, proto, cid)
        check_outgoing(snap, proto, policy, cid, getattr(centre, "n_samples", None))
    except DisclosureError as err:
        refused = f"refused by the centre's disclosure check: {err.rule}"
        return Abstain(sanitise(refused, policy))
    try:
        sent = privatise(centre, cid, snap, proto, parameters, instruction)
    except DisclosureError as err:
        refused = f"refused by the centre's privacy settings: {err.rule}"
        return Abstain(sanitise(refused, policy))
    except InputDataError as err:
        refused = f"cannot encode for secure aggregation: {err.where}"
        return Abstain(sanitise(refused, policy))
    return Checked(sent, proto) if sent is snap else sent


def _control(
    centre: Any, cid: str, method: str, config: Mapping[str, Any], policy: DisclosurePolicy
) -> Message | Abstain:
    """The centre's answer to a secure-aggregation method (keys, round keys), checked."""
    proto = secagg.CONTROL[method]
    try:
        snap = snapshot(secagg.control(centre, cid, method, config), proto, cid)
        check_disclosure(snap, proto, cid)
    except DisclosureError as err:
        return Abstain(sanitise(f"refused: {err.rule}", policy))
    return snap
