"""Secure aggregation and differential privacy for the core's summing protocols (issue 24).

**Settings** (:class:`PrivacySettings`): the config section ``federation.privacy`` —
``default`` laid under a stage's own entry in ``stages`` (``stages: {dec: {...}}``); one job's
process is configured once by the rule scripts' boilerplate (:func:`configure`, with the stage
the rule belongs to), tests and the privacy–utility stage use :func:`using`. ``epsilon: null``
(the default) adds no noise and no clipping; ``secure_aggregation: false`` (the default)
masks nothing: with both, every code path is the one without this module (byte-identical
tables, tested).

**Where it acts.**

- *At the centre* (:func:`privatise`, called by :func:`.guard.reply` after the centre's own
  disclosure checks, before the message leaves): central DP's per-centre part — the update
  ``parameters − request parameters`` clipped to L2 norm ``clip`` — the weighting of a
  weighted mean (every numeric field × the centre's count) and the secure-aggregation mask
  (:mod:`.secagg`). The request carries the server's instruction (:data:`INSTRUCTION`, a JSON
  string, so every transport carries it); a centre whose own settings require secure
  aggregation or DP refuses a summing protocol's request without it (rules
  ``secure-aggregation-required``, ``dp-clip-required``).
- *At the server* (:class:`PrivateRounds` in :func:`.engine.run_rounds`; :func:`secure_sum` for
  a stage's own summing exchange): the sum of the shares (unmasked), Gaussian noise once on the
  sum (central DP), the mean, then the strategy's usual ``aggregate_fit`` on that one result.

**Which protocols.** A FedAvg-type round (``run_rounds``) with a strategy whose server step is a
(weighted) mean or a sum (:func:`secure_form`), and any exchange a stage routes through
:func:`secure_sum` (the survival stage's evaluate exchange: Σ loss, Σ events).

**Central DP (DP-FedAvg, McMahan et al. 2018, ICLR).** The unit of privacy is one centre's
contribution (add/remove one centre; a single record lies inside one centre, so the bound holds
for records too): each centre's update is clipped to L2 norm C, the server adds
N(0, (z C)²) to the sum Σ_k clip(Δ_k) — sensitivity C — and divides by the cohort size. Over T
rounds the accountant (:class:`.dp.Accountant`, Opacus' RDP analysis) composes T Gaussian
mechanisms; z is calibrated so that the run spends exactly the configured ε at δ. The server
sees the exact sum (with secure aggregation, only the sum): central DP trusts it with that sum;
everything it broadcasts or publishes after is (ε, δ)-DP. Under central DP a centre sends only
its clipped update and count (the training loss of a noised model is not summed, so the round
log has no loss).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from fedclust.errors import ConfigError, DisclosureError

from . import secagg
from .calls import call_all
from .ledger import Message, Protocol
from .strategy import FedAvg, NDArrays, PublishedAverage, Strategy

log = logging.getLogger(__name__)
#: the request config key of the server's instruction (a JSON string)
INSTRUCTION = "__private__"
SECTION = "privacy"  # under ``federation``
MECHANISMS = ("central", "local")


@dataclass(frozen=True)
class PrivacySettings:
    """One stage's settings (config ``federation.privacy``; schema for each key)."""

    secure_aggregation: bool = False
    frac_bits: int = secagg.DEFAULT_FRAC_BITS
    mechanism: str = "central"
    epsilon: float | None = None
    delta: float = 1e-5
    clip: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ConfigError(
                f"unknown DP mechanism {self.mechanism!r}",
                where="federation.privacy dp.mechanism",
                fix=f"one of {MECHANISMS}",
            )
        if self.epsilon is not None and not self.epsilon > 0:
            raise ConfigError(
                "epsilon must be > 0 (null = no DP)", where="federation.privacy dp.epsilon"
            )
        if not 0 < self.delta < 1:
            raise ConfigError("delta must be in (0, 1)", where="federation.privacy dp.delta")
        if not self.clip > 0:
            raise ConfigError("clip must be > 0", where="federation.privacy dp.clip")
        if not 8 <= int(self.frac_bits) <= 56:
            raise ConfigError("frac_bits must be in 8..56", where="federation.privacy")

    @property
    def dp(self) -> bool:
        """Whether noise is added (a finite ε)."""
        return self.epsilon is not None and math.isfinite(self.epsilon)

    @property
    def central(self) -> bool:
        return self.dp and self.mechanism == "central"

    @property
    def local(self) -> bool:
        return self.dp and self.mechanism == "local"

    @property
    def active(self) -> bool:
        return self.secure_aggregation or self.dp


