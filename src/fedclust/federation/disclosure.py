"""A centre's own disclosure settings, and the check that runs *at the centre* before a message
leaves it (issue 22; DataSHIELD's disclosure traps are the model).

DataSHIELD runs its traps at the data custodian with thresholds the custodian sets
(``nfilter.tab``, ``nfilter.subset``, ``nfilter.glm``, ``nfilter.string``, ``nfilter.kNN``); a
server's request never lowers them. Here the same names live in the ``disclosure`` section of the
configuration (``disclosure.default``, overridden per centre under ``disclosure.centres``), and
:func:`check_outgoing` is applied to every reply a centre gives — by the in-process client proxy
and, on Flower, inside the ``ClientApp`` before the reply is encoded (:mod:`.guard`). The centre
knows its own number of samples, so counts are *checked*, not believed.

Rules (on top of the ledger's type and declared-field rules, :func:`.ledger.check_disclosure`):

- every ``count`` entry (and the centre's own ``n_samples``) ≥ ``max(protocol.min_samples,
  nfilter_subset)`` and ≤ ``n_samples``; ``table`` entries are 0 or ≥ ``nfilter_tab``;
- ``aggregate`` arrays whose leading dimension equals ``n_samples`` are refused (a summary
  with one row per sample is not a summary);
- ``per_sample`` fields only for protocols the centre lists in ``allow_per_sample``;
- a protocol marked ``glm`` releases at most ``nfilter_glm · n_samples`` parameters;
- metadata strings at most ``nfilter_string`` characters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from fedclust.errors import ConfigError, DisclosureError

#: The config section and its keys (defaults: DataSHIELD's, raised to ≥ 3 where they are lower).
SECTION = "disclosure"


@dataclass(frozen=True)
class DisclosurePolicy:
    """One centre's disclosure settings (its own configuration, never the server's request)."""

    nfilter_tab: int = 3
    nfilter_subset: int = 3
    nfilter_glm: float = 0.33
    nfilter_string: int = 80
    nfilter_kNN: int = 3
    allow_per_sample: tuple[str, ...] = field(default_factory=tuple)

    def floor(self, protocol_min: int) -> int:
        """The smallest sample count a released statistic may summarise."""
        return max(int(protocol_min), int(self.nfilter_subset))

    def allows_per_sample(self, protocol: str) -> bool:
        return protocol in self.allow_per_sample


DEFAULT_POLICY = DisclosurePolicy()


def policy_from(section: Mapping[str, Any] | None, cid: str | None = None) -> DisclosurePolicy:
    """The policy of centre ``cid`` from a config's ``disclosure`` section: ``default`` with the
    centre's own entry under ``centres`` laid over it."""
    section = section or {}
    known = {f.name for f in fields(DisclosurePolicy)}
    merged: dict[str, Any] = dict(section.get("default") or {})
    if cid is not None:
        merged.update((section.get("centres") or {}).get(str(cid)) or {})
    bad = sorted(set(merged) - known)
    if bad:
        raise ConfigError(
            f"unknown disclosure setting(s) {bad}",
            where=f"{SECTION}.default / {SECTION}.centres",
            fix=f"use {sorted(known)}",
        )
    where = f"{SECTION}.default / {SECTION}.centres"
    for key, value in merged.items():  # a site's own file has no schema (issue 30 C)
        if key == "allow_per_sample":
            if value is not None and (
                not isinstance(value, list | tuple) or not all(isinstance(p, str) for p in value)
            ):
                raise ConfigError(
                    f"allow_per_sample is {value!r}, not a list of protocol names",
                    where=where,
                    fix="e.g. allow_per_sample: [hac.simultaneous]",
                )
            merged[key] = tuple(value or ())
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        whole = key != "nfilter_glm"
        bad = not number or not math.isfinite(value) or not value > 0
        if bad or (whole and (value != int(value) or value < 1)):
            raise ConfigError(
                f"disclosure setting {key} = {value!r} is not "
                + ("a whole number ≥ 1" if whole else "a number > 0"),
                where=where,
                fix=f"set {key} to " + ("an integer ≥ 1 (DataSHIELD's defaults: 3)" if whole
                                        else "a share > 0, e.g. 0.33"),
            )  # fmt: skip
        merged[key] = int(value) if whole else float(value)
    return replace(DEFAULT_POLICY, **merged)


#: floors where a larger value is stricter; the others (nfilter_glm, nfilter_string) the reverse
_RAISING = ("nfilter_tab", "nfilter_subset", "nfilter_kNN")


def lowered(own: DisclosurePolicy, new: DisclosurePolicy) -> list[str]:
    """The settings in which ``new`` is looser than ``own`` ("nfilter_tab 5 → 1"): a floor
    lowered, a share or string length raised, a per-sample protocol added."""
    out = [f"{k} {getattr(own, k)} → {getattr(new, k)}" for k in _RAISING
           if getattr(new, k) < getattr(own, k)]  # fmt: skip
    out += [f"{k} {getattr(own, k)} → {getattr(new, k)}" for k in ("nfilter_glm", "nfilter_string")
            if getattr(new, k) > getattr(own, k)]  # fmt: skip
    added = sorted(set(new.allow_per_sample) - set(own.allow_per_sample))
    return out + ([f"allow_per_sample + {added}"] if added else [])


