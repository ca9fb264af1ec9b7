"""The Flower transports of the federation core's seam (:mod:`fedclust.federation.transport`).

``flower-simulation``: the server function runs inside a Flower ``ServerApp`` in this process
(:mod:`.simulation`, a :class:`~.simulation.LocalGrid`), each centre behind a ``ClientApp``
(:mod:`.apps`),
every request and reply a Flower ``Message``; the proxies are :class:`~.apps.FlowerClientProxy`,
which have the in-process proxy's interface and the same ledger hook, so numbers and ledger
tables equal the in-process ones. ``flower-deployment``: the centres live on their own
SuperNodes (:mod:`.deploy`, README "Flower deployment"); a job cannot hand it centre objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fedclust.errors import ConfigError
from fedclust.federation import Ledger
from fedclust.federation.transport import Server, T, centre_id, register


@dataclass(frozen=True)
class FlowerSimulation:
    """Flower's ServerApp and ClientApps in this process on a :class:`~.simulation.LocalGrid`."""

    name: str = "flower-simulation"

    def run(self, centres: Sequence[Any], server: Server[T], ledger: Ledger) -> T:
        from .apps import FlowerClientProxy
        from .simulation import simulate

        def main(grid: Any, node_of: dict[str, int]) -> T:
            return server(
                [FlowerClientProxy(centre_id(c), node_of[centre_id(c)], grid, ledger)
                 for c in centres]
            )  # fmt: skip

        return simulate(main, list(centres))


@dataclass(frozen=True)
class FlowerDeployment:
    """Centres on their own SuperNodes: started by ``fedclust deploy``, not inside a job."""

    name: str = "flower-deployment"

    def run(self, centres: Sequence[Any], server: Server[T], ledger: Ledger) -> T:
        raise ConfigError(
            "federation.engine: flower-deployment runs the centres on their own SuperNodes, "
            "not inside a workflow job",
            where="federation.engine",
            fix="deploy a registered stage (fedclust.deployment) with `fedclust deploy` or the "
            "README's recipe ('Flower deployment'), or use inprocess / flower-simulation in "
            "the workflow",
        )


register("flower-simulation", FlowerSimulation)
register("flower-deployment", FlowerDeployment)