OFF = PrivacySettings()


def settings_from(
    section: Mapping[str, Any] | None, stage: str | None = None, seed: int = 0
) -> PrivacySettings:
    """A stage's settings from the ``federation.privacy`` section: ``default`` with
    ``stages.<stage>`` laid over it (``dp`` keys flattened)."""
    section = section or {}
    merged: dict[str, Any] = {}
    for part in (section.get("default") or {}, (section.get("stages") or {}).get(stage) or {}):
        part = dict(part)
        dp = part.pop("dp", None) or {}
        merged.update(part)
        merged.update(dp)
    known = {f.name for f in fields(PrivacySettings)} - {"seed"}
    bad = sorted(set(merged) - known)
    if bad:
        raise ConfigError(
            f"unknown privacy setting(s) {bad}",
            where="federation.privacy",
            fix=f"use {sorted(known)} (epsilon, delta, clip, mechanism under dp)",
        )
    return replace(OFF, seed=int(seed), **merged)


# ---------------------------------------------------------------- process configuration
_CONFIGURED: list[PrivacySettings] = [OFF]


def configure(config: Mapping[str, Any] | None, stage: str | None = None) -> PrivacySettings:
    """Set this process's settings from a whole workflow config (its ``federation.privacy``
    section, the stage's entry, the config's ``seed``); the rule scripts' boilerplate calls it
    with the rule's stage. Returns them."""
    config = config or {}
    section = (config.get("federation") or {}).get(SECTION)
    s = settings_from(section, stage, int(config.get("seed", 0) or 0))
    _CONFIGURED[0] = s
    return s


def current() -> PrivacySettings:
    """The settings in force in this process (default: off)."""
    return _CONFIGURED[-1]


@contextmanager
def using(settings: PrivacySettings) -> Iterator[PrivacySettings]:
    """Run a block with ``settings`` (tests, the privacy–utility stage)."""
    _CONFIGURED.append(settings)
    try:
        yield settings
    finally:
        _CONFIGURED.pop()


def stage_of_rule(rule: str, stages: Sequence[str]) -> str | None:
    """The stage a rule belongs to: the longest stage name the rule is or starts with + ``_``
    (``decentral_train`` -> ``decentral``, ``dec_fed_tsae`` -> ``dec``)."""
    hits = [s for s in stages if rule == s or rule.startswith(f"{s}_")]
    return max(hits, key=len) if hits else None


# ---------------------------------------------------------------- the budget spent
#: one row per release series (what, who, how much ε): read by the privacy–utility stage
BUDGET: list[dict[str, Any]] = []


def spend(row: Mapping[str, Any]) -> None:
    """Record ε spent (stage, label, centre, mechanism, releases, epsilon, delta, ...)."""
    BUDGET.append(dict(row))
    log.info("privacy budget: %s", {k: row[k] for k in row if k != "centres"})


def budget_rows(reset: bool = False) -> list[dict[str, Any]]:
    rows = [dict(r) for r in BUDGET]
    if reset:
        BUDGET.clear()
    return rows


# ---------------------------------------------------------------- the centre side
def centre_settings(centre: Any) -> PrivacySettings:
    """The centre's own settings: ``centre.privacy`` when it carries them, else the
    process's (its job's config)."""
    own = getattr(centre, "privacy", None)
    return own if isinstance(own, PrivacySettings) else current()


def clip_update(new: Sequence[np.ndarray], old: Sequence[np.ndarray], clip: float) -> list:
    """``new − old`` (float64) scaled to L2 norm ≤ ``clip`` over all arrays together."""
    delta = [
        np.asarray(a, np.float64) - np.asarray(b, np.float64) for a, b in zip(new, old, strict=True)
    ]
    norm = math.sqrt(sum(float(np.sum(d * d)) for d in delta))
    scale = min(1.0, clip / norm) if norm > 0 else 1.0
    return [d * scale for d in delta]


def _times(value: Any, w: float) -> Any:
    if isinstance(value, list | tuple):
        return [np.asarray(v, np.float64) * w for v in value]
    return np.asarray(value, np.float64) * w


