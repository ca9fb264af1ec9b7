"""The transport of every federated protocol, chosen from the config in this one place.

``federation.engine`` names it: ``inprocess`` (the core's ledger, :data:`fedclust.federation.
transport.INPROCESS`), ``flower-simulation`` or ``flower-deployment`` (:mod:`fedclust.flower`,
extra ``fedclust[flower]``). Rule scripts call :func:`from_config` and hand the object to the
stage, which passes it to :func:`fedclust.federation.federate`; nothing else reads the key.
This module sits above both the core and its Flower adapter, so the core never imports Flower.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedclust.errors import ConfigError
from fedclust.federation.transport import INPROCESS, TRANSPORTS, Transport

ENGINES = ("inprocess", "flower-simulation", "flower-deployment")
KEY = "federation.engine"


def get(name: str) -> Transport:
    """The transport called ``name`` (one of :data:`ENGINES`)."""
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}", where=KEY, fix=f"one of {list(ENGINES)}")
    if name == "inprocess":
        return INPROCESS
    from fedclust.flower import require_flwr

    require_flwr()
    import fedclust.flower.transport  # noqa: F401  (registers the Flower transports)

    return TRANSPORTS[name]()


def from_config(config: Mapping[str, Any] | None) -> Transport:
    """The transport the config's ``federation.engine`` names (default ``inprocess``)."""
    section = (config or {}).get("federation") or {}
    return get(str(section.get("engine", "inprocess")))
