"""The privacy boundary: every message a center sends or receives passes :meth:`Ledger.send`.

The ledger *enforces*, it does not only count:

1. **Plain numbers only.** A message is a dict whose values are numeric numpy arrays (dtype kind
   ``b i u f c``), Python/numpy numbers, ``None``, or (nested) lists/tuples/dicts of them. Object,
   string, bytes and structured (void) arrays, strings, DataFrames, tensors ... raise
   :class:`~fedclust.errors.DisclosureError`. Strings are accepted only in fields that the
   message's :class:`Protocol` declares as ``metadata``.
2. **Copies.** :meth:`Ledger.send` returns a deep copy; the receiver never shares an array object
   with the sender.
3. **A per-protocol disclosure rule**, checked when a :class:`Protocol` is bound (at ``Ledger``
   construction, ``Ledger(protocol=...)``, or per message, ``send(..., protocol=...)``). Every
   field must be declared, with one of the kinds

   - ``parameters``: model weights trained on the message's samples,
   - ``aggregate``: a summary (mean, sum, centroid, loss, ...) over the message's samples,
   - ``count``: sample counts (a scalar ``n`` or per-centroid sizes), checked *entry-wise*:
     every entry must be ≥ ``min_samples``,
   - ``per_sample``: one row per sample: allowed only if ``Protocol.per_sample`` is True,
   - ``metadata``: labels / names / settings (strings allowed),
   - ``masked``: a share of a secure sum (:mod:`.secagg`): unsigned 64-bit fixed-point values
     plus pairwise masks, uniform modulo 2^64 whatever the data. The centre checked the plain
     message (counts and all) before masking it; the server learns only the sum over centres.

   A center's message with ``parameters`` or ``aggregate`` fields must carry at least one
   ``count`` field (how many samples it summarises). Messages sent by a server (a sender listed
   in ``Ledger.servers``) re-distribute aggregates already checked on the way in: the sample
   count rules are not applied to them, the type and declared-field rules are.

   Breaking a rule raises :class:`~fedclust.errors.DisclosureError` naming center, protocol and
   rule. A center that cannot meet a rule should not try: it calls :meth:`Ledger.abstain`, which
   records who abstained, when, from which protocol and why; :meth:`Ledger.table` and
   :meth:`Ledger.abstentions` expose these rows and :meth:`Ledger.summary` counts them.

Every message has a protocol (issue 22): ``send`` without one (neither bound at construction
nor passed) raises :class:`~fedclust.errors.DisclosureError` (rule
``every-message-has-a-protocol``).

The ledger sits where Flower's transport is: a client's ``fit`` returns ``(parameters, n,
metrics)``, the client proxy (:mod:`fedclust.federation.engine`) turns it into a message.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import BoundaryTypeError, DisclosureError

Message = dict[str, Any]
KINDS = ("parameters", "aggregate", "count", "table", "per_sample", "metadata", "masked")
#: the metadata field that marks a secure-aggregation share (:mod:`.secagg`): a message carrying
#: it is checked against :func:`masked_protocol` of its protocol
SECAGG_FIELD = "secagg"
NUMERIC_KINDS = "biufc"  # numpy dtype.kind: bool, int, uint, float, complex
DEFAULT_SERVERS = ("server", "observer")
#: metadata is for labels and settings: strings up to this length, integers (ids, seeds)
METADATA_MAX_STRING = 80
METADATA_MAX_INT = 2**63  # seeds are int64
#: every Protocol constructed, by name (a Flower ClientApp resolves a request's protocol here
#: when its centre declares no ``protocols`` mapping of its own)
REGISTRY: dict[str, Protocol] = {}
#: the protocol factories (functions that build a Protocol from a floor or a name), each with the
#: example calls that build every name it can return; see :func:`declares`
FACTORIES: list[Callable[[], Any]] = []


def declares(*calls: tuple) -> Callable:
    """Declare a protocol factory: ``calls`` are example argument tuples (default: one call with
    no arguments) that together build every protocol name the factory can return. Lets
    :func:`declared_protocols` list the protocols that are only built when a run starts (the
    curious-server coverage test, ``tests/test_curious_coverage.py``, maps each name to a test)."""

    def wrap(fn: Callable) -> Callable:
        for args in calls or ((),):
            FACTORIES.append(functools.partial(fn, *args))
        return fn

    return wrap


def declared_protocols() -> dict[str, Protocol]:
    """Every protocol the imported modules declare: the module-level ones plus those the
    registered factories (:func:`declares`) build. The registry is left as it was (an example
    call's floor must not replace the protocol a running federation resolves by name)."""
    before = dict(REGISTRY)
    try:
        for factory in FACTORIES:
            factory()
        return dict(REGISTRY)
    finally:
        REGISTRY.clear()
        REGISTRY.update(before)


@dataclass(frozen=True)
class Protocol:
    """What a center may disclose in one message type.

    ``fields`` maps each field name to its kind (see the module docstring). ``min_samples`` is
    the smallest number of samples any shared aggregate may summarise (HAC ``n_min``, DEC ``m``).
    ``per_sample``: whether ``per_sample`` fields are allowed at all (e.g. a perturbation
    protocol whose privacy argument is the noise, not aggregation); a centre still releases them
    only when its own disclosure policy opts in (:mod:`.disclosure`).
    ``glm``: the ``parameters`` are a model fitted on the centre's samples, so the centre's
    ``nfilter_glm`` bounds their number relative to its sample count.
    ``table`` fields are count tables (histograms, risk-set cells): each cell is 0 or ≥ the floor.
    ``masked`` fields are secure-aggregation shares (:func:`masked_protocol`).
    ``summed``: the server's step on these messages is a sum or a mean over the centres, so
    secure aggregation and central DP apply (:mod:`.privacy`); a centre whose own settings
    require them refuses such a message sent without them.
    """

    name: str
    fields: Mapping[str, str]
    min_samples: int = 1
    per_sample: bool = False
    glm: bool = False
    summed: bool = False

    def __post_init__(self) -> None:
        bad = {k: v for k, v in self.fields.items() if v not in KINDS}
        if bad:
            raise ValueError(f"protocol {self.name!r}: unknown field kinds {bad}; use {KINDS}")
        if int(self.min_samples) < 1:
            raise ValueError(f"protocol {self.name!r}: min_samples must be ≥ 1")
        REGISTRY[self.name] = self

    def kind(self, key: str) -> str | None:
        return self.fields.get(key)


def masked_protocol(protocol: Protocol) -> Protocol:
    """The protocol of ``protocol``'s secure-aggregation shares (:mod:`.secagg`): every field a
    ``masked`` share, except metadata (kept), plus the :data:`SECAGG_FIELD` marker (session and
    round). Registered as ``<name>+secagg``."""
    name = f"{protocol.name}+secagg"
    fields = {k: ("metadata" if v == "metadata" else "masked") for k, v in protocol.fields.items()}
    fields[SECAGG_FIELD] = "metadata"
    known = REGISTRY.get(name)
    if known is not None and dict(known.fields) == fields:
        return known
    return Protocol(name, fields, min_samples=protocol.min_samples, summed=protocol.summed)


def _check_masked(key: str, value: Any, center: str, protocol: str) -> None:
    """A masked share is made of uint64 arrays (lists of them): nothing else can be a share."""
    parts = value if isinstance(value, list | tuple) else [value]
    for v in parts:
        if not (isinstance(v, np.ndarray) and v.dtype == np.uint64):
            raise _violation(
                f"masked field {key!r} holds {type(v).__name__} values, not uint64 shares",
                center, protocol, "masked-are-shares",
                fix="mask with fedclust.federation.secagg (fixed point modulo 2^64)",
            )  # fmt: skip


# ---------------------------------------------------------------- checks and copies
def _violation(what: str, center: str, protocol: str, rule: str, fix: str | None = None):
    cls = BoundaryTypeError if rule == "numeric-only" else DisclosureError
    return cls(what, center=center, protocol=protocol, rule=rule, fix=fix)


def _copy_numeric(value: Any, path: str, center: str, protocol: str, strings: bool) -> Any:
    """A deep copy of ``value`` made of plain types only; raises unless it is made of numeric
    arrays and numbers. Array and scalar *subclasses* (masked arrays, matrices, a float subclass
    carrying attributes) are refused or copied to the plain type; a mapping is read once."""
    if isinstance(value, np.ndarray):
        if type(value) is not np.ndarray:
            raise _violation(
                f"field {path!r} is a {type(value).__name__}, not a plain numpy array (a masked "
                "array or matrix can show a checker one view and deliver another)",
                center, protocol, "numeric-only", fix="send np.asarray(...) of the plain values",
            )  # fmt: skip
        if value.dtype.kind not in NUMERIC_KINDS or value.dtype.hasobject:
            if strings and value.dtype.kind in "US":
                return np.array(value, copy=True)
            raise _violation(
                f"field {path!r} is a {value.dtype} array: only numeric arrays may cross the "
                "privacy boundary",
                center, protocol, "numeric-only",
                fix="send numbers; strings only in fields the protocol declares as metadata",
            )  # fmt: skip
        return np.array(value, copy=True)
    if isinstance(value, np.generic) and value.dtype.kind in NUMERIC_KINDS:
        return value.item()
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, complex):
        return complex(value)
    if value is None:
        return None
    if isinstance(value, str):
        if strings:
            return str(value)
        raise _violation(
            f"field {path!r} is a string: strings may cross the boundary only in fields the "
            "protocol declares as metadata",
            center, protocol, "numeric-only",
        )  # fmt: skip
    if isinstance(value, Mapping):
        items = list(value.items())  # read once: what is checked is what is delivered
        return {
            str(k): _copy_numeric(v, f"{path}.{k}", center, protocol, strings) for k, v in items
        }
    if isinstance(value, list | tuple):
        out = [_copy_numeric(v, f"{path}[{i}]", center, protocol, strings)
               for i, v in enumerate(list(value))]  # fmt: skip
        return out if isinstance(value, list) else tuple(out)
    raise _violation(
        f"field {path!r} of type {type(value).__name__} is not a plain array/scalar: only numpy "
        "arrays, numbers and (nested) lists/dicts of them may cross the privacy boundary",
        center, protocol, "numeric-only",
    )  # fmt: skip