def privatise(
    centre: Any,
    cid: str,
    message: Message,
    protocol: Protocol,
    request_parameters: Any,
    instruction: Mapping[str, Any] | None,
) -> Message:
    """What leaves the centre of a checked plain ``message`` (module docstring): the clipped
    update, the weighting, the mask. Raises :class:`DisclosureError` (the centre abstains) when
    its own settings require what the request lacks."""
    own = centre_settings(centre)
    summing = bool(getattr(protocol, "summed", False))
    if instruction is None:
        if summing and own.secure_aggregation:
            raise DisclosureError(
                "the centre sends this protocol only under secure aggregation",
                center=cid,
                protocol=protocol.name,
                rule="secure-aggregation-required",
            )
        if summing and own.central and "parameters" in message:
            raise DisclosureError(
                "the centre sends model updates only clipped for central DP",
                center=cid,
                protocol=protocol.name,
                rule="dp-clip-required",
            )
        return message
    msg = dict(message)
    keep = instruction.get("keep")
    if keep is not None:  # e.g. central DP: the update and its count, no training metrics
        msg = {k: v for k, v in msg.items() if k in keep}
    upd = instruction.get("update")
    if upd is not None:
        clip = float(upd["clip"])
        if own.central and clip > own.clip:
            raise DisclosureError(
                "the requested clipping bound exceeds the centre's own",
                center=cid,
                protocol=protocol.name,
                rule="dp-clip-required",
            )
        key = upd.get("field", "parameters")
        msg[key] = clip_update(msg[key], request_parameters, clip)
    elif own.central and "parameters" in msg:
        raise DisclosureError(
            "the centre sends model updates only clipped for central DP",
            center=cid,
            protocol=protocol.name,
            rule="dp-clip-required",
        )
    weight = instruction.get("weight")
    if weight is not None:
        w = float(np.asarray(msg[weight], dtype=np.float64))
        for k in msg:
            if k != weight and protocol.kind(k) in ("parameters", "aggregate"):
                msg[k] = _times(msg[k], w)
    sa = instruction.get("secagg")
    if sa is None:
        if own.secure_aggregation and summing:
            raise DisclosureError(
                "the centre sends this protocol only under secure aggregation",
                center=cid,
                protocol=protocol.name,
                rule="secure-aggregation-required",
            )
        return msg
    return secagg.mask(
        centre,
        cid,
        msg,
        protocol,
        sa["session"],
        int(sa["round"]),
        sa["cohort"],
        int(sa["frac_bits"]),
    )


def encode_instruction(instruction: Mapping[str, Any]) -> list[str]:
    """The instruction as JSON in chunks of ≤ 80 characters (a metadata field of short
    strings: every transport carries it, the ledger checks it)."""
    raw = json.dumps(instruction, separators=(",", ":"))
    return [raw[i : i + 80] for i in range(0, len(raw), 80)]


def pop_instruction(config: dict[str, Any]) -> dict[str, Any] | None:
    """Remove the server's instruction from a request config (the method never sees it)."""
    raw = config.pop(INSTRUCTION, None)
    if raw is None:
        return None
    return json.loads(raw if isinstance(raw, str) else "".join(str(r) for r in raw))


# ---------------------------------------------------------------- the server side
def secure_form(strategy: Strategy) -> str:
    """How a strategy's server step combines the results: ``weighted`` (Σ n_k w_k / Σ n_k),
    ``mean`` (Σ w_k / K) or ``sum`` (Σ w_k): a strategy may say so itself
    (``secure_form`` attribute); wrappers (``inner``) are looked through."""
    form = getattr(strategy, "secure_form", None)
    if form is not None:
        return str(form)
    inner = getattr(strategy, "inner", None)
    if isinstance(inner, Strategy):
        return secure_form(inner)
    if isinstance(strategy, FedAvg):
        return "weighted" if strategy.weighting == "weighted" else "mean"
    if isinstance(strategy, PublishedAverage):
        return "weighted"
    raise ConfigError(
        f"strategy {type(strategy).__name__} has no secure-aggregation form",
        where="federation.privacy",
        fix="turn secure aggregation and DP off for this stage",
    )