def policy_for(config: Mapping[str, Any] | None, cid: str | None = None) -> DisclosurePolicy:
    """The policy of centre ``cid`` from a whole workflow config (its ``disclosure`` section)."""
    return policy_from((config or {}).get(SECTION), cid)


#: The ``disclosure`` section the centres of this process were configured with. In a workflow
#: job every simulated centre lives in the job's process and reads its own entry from the
#: job's config (:func:`configure`, called by the rule scripts' boilerplate); a Flower
#: SuperNode configures only its own centre. A centre object may also carry ``disclosure``.
_CONFIGURED: dict[str, Any] = {}


def configure(section: Mapping[str, Any] | None) -> None:
    """Set the centres' ``disclosure`` section for this process (validated at once)."""
    section = dict(section or {})
    policy_from(section)
    for cid in section.get("centres") or {}:
        policy_from(section, cid)
    _CONFIGURED.clear()
    _CONFIGURED.update(section)


def configured_policy(cid: str | None) -> DisclosurePolicy:
    """Centre ``cid``'s policy from the section :func:`configure` set (default: DataSHIELD's)."""
    return policy_from(_CONFIGURED, cid)


# ---------------------------------------------------------------- the centre-side check
def _violation(what: str, centre: str, protocol: str, rule: str) -> DisclosureError:
    return DisclosureError(what, center=centre, protocol=protocol, rule=rule,
                           fix="the centre abstains instead of sending")  # fmt: skip


def _entries(value: Any) -> np.ndarray:
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple):
        parts = [_entries(v) for v in value]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.asarray(value, dtype=np.float64).ravel()


def _arrays(value: Any) -> list[np.ndarray]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [a for v in value for a in _arrays(v)]
    return []


def _n_floats(value: Any) -> int:
    return int(sum(a.size for a in _arrays(value))) + (
        1 if isinstance(value, int | float) and not isinstance(value, bool) else 0
    )


def check_outgoing(
    message: Mapping[str, Any],
    protocol: Any,
    policy: DisclosurePolicy,
    centre: str,
    n_samples: int | None,
) -> None:
    """Raise :class:`DisclosureError` unless the centre may send ``message`` (module docstring).
    ``message`` is already a checked plain copy (:func:`.ledger.snapshot`)."""
    name = protocol.name
    kinds = {k: protocol.kind(k) for k in message}
    floor = policy.floor(protocol.min_samples)
    summarises = any(k in ("aggregate", "parameters", "count", "table") for k in kinds.values())
    if n_samples is not None and summarises and int(n_samples) < floor:
        raise _violation("the centre holds fewer samples than its floor", centre, name,
                         f"centre-floor>={floor}")  # fmt: skip
    for key, kind in kinds.items():
        value = message[key]
        if kind == "count":
            e = _entries(value)
            if e.size and e.min() < floor:
                raise _violation(f"count field {key!r} is below the centre's floor", centre,
                                 name, f"nfilter_subset>={floor}")  # fmt: skip
            if n_samples is not None and e.size and e.max() > int(n_samples):
                raise _violation(f"count field {key!r} exceeds the centre's own sample count",
                                 centre, name, "counts-are-checked")  # fmt: skip
        elif kind == "table":
            e = _entries(value)
            small = (e > 0) & (e < policy.nfilter_tab)
            if small.any():
                raise _violation(f"table field {key!r} has a non-empty cell below nfilter_tab",
                                 centre, name, f"nfilter_tab>={policy.nfilter_tab}")  # fmt: skip
        elif kind == "aggregate" and n_samples is not None and n_samples > 1:
            for a in _arrays(value):
                if a.ndim >= 2 and a.shape[0] == int(n_samples):  # 1-D: a feature vector
                    raise _violation(f"field {key!r} has one row per sample", centre, name,
                                     "aggregates-are-not-per-sample")  # fmt: skip
        elif kind == "per_sample" and not policy.allows_per_sample(name):
            raise _violation(f"field {key!r} holds per-sample rows and the centre has not opted "
                             "in", centre, name, "per-sample-opt-in")  # fmt: skip
        elif kind == "metadata":
            for s in value if isinstance(value, list | tuple) else [value]:
                if isinstance(s, str) and len(s) > policy.nfilter_string:
                    raise _violation(
                        f"metadata field {key!r} is longer than nfilter_string",
                        centre,
                        name,
                        f"nfilter_string<={policy.nfilter_string}",
                    )
    if getattr(protocol, "glm", False) and n_samples is not None:
        n_par = sum(_n_floats(message[k]) for k, kind in kinds.items() if kind == "parameters")
        if n_par > policy.nfilter_glm * int(n_samples):
            raise _violation("more parameters than nfilter_glm allows for the centre's size",
                             centre, name, f"nfilter_glm<={policy.nfilter_glm}")  # fmt: skip
