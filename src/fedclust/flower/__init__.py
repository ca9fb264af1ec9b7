"""Flower as a transport of the federation core (issues 13, 30).

The core (:mod:`fedclust.federation`) owns the algorithms: centres (``fit`` / ``kmeans`` /
``evaluate`` of the stage's centre objects), strategies (``aggregate_fit``) and the one round
loop (:func:`fedclust.federation.run_rounds`). This package only changes the transport: a
:class:`~.apps.FlowerClientProxy` has the interface of the core's ``LedgerClientProxy`` but moves
every request and answer as a Flower ``Message`` between a ``ServerApp`` and a ``ClientApp``
(:mod:`.apps`); the ledger counts, on the server side, exactly what was sent and received. The
simulation runs Flower's apps in the job's process (:mod:`.simulation`), the deployment on a
SuperLink with one SuperNode per centre (:mod:`.deploy`, :mod:`.localhost`, README "Flower
deployment"); which stages deploy is :mod:`fedclust.deployment`'s registry, not this package's.

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