@dataclass
class PrivateRounds:
    """Secure aggregation and / or central DP for :func:`.engine.run_rounds` (module
    docstring). :meth:`round` replaces the loop's fit-and-collect step and returns the one
    result the strategy aggregates."""

    settings: PrivacySettings
    proxies: Sequence[Any]
    strategy: Strategy
    rounds: int
    label: str = "fit"
    form: str = "weighted"
    secure: secagg.SecureAggregator | None = None
    noise_multiplier: float = 0.0
    epsilon: float = math.inf
    members: list[str] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        settings: PrivacySettings,
        proxies: Sequence[Any],
        strategy: Strategy,
        rounds: int,
        label: str,
    ) -> PrivateRounds:
        from .dp import Accountant, calibrate_gaussian

        if settings.local:
            raise ConfigError(
                "local DP (DP-SGD) is the centre's training, not the round loop's",
                where="federation.privacy dp.mechanism",
                fix="use mechanism: central for this stage, or a stage whose centres run DP-SGD",
            )
        form = "dp" if settings.central else secure_form(strategy)
        pr = cls(settings, list(proxies), strategy, rounds, label, form)
        pr.members = [str(p.cid) for p in proxies]
        if settings.secure_aggregation:
            pr.secure = secagg.SecureAggregator(list(proxies), settings.frac_bits)
            pr.members = pr.secure.setup(0)
            left = [str(p.cid) for p in proxies if str(p.cid) not in pr.members]
            if left:
                log.warning("%s: %s took no part in the key set-up and sit out", label, left)
            if not pr.members:
                raise RuntimeError(f"{label}: no centre took part in secure aggregation")
        if settings.central:
            pr.noise_multiplier = calibrate_gaussian(settings.epsilon, settings.delta, rounds)
            acc = Accountant()
            acc.gaussian(pr.noise_multiplier, count=rounds)
            pr.epsilon = acc.epsilon(settings.delta)
            spend(
                {
                    "label": label,
                    "mechanism": "gaussian (central DP-FedAvg)",
                    "releases": rounds,
                    "noise_multiplier": pr.noise_multiplier,
                    "clip": settings.clip,
                    "epsilon": pr.epsilon,
                    "delta": settings.delta,
                    "centres": list(pr.members),
                }
            )
        return pr

    def instruction(self, rnd: int, cohort: Sequence[str]) -> dict[str, Any]:
        s = self.settings
        ins: dict[str, Any] = {"weight": "n" if self.form == "weighted" else None}
        if self.form == "dp":
            ins["update"] = {"field": "parameters", "clip": s.clip}
            ins["keep"] = ["parameters", "n"]  # the loss of a noised model is not summed
        ins["secagg"] = self.secure.instruction(rnd, cohort) if self.secure else None
        return ins

    def round(
        self,
        rnd: int,
        parameters: NDArrays,
        pairs: Sequence[tuple[Any, dict]],
        kind: str,
        protocol: Protocol,
    ) -> tuple[list[tuple], int]:
        """Ask the round's cohort, sum (unmask), add noise, and return ``([(mean, N,
        metrics)], participants)``; an empty list when every centre abstained."""
        pairs = [(p, c) for p, c in pairs if str(p.cid) in self.members]
        cohort = [str(p.cid) for p, _ in pairs]
        ins = encode_instruction(self.instruction(rnd, cohort))
        replies: dict[str, Message | None] = {}
        for p, cfg in pairs:
            out = p.fit(parameters, {**cfg, INSTRUCTION: ins}, rnd, kind, protocol)
            replies[str(p.cid)] = (
                None if out is None else {"parameters": out[0], "n": out[1], **dict(out[2])}
            )
        if all(v is None for v in replies.values()):
            return [], 0
        if self.secure is not None:
            sums, alive = self.secure.unmask(rnd, cohort, replies, protocol)
        else:
            sums, alive = _plain_sum(replies, protocol)
        n_tot = float(np.asarray(sums.pop("n")))
        total = [np.asarray(a, np.float64) for a in sums.pop("parameters")]
        metrics = {k: float(np.asarray(v)) for k, v in sums.items() if np.asarray(v).size == 1}
        if self.form == "dp":
            rng = np.random.default_rng(_noise_seed(self.settings.seed, self.label, rnd))
            sd = self.noise_multiplier * self.settings.clip
            denom = float(len(cohort))
            new = [
                np.asarray(c, np.float64) + (t + rng.normal(0.0, sd, t.shape)) / denom
                for c, t in zip(parameters, total, strict=True)
            ]
            metrics = {k: v / len(alive) for k, v in metrics.items()}
        elif self.form == "weighted":
            new = [t / n_tot for t in total]
            metrics = {k: v / n_tot for k, v in metrics.items()}
        elif self.form == "mean":
            new = [t / len(alive) for t in total]
            metrics = {k: v / len(alive) for k, v in metrics.items()}
        else:  # sum
            new = total
        new = [a.astype(np.asarray(c).dtype) for a, c in zip(new, parameters, strict=True)]
        return [(new, n_tot if self.form == "weighted" else 1, metrics)], len(alive)