def snapshot(message: Any, protocol: Protocol | None, sender: str) -> Message:
    """The message as plain, deep-copied values (read once), after the type rules: what the
    checks see is exactly what is delivered."""
    pname = protocol.name if protocol is not None else "(none)"
    if not isinstance(message, Mapping):
        raise _violation(
            f"a message must be a dict of plain arrays / scalars, got {type(message).__name__}",
            sender, pname, "numeric-only",
        )  # fmt: skip
    items = list(message.items())
    return {
        str(k): _copy_numeric(
            v, str(k), sender, pname, protocol is not None and protocol.kind(str(k)) == "metadata"
        )
        for k, v in items
    }


def _small_integers(v: np.ndarray) -> bool:
    """Every entry of a numeric (``biuf``) array a whole number below :data:`METADATA_MAX_INT`
    in absolute value (``np.abs(v).max() < METADATA_MAX_INT`` as numpy computes it: an int64
    array always passes; a bool array holds flags, no magnitude to bound), with array methods:
    metadata arrays are small and many."""
    if v.size == 0 or v.dtype.kind in "bi":
        return True
    if v.dtype.kind == "u":
        return bool(v.max() < METADATA_MAX_INT)
    return bool(
        np.isfinite(v).all() and (v == np.round(v)).all() and np.abs(v).max() < METADATA_MAX_INT
    )


