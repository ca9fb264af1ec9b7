"""``flower-supernode`` with a shorter idle poll (the localhost test's SuperNodes).

Flower 1.40's SuperNode loop (``flwr.supernode.start_client_internal``) asks the SuperLink for
a message and, when there is none, sleeps a hard-coded 3 s (and 0.5 s between looks for its
ClientApp's reply); no option or variable sets it. A federated round trip therefore waits on
average 1.5 s per node — 2.25 s for the last of three — before a node even sees the request:
in a protocol of many short round trips (HAC's gradual sharing, the Cox-PH Newton steps) the
wait, not the computation, is the run. This launcher runs Flower's own ``flower-supernode``
entry point (same arguments, TLS, authentication, SuperExec and ClientApp processes) with the
module's ``time.sleep`` capped at ``FEDCLUST_SUPERNODE_POLL_S`` seconds; nothing else changes.
:class:`fedclust.flower.localhost.LocalFederation` uses it when given ``poll_s``; the recipe for
real sites (README) keeps the stock executable.

    FEDCLUST_SUPERNODE_POLL_S=0.25 python -m fedclust.flower.supernode --superlink ... (args)
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

ENV = "FEDCLUST_SUPERNODE_POLL_S"


class CappedClock:
    """The ``time`` module with ``sleep`` capped at ``poll_s`` seconds."""

    def __init__(self, poll_s: float) -> None:
        if not poll_s > 0:
            raise ValueError(f"{ENV} must be > 0 seconds, got {poll_s}")
        self.poll_s = float(poll_s)

    def sleep(self, seconds: float) -> None:
        time.sleep(min(float(seconds), self.poll_s))

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def patch(poll_s: float) -> None:
    """Cap the SuperNode loop's sleeps at ``poll_s`` seconds (fails loudly when a Flower
    upgrade moves the loop: the module or its ``time`` import is gone)."""
    import flwr.supernode.start_client_internal as loop

    if getattr(loop, "time", None) is not time:
        raise RuntimeError(
            "flwr.supernode.start_client_internal no longer sleeps through `time`: the "
            "poll patch of fedclust.flower.supernode needs updating for this Flower version"
        )
    loop.time = CappedClock(poll_s)  # type: ignore[assignment]


def main() -> None:
    patch(float(os.environ[ENV]))
    from flwr.supernode.cli import flower_supernode

    sys.argv[0] = "flower-supernode"
    flower_supernode()


if __name__ == "__main__":
    main()
