"""Flower as a second engine of the federation core (issue 13, "Flower as an engine").

The core (:mod:`fedclust.federation`) owns the algorithms: centers (``fit`` / ``kmeans`` /
``evaluate`` of the stage's client objects), strategies (``aggregate_fit``) and the one round loop
(:func:`fedclust.federation.run_rounds`). This package only changes the transport: a
:class:`~.proxy.FlowerClientProxy` has the interface of the core's ``LedgerClientProxy`` but moves
every request and answer as a Flower ``Message`` between a ``ServerApp`` and a ``ClientApp``
(:mod:`.apps`); the ledger counts, on the server side, exactly what was sent and received. The
simulation runs on Flower's Simulation Runtime (:mod:`.simulation`), the deployment on a
SuperLink with one SuperNode per center (:mod:`.deploy`, README "Flower deployment").

Requires the optional extra ``fedclust[flower]`` (``flwr[simulation]==1.40.0``).
"""

from __future__ import annotations

FLOWER_VERSION = "1.40.0"


def require_flwr() -> None:
    """Import check with a clear fix when the extra is missing."""
    try:
        import flwr  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from fedclust.errors import ConfigError

        raise ConfigError(
            "a Flower engine needs the Flower package",
            where="federation.engine",
            fix=f"pip install 'fedclust[flower]' (flwr[simulation]=={FLOWER_VERSION}) "
            "or set federation.engine: inprocess",
        ) from exc