def _check_metadata(key: str, value: Any, center: str, protocol: str) -> None:
    """Metadata are labels and settings: short strings, small integers (and lists of them)."""
    for v in value if isinstance(value, list | tuple) else [value]:
        if isinstance(v, np.ndarray):
            dk = v.dtype.kind
            if dk in "US" and all(len(str(x)) <= METADATA_MAX_STRING for x in v.ravel()):
                continue
            if dk in "biuf" and _small_integers(v):  # ids, settings, flags (floats too)
                continue
        elif v is None or isinstance(v, bool):
            continue
        elif isinstance(v, str) and len(v) <= METADATA_MAX_STRING:
            continue
        elif isinstance(v, int | float) and float(v).is_integer() and abs(v) < METADATA_MAX_INT:
            continue
        elif isinstance(v, list | tuple):
            _check_metadata(key, v, center, protocol)
            continue
        raise _violation(
            f"metadata field {key!r} holds {type(v).__name__} values: metadata is for short "
            f"strings (≤ {METADATA_MAX_STRING} characters) and small integers",
            center, protocol, "metadata-is-small",
            fix="declare numbers as aggregate / count / per_sample fields",
        )  # fmt: skip


def _count_floats(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.size) if value.dtype.kind in NUMERIC_KINDS else 0
    if isinstance(value, bool | int | float | complex | np.number | np.bool_):
        return 1
    if isinstance(value, Mapping):
        return sum(_count_floats(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_count_floats(v) for v in value)
    return 0


def _entries(value: Any) -> np.ndarray:
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple):
        parts = [_entries(v) for v in value]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.asarray(value, dtype=np.float64).ravel()


