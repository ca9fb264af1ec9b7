"""The Flower engine: the core's round loop with Flower as transport, and the engine switch.

:func:`run_rounds` has the signature of :func:`fedclust.federation.run_rounds` and runs that very
function inside a Flower ``ServerApp`` with :class:`~.apps.FlowerClientProxy` proxies: the
core's strategy aggregates (``aggregate_fit``), the core's centers train, Flower carries the
messages. :func:`use_engine` makes every federated stage that calls the core's round loop use it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import fedclust.federation as core
from fedclust.errors import ConfigError
from fedclust.federation import engine as core_engine

from . import ENGINES, require_flwr

#: How many round loops ran on Flower in this process (tests check the switch took effect).
RUNS = {"run_rounds": 0}


def run_rounds(
    proxies: Sequence[Any],
    strategy: core.Strategy,
    parameters: list,
    rounds: int,
    config: dict[str, Any],
    protocol: core.Protocol,
    kind: str = "fit",
    label: str = "",
    on_round: Callable[[int, list], None] | None = None,
    history: core.History | None = None,
) -> list:
    """:func:`fedclust.federation.run_rounds` on Flower's Simulation Runtime."""
    from .apps import FlowerClientProxy
    from .simulation import simulate

    def main(grid: Any, node_of: dict[str, int]) -> list:
        fps = [FlowerClientProxy(p.cid, node_of[p.cid], grid, p.ledger) for p in proxies]
        return core_engine.run_rounds(
            fps,
            strategy,
            parameters,
            rounds,
            config,
            protocol,
            kind,
            f"{label or kind} [flower]",
            on_round,
            history,
        )

    RUNS["run_rounds"] += 1
    return simulate(main, [p.client for p in proxies])


def check_engine(name: str, where: str = "engine") -> str:
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}", where=where, fix=f"one of {ENGINES}")
    if name == "flower":
        require_flwr()
    return name


@contextlib.contextmanager
def use_engine(name: str) -> Iterator[None]:
    """Within the block, the core's round loop (``fedclust.federation.run_rounds``, which every
    stage calls) runs on ``name``: ``inprocess`` (the core as is) or ``flower``."""
    check_engine(name)
    if name == "inprocess":
        yield
        return
    original = core.run_rounds
    core.run_rounds = run_rounds
    try:
        yield
    finally:
        core.run_rounds = original
