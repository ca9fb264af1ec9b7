"""Flower's app API in one process: a ``ServerApp`` and one ``ClientApp`` per centre on a
:class:`LocalGrid`.

The simulation engine runs the objects a deployment runs — a ``ServerApp`` whose main function
talks to the centres through a Flower :class:`~flwr.serverapp.Grid`, a ``ClientApp`` per
centre, every request and reply a Flower ``Message`` whose arrays travel as ``ArrayRecord``
``.npy`` bytes (the receiver never shares an array with the sender) — but the grid hands a
pushed message to its centre's ``ClientApp`` at once, in the calling thread, in sending order,
and keeps the reply until it is pulled (like Flower's own in-memory grid, it passes the
``Message`` object; the deployment's network wire is tested on localhost). So the centres are
the job's own objects (state a centre keeps across rounds — its shuffling generator, the TSAE
it keeps after DEC stage B — is the in-process engine's), the numbers are the in-process
engine's bit for bit, and a round costs the work plus the encoding: no poll.

Why not Flower's Simulation Runtime (``flwr.simulation.run_simulation``): it is deprecated in
Flower 1.40 ("use ``flwr run``"), and ``flwr run`` starts the runtime in another process with
the Ray backend, which runs every ``ClientApp`` call on a pickled copy of the centres (no state
across rounds). Its message poll — a fixed ``f_stop.wait(0.1)`` per sweep over the nodes in
``vce_api.add_messages_to_queue`` — cost ≈ 0.1 s per centre per round, ≈ 1 s a round for 10
centres against 0.1–0.25 s of work (issue 30, B.6). :class:`LocalGrid` implements Flower's
public ``Grid`` interface (``flwr.serverapp.Grid``); ``tests/test_flower.py`` fails loudly when
a Flower upgrade changes that interface or the pinned version.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.supercore.task_identity import TaskIdentity

from .apps import discover, make_client_app

T = TypeVar("T")
RUN_ID = 1
SERVER_NODE = 0
#: the methods of ``flwr.serverapp.Grid`` that :class:`LocalGrid` implements (checked by a test)
GRID_METHODS = frozenset(
    {"create_message", "get_node_ids", "pull_messages", "push_messages", "run",
     "send_and_receive", "set_run"}
)  # fmt: skip


class LocalGrid(Grid):
    """A Flower ``Grid`` whose SuperNodes live in this process.

    ``push_messages`` hands each message to its node's ``ClientApp`` with that
    node's persistent ``Context`` (``node_config``: ``partition-id``, ``num-partitions``, as in
    Flower's simulation) and keeps the serialised reply for ``pull_messages``. An exception in
    a ``ClientApp`` propagates to the caller (as in-process), it is not turned into an error
    reply; ``messages`` counts what crossed the grid.
    """

    def __init__(self, client_app: ClientApp, n_nodes: int, run_config: dict | None = None,
                 node_configs: Sequence[dict] | None = None):  # fmt: skip
        self.client_app = client_app
        configs = node_configs or [{"partition-id": i, "num-partitions": n_nodes}
                                   for i in range(n_nodes)]  # fmt: skip
        self.contexts = {
            node_id: Context(run_id=RUN_ID, node_id=node_id, node_config=dict(cfg),
                             state=RecordDict(), run_config=dict(run_config or {}))
            for node_id, cfg in zip(range(1, len(configs) + 1), configs, strict=True)
        }  # fmt: skip
        self._replies: dict[str, Message] = {}
        self._ids = itertools.count(1)
        self._run: Any = None
        self.messages = 0

    # -- Flower's Grid interface
    def set_run(self, run: Any) -> None:
        self._run = run

    @property
    def run(self) -> Any:
        return self._run

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int,
                       group_id: str, ttl: float | None = None) -> Message:  # fmt: skip
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        ids = []
        for msg in messages:
            node = msg.metadata.dst_node_id
            if node not in self.contexts:
                raise ValueError(f"no SuperNode {node} on this grid ({sorted(self.contexts)})")
            msg_id = f"m{next(self._ids)}"
            msg.metadata.__dict__["_message_id"] = msg_id
            self._replies[msg_id] = self.client_app(message=msg, context=self.contexts[node])
            self.messages += 1
            ids.append(msg_id)
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return [self._replies.pop(i) for i in list(message_ids) if i in self._replies]

    def send_and_receive(
        self, messages: Iterable[Message], *, timeout: float | None = None
    ) -> Iterable[Message]:
        return self.pull_messages(self.push_messages(messages))


@contextlib.contextmanager
def task_identity(run_id: int = RUN_ID, node_id: int = SERVER_NODE) -> Iterator[None]:
    """Flower 1.40 stamps every new ``Message`` with the process's task identity (set by its
    runtimes when they start a ServerApp/ClientApp process); set it for this run, restore it."""
    saved = (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id)
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, run_id, node_id
    try:
        yield
    finally:
        TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = saved


def simulate(server_main: Callable[[Grid, dict[str, int]], T], clients: Sequence[Any]) -> T:
    """Run ``server_main(grid, {cid: node_id})`` as a Flower ``ServerApp`` against one
    ``ClientApp`` per core client (partition id i serves ``clients[i]``); return its result."""
    result: dict[str, Any] = {}
    server = ServerApp()

    @server.main()
    def _main(grid: Grid, context: Context) -> None:
        result["out"] = server_main(grid, discover(grid, len(clients)))

    client_app = make_client_app(lambda ctx: clients[int(ctx.node_config["partition-id"])])
    grid = LocalGrid(client_app, len(clients))
    with task_identity():
        server(grid, Context(run_id=RUN_ID, node_id=SERVER_NODE, node_config={},
                             state=RecordDict(), run_config={}))  # fmt: skip
    if "out" not in result:  # pragma: no cover - the ServerApp returns or raises
        raise RuntimeError("the Flower ServerApp did not finish")
    return result["out"]