def check_disclosure(message: Mapping[str, Any], protocol: Protocol, center: str,
                     from_server: bool = False) -> None:  # fmt: skip
    """Raise :class:`DisclosureError` unless ``message`` obeys ``protocol`` (module docstring)."""
    name = protocol.name
    kinds = {k: protocol.kind(k) for k in message}
    undeclared = sorted(k for k, kind in kinds.items() if kind is None)
    if undeclared:
        raise _violation(
            f"undeclared field(s) {undeclared}; protocol declares {sorted(protocol.fields)}",
            center, name, "declared-fields-only",
        )  # fmt: skip
    for k, kind in kinds.items():
        if kind == "per_sample" and not protocol.per_sample:
            raise _violation(
                f"field {k!r} holds per-sample rows, which this protocol does not allow",
                center, name, "no-per-sample-rows",
            )  # fmt: skip
    for k, kind in kinds.items():
        if kind == "metadata":
            _check_metadata(k, message[k], center, name)
        elif kind == "masked":
            _check_masked(k, message[k], center, name)
    if from_server:
        return
    for k, kind in kinds.items():
        if kind == "table":
            e = _entries(message[k])
            if e.size and (not np.all(np.isfinite(e)) or np.any(e != np.round(e)) or e.min() < 0):
                raise _violation(f"table field {k!r} is not a table of non-negative integers",
                                 center, name, "counts-are-integers")  # fmt: skip
            if np.any((e > 0) & (e < protocol.min_samples)):
                raise _violation(
                    f"table field {k!r} has a non-empty cell below min_samples="
                    f"{protocol.min_samples}",
                    center, name, f"min-samples>={protocol.min_samples}",
                    fix="merge or suppress small cells at the centre",
                )  # fmt: skip
    counts = [k for k, kind in kinds.items() if kind == "count"]
    for k in counts:
        e = _entries(message[k])
        if e.size == 0:
            raise _violation(f"count field {k!r} is empty", center, name, "counts-not-empty")
        if e.size and (not np.all(np.isfinite(e)) or np.any(e != np.round(e)) or e.min() < 0):
            raise _violation(f"count field {k!r} is not a non-negative integer", center, name,
                             "counts-are-integers")  # fmt: skip
        if e.size and e.min() < protocol.min_samples:
            raise _violation(
                f"field {k!r} reports an aggregate over {int(e.min())} sample(s), fewer than "
                f"min_samples={protocol.min_samples}",
                center, name, f"min-samples>={protocol.min_samples}",
                fix="the center must abstain (Ledger.abstain) instead of sending",
            )  # fmt: skip
    summaries = [k for k, kind in kinds.items() if kind in ("aggregate", "parameters")]
    if summaries and not counts and not any(kind == "table" for kind in kinds.values()):
        declared = [k for k, v in protocol.fields.items() if v == "count"]
        raise _violation(
            f"field(s) {summaries} summarise samples but the message carries no count field",
            center, name, "aggregates-carry-their-sample-count",
            fix=f"add a count field (declared: {declared})",
        )  # fmt: skip


