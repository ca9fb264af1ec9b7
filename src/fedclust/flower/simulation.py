"""Flower's Simulation Runtime with a one-thread backend.

``run_simulation`` (Flower 1.40) starts the Simulation Runtime — an in-memory SuperLink state,
the ``ServerApp`` in a thread talking to it through an ``InMemoryGrid``, and workers that hand
each message to a backend which runs the ``ClientApp``. Flower ships one backend, Ray; it works
here offline with one CPU (about 18 s to start two virtual SuperNodes), but it runs every
``ClientApp`` call in an actor process on a pickled copy of the client objects, so a center's
state that lives across rounds (its minibatch shuffling generator, the TSAE it keeps) would
not be the in-process engine's. :class:`ThreadBackend` runs the ``ClientApp`` in the runtime's
worker thread on the very center objects, one message at a time in the order they were sent:
the same Flower messages, serialisation and state store, and the in-process engine's numbers.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from flwr.app import Context, Message
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from .apps import discover, make_client_app

T = TypeVar("T")
_LOCK = threading.Lock()
BACKENDS = ("thread", "ray")
PULL_INTERVAL_S = 0.001


def _backend_class() -> type:
    from flwr.server.superlink.fleet.vce.backend import Backend

    class ThreadBackend(Backend):
        """Runs the ``ClientApp`` in the calling worker thread (one worker)."""

        def __init__(self, backend_config: dict) -> None:
            super().__init__(backend_config)
            self.app_fn: Callable[[], ClientApp] | None = None

        def build(self, app_fn: Callable[[], ClientApp]) -> None:
            self.app_fn = app_fn

        @property
        def num_workers(self) -> int:
            return 1

        def is_worker_idle(self) -> bool:
            return True

        def terminate(self) -> None:
            self.app_fn = None

        def process_message(self, message: Message, context: Context) -> tuple[Message, Context]:
            assert self.app_fn is not None, "build() first"
            return self.app_fn()(message=message, context=context), context

    return ThreadBackend


@contextlib.contextmanager
def thread_backend() -> Iterator[None]:
    """Swap Flower 1.40's backend factory (``vce_api`` builds ``raybackend.RayBackend``)."""
    from flwr.server.superlink.fleet.vce.backend import raybackend

    with _LOCK:
        ray_cls = raybackend.RayBackend
        raybackend.RayBackend = _backend_class()
        try:
            yield
        finally:
            raybackend.RayBackend = ray_cls


def simulate(
    server_main: Callable[[Grid, dict[str, int]], T],
    clients: Sequence[Any],
    backend: str = "thread",
) -> T:
    """Run ``server_main(grid, {cid: node_id})`` as a ``ServerApp`` against one virtual
    SuperNode per core client (partition id i serves ``clients[i]``); return its result."""
    from flwr.simulation import run_simulation

    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}")
    result: dict[str, Any] = {}
    server = ServerApp()

    @server.main()
    def _main(grid: Grid, context: Context) -> None:
        # InMemoryGrid polls for replies every 0.1 s; the core's loop asks one center at a time
        if hasattr(grid, "pull_interval"):
            grid.pull_interval = PULL_INTERVAL_S
        result["out"] = server_main(grid, discover(grid, len(clients)))

    client_app = make_client_app(lambda ctx: clients[int(ctx.node_config["partition-id"])])
    cfg = {
        "client_resources": {"num_cpus": 1, "num_gpus": 0},
        "init_args": {"num_cpus": 1, "include_dashboard": False},
    }
    flwr_log = logging.getLogger("flwr")
    level = flwr_log.level
    flwr_log.setLevel(logging.WARNING)
    try:
        ctx = thread_backend() if backend == "thread" else contextlib.nullcontext()
        with ctx:
            run_simulation(server, client_app, num_supernodes=len(clients), backend_config=cfg)
    finally:
        flwr_log.setLevel(level)
    if "out" not in result:
        raise RuntimeError("the Flower ServerApp did not finish")
    return result["out"]