def _noise_seed(seed: int, label: str, rnd: int) -> int:
    from fedclust.seeds import derive_seed

    return derive_seed(seed, "dp", "central", label, rnd)


def _plain_sum(
    replies: Mapping[str, Message | None], protocol: Protocol
) -> tuple[dict[str, Any], list[str]]:
    """Σ over the replies (float64, in reply order) of every declared non-metadata field (as
    :meth:`.secagg.SecureAggregator.unmask`: a key the server side added is not summed)."""
    alive = [c for c, m in replies.items() if m is not None]
    out: dict[str, Any] = {}
    for c in alive:
        for k, v in replies[c].items():
            if protocol.kind(k) in (None, "metadata"):
                continue
            if isinstance(v, list | tuple):
                arrs = [np.asarray(a, np.float64) for a in v]
                out[k] = (
                    arrs if k not in out else [a + b for a, b in zip(out[k], arrs, strict=True)]
                )
            else:
                a = np.asarray(v, np.float64)
                out[k] = a if k not in out else out[k] + a
    return out, alive


def secure_sum(
    proxies: Sequence[Any],
    method: str,
    request: Message,
    rnd: int,
    kind: str,
    protocol: Protocol,
    down_protocol: Protocol | None = None,
    settings: PrivacySettings | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """One summing exchange (``proxy.call(method, request, ...)`` at every centre) whose server
    step is Σ over the centres: with secure aggregation on (``settings``, default the process's)
    the server gets only the sums (:mod:`.secagg`); off, the plain replies are summed in centre
    order (Python ``sum`` of floats, as a stage's own loop). Returns ``(sums, contributors)``:
    each non-metadata field summed (floats, arrays or lists of arrays). ``protocol`` should be
    declared ``summed=True`` so that a centre requiring secure aggregation can insist on it."""
    s = settings if settings is not None else current()
    if not s.secure_aggregation:
        replies = call_all(proxies, method, request, rnd, kind, protocol, down_protocol)
        msgs = {str(p.cid): m for p, m in zip(proxies, replies, strict=True)}
        alive = [c for c, m in msgs.items() if m is not None]
        out: dict[str, Any] = {}
        for k in protocol.fields:
            if protocol.kind(k) == "metadata" or not alive or k not in msgs[alive[0]]:
                continue
            vals = [msgs[c][k] for c in alive]
            if isinstance(vals[0], list | tuple):
                out[k] = [sum(parts) for parts in zip(*vals, strict=True)]
            else:
                out[k] = sum(vals)
        return out, alive
    if down_protocol is None:
        raise ValueError(f"secure_sum of {method!r} needs the request's protocol")
    agg = secagg.SecureAggregator(list(proxies), s.frac_bits)
    members = agg.setup(rnd)
    ins = encode_instruction({"weight": None, "secagg": agg.instruction(rnd, members)})
    replies = {}
    for p in proxies:
        if str(p.cid) in members:
            replies[str(p.cid)] = p.call(
                method,
                {**request, INSTRUCTION: ins},
                rnd,
                kind,
                protocol,
                _with_instruction(down_protocol),
            )
    if all(v is None for v in replies.values()):
        return {}, []
    sums, alive = agg.unmask(rnd, members, replies, protocol)
    return {k: (float(v) if np.ndim(v) == 0 else v) for k, v in sums.items()}, alive


def _with_instruction(protocol: Protocol) -> Protocol:
    """The request protocol with the instruction as a metadata field."""
    name = f"{protocol.name}+instruction"
    from .ledger import REGISTRY

    fields_ = {**protocol.fields, INSTRUCTION: "metadata"}
    known = REGISTRY.get(name)
    if known is not None and dict(known.fields) == fields_:
        return known
    return Protocol(name, fields_, min_samples=protocol.min_samples)
