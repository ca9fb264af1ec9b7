"""Batched execution of a FedCRef simulation's independent local trainings (issue 28).

In one iteration every active client trains one fresh AE per local cluster (Step 1), and in
each FedAvg round every member of a group trains from its group's model (Step 3). These
trainings are independent; a simulation runs them as *one* batched training
(:func:`fedclust.fedcref.model.train_many`: an (M, P) parameter matrix, batched matmuls, which
the job's torch threads or a GPU run in parallel) instead of one after another. A job holds one
training's own inputs only - its cluster's samples, initial weights, epochs, minibatch
generator - and :func:`run_jobs` gives each job the result it would get alone
(``tests/test_fedcref_parallel.py``), so batching changes the time, never a number.

The clients stay behind the federation seam (:func:`fedclust.federation.federate`): the
server's requests of a step reach every client before any answer is asked for
(``fit_all`` / ``call_all``: ``push_fit`` / ``push_call``; in-process, the client's
``prefetch``), each client queues its own jobs on the simulation's :class:`SharedDevice`, and
the first answer runs the queue as one batch. On Flower (or without a device) every client
trains its own jobs when asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .model import FlatAE, NDArrays, train_many


@dataclass
class Job:
    """One local training: ``init`` (P,) weights, ``x`` the cluster's samples, ``epochs``,
    minibatch generator ``gen``, early-stop ``patience`` (None: off)."""

    init: torch.Tensor
    x: torch.Tensor
    epochs: int
    gen: torch.Generator
    patience: int | None = None


def run_jobs(
    model: FlatAE, jobs: Sequence[Job], batch_size: int, lr: float, device: str = "cpu"
) -> list[tuple[torch.Tensor, list[float]]]:
    """Every job trained (one :func:`train_many` call per early-stop setting); (weights, losses)
    per job, on the CPU."""
    out: list[Any] = [None] * len(jobs)
    by_patience: dict[int | None, list[int]] = {}
    for i, j in enumerate(jobs):
        by_patience.setdefault(j.patience, []).append(i)
    for patience, idx in by_patience.items():
        init = torch.stack([jobs[i].init for i in idx]).to(device)
        flat, losses = train_many(
            model, init, [jobs[i].x for i in idx], [jobs[i].epochs for i in idx], batch_size,
            lr, [jobs[i].gen for i in idx], patience,
        )  # fmt: skip
        flat = flat.cpu()
        for a, i in enumerate(idx):
            out[i] = (flat[a], losses[a])
    return out


def same_weights(a: NDArrays, b: NDArrays) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


class SharedDevice:
    """The compute device the centres of one in-process simulation share (as they would share
    a GPU): a centre told ahead of a request (:meth:`LedgerClientProxy.push_fit` /
    ``push_call``, its ``prefetch``) queues its own training jobs here, and the first centre
    that needs a result runs every queued job as one :func:`run_jobs` batch, in queue order;
    each result goes back to the centre that queued it (by its key) and to no other. Batching
    changes the time, never a number (:func:`run_jobs`). A deployed centre has no device."""

    def __init__(self, model: FlatAE, batch_size: int, lr: float, device: str = "cpu") -> None:
        self.model, self.batch_size, self.lr, self.device = model, batch_size, lr, device
        self._queue: list[tuple[tuple, Job]] = []
        self._done: dict[tuple, tuple[torch.Tensor, list[float]]] = {}
        self.batches: list[int] = []  # jobs per batch (logs, tests)

    def queue(self, key: tuple, job: Job) -> None:
        self._queue.append((key, job))

    def queued(self, key: tuple) -> bool:
        return key in self._done or any(k == key for k, _ in self._queue)

    def take(self, key: tuple) -> tuple[torch.Tensor, list[float]]:
        """The result of the job queued under ``key`` (running the queue first if needed)."""
        if key not in self._done:
            queue, self._queue = self._queue, []
            outs = run_jobs(self.model, [j for _, j in queue], self.batch_size, self.lr,
                            self.device)  # fmt: skip
            self.batches.append(len(queue))
            self._done.update((k, o) for (k, _), o in zip(queue, outs, strict=True))
        return self._done.pop(key)

    def drop(self, owner: str) -> None:
        """Forget ``owner``'s queued jobs and results (a prefetch its request did not match)."""
        self._queue = [(k, j) for k, j in self._queue if k[0] != owner]
        self._done = {k: v for k, v in self._done.items() if k[0] != owner}