class Checked(dict):
    """A centre's answer as its guard checked it (:func:`.guard.answer`): the plain copy
    :func:`snapshot` made, which passed :func:`check_disclosure` as a centre's message against
    ``protocol``. :meth:`Ledger.send` records it without a second copy and check when it is
    sent centre → server under an equal protocol."""

    __slots__ = ("protocol",)

    def __init__(self, message: Message, protocol: Protocol) -> None:
        super().__init__(message)
        self.protocol = protocol


# ---------------------------------------------------------------- the ledger
TABLE_COLUMNS = ["round", "sender", "receiver", "kind", "protocol", "fields", "floats", "reason"]


@dataclass
class Ledger:
    """Checks, copies and records every message; records abstentions.

    ``protocol``: the default :class:`Protocol` for every ``send`` (``None``: type rules only).
    ``servers``: parties whose messages are re-distributions (no sample-count rule).
    ``records`` holds one row per message, ``abstention_records`` one per abstention.
    """

    protocol: Protocol | None = None
    servers: tuple[str, ...] = DEFAULT_SERVERS
    records: list[dict[str, Any]] = field(default_factory=list)
    abstention_records: list[dict[str, Any]] = field(default_factory=list)
    drop_records: list[dict[str, Any]] = field(default_factory=list)

    def send(
        self,
        sender: str,
        receiver: str,
        message: Message,
        round: int = 0,
        kind: str = "",
        protocol: Protocol | None = None,
        *,
        downlink: bool | None = None,
    ) -> Message:
        """Check ``message`` (``sender`` → ``receiver``), record it, return a deep copy.

        ``downlink=True``: the server re-distributes aggregates it already received (the
        sample-count rules do not apply). ``None`` keeps the historic rule (a sender listed in
        ``servers`` is the server); client proxies always say which direction a message goes.

        A :class:`Checked` message (only :func:`.guard.answer` makes them: the plain copy the
        centre's guard made of its answer, which nothing else holds, checked with
        :func:`check_disclosure` as a centre's message against ``Checked.protocol``) whose
        protocol equals the one this send applies (a centre may build its own declaration of
        the server's protocols, :func:`.guard.resolve_protocol`), sent centre → server, is
        recorded and returned as a plain dict of its values: the same check on the same values
        cannot fail differently (issue 30 B.6: one copy and check per answer instead of two).
        Any other message is copied and checked.
        """
        proto = protocol if protocol is not None else self.protocol
        if proto is None:
            raise _violation(
                f"a message ({kind or 'unnamed'}) without a declared Protocol",
                sender, "(none)", "every-message-has-a-protocol",
                fix="declare the message's fields in a Protocol (the stage's protocols.py) and "
                "pass protocol=...",
            )  # fmt: skip
        if isinstance(message, Mapping) and SECAGG_FIELD in message:
            proto = masked_protocol(proto)  # a secure-aggregation share of a proto message
        pname = proto.name
        from_server = (sender in self.servers) if downlink is None else bool(downlink)
        if type(message) is Checked and message.protocol == proto and not from_server:
            out = dict(message)  # the guard's checked copy (docstring)
        else:
            out = snapshot(message, proto, sender)
            check_disclosure(out, proto, sender, from_server)
        self.records.append(
            {
                "round": round,
                "sender": sender,
                "receiver": receiver,
                "kind": kind,
                "protocol": pname,
                "fields": ",".join(sorted(out)),
                "floats": _count_floats(out),
                "reason": "",
            }
        )
        return out

    def abstain(self, center: str, round: int, protocol: Protocol | str, reason: str) -> None:
        """Record that ``center`` sends nothing for ``protocol`` this round, and why."""
        pname = protocol.name if isinstance(protocol, Protocol) else str(protocol)
        self.abstention_records.append(
            {"round": round, "sender": center, "receiver": "", "kind": "abstain",
             "protocol": pname, "fields": "", "floats": 0, "reason": reason}
        )  # fmt: skip

    def dropped(self, center: str, round: int, protocol: Protocol | str, reason: str) -> None:
        """Record that ``center`` was lost (its node stopped answering) and the round went on
        without it (:mod:`.faults`)."""
        pname = protocol.name if isinstance(protocol, Protocol) else str(protocol)
        self.drop_records.append(
            {"round": round, "sender": center, "receiver": "", "kind": "dropped",
             "protocol": pname, "fields": "", "floats": 0, "reason": reason}
        )  # fmt: skip

    def table(self) -> pd.DataFrame:
        """Messages, then abstentions (``kind == "abstain"``, the ``reason`` column says why),
        then centres dropped from a round (``kind == "dropped"``)."""
        rows = self.records + self.abstention_records + self.drop_records
        return pd.DataFrame(rows, columns=TABLE_COLUMNS)

    def dropouts(self) -> pd.DataFrame:
        """One row per request a lost centre missed: round, center, protocol, reason."""
        t = pd.DataFrame(self.drop_records, columns=TABLE_COLUMNS)
        return t[["round", "sender", "protocol", "reason"]].rename(columns={"sender": "center"})

    def messages(self) -> pd.DataFrame:
        return pd.DataFrame(self.records, columns=TABLE_COLUMNS)

    def abstentions(self) -> pd.DataFrame:
        """One row per abstention: round, center, protocol, reason."""
        t = pd.DataFrame(self.abstention_records, columns=TABLE_COLUMNS)
        return t[["round", "sender", "protocol", "reason"]].rename(columns={"sender": "center"})

    def summary(self) -> pd.DataFrame:
        """Per sender: messages, floats, rounds with a message, abstentions."""
        t = self.messages()
        a = pd.DataFrame(self.abstention_records, columns=TABLE_COLUMNS)
        cols = ["sender", "messages", "floats", "rounds", "abstentions"]
        if t.empty and a.empty:
            return pd.DataFrame(columns=cols)
        g = t.groupby("sender")
        out = pd.DataFrame(
            {"messages": g.size(), "floats": g["floats"].sum(), "rounds": g["round"].nunique()}
        )
        out = out.join(a.groupby("sender").size().rename("abstentions"), how="outer")
        return out.fillna(0).astype(int).rename_axis("sender").reset_index()[cols]

    @property
    def n_messages(self) -> int:
        return len(self.records)

    @property
    def n_floats(self) -> int:
        return int(sum(r["floats"] for r in self.records))

    @property
    def n_abstentions(self) -> int:
        return len(self.abstention_records)


def abstention_summary(table: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """From a (concatenated) ledger table: who abstained, from which protocol, how often."""
    cols = [*by, "center", "protocol", "abstentions", "reasons"]
    if table.empty or "kind" not in table or not (table["kind"] == "abstain").any():
        return pd.DataFrame(columns=cols)
    a = table[table["kind"] == "abstain"]
    g = a.groupby([*by, "sender", "protocol"], sort=False)
    out = g.size().rename("abstentions").to_frame()
    out["reasons"] = g["reason"].agg(lambda r: "; ".join(sorted(set(map(str, r)))))
    return out.reset_index().rename(columns={"sender": "center"})[cols]
