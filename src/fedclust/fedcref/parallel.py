"""Parallel execution of one FedCRef iteration's independent local trainings (issue 28).

In one iteration every active client trains one fresh AE per local cluster (Step 1), and in
each FedAvg round every member of every group trains from its group's model (Step 3). These
trainings are independent; the simulation runs them as *one* batched training
(:func:`fedclust.fedcref.model.train_many`: an (M, P) parameter matrix, batched matmuls, which
the job's torch threads or a GPU run in parallel) instead of one after another. A job holds one
training's own inputs only - its cluster's samples, initial weights, epochs, minibatch
generator - and :func:`run_jobs` gives each job the result it would get alone
(``tests/test_fedcref_parallel.py``), so batching changes the time, never a number.

FedAvg rounds stay on the federation core's one round loop (:func:`run_rounds`, one per group).
:class:`Lockstep` runs the groups' loops side by side (one thread each, one running at a time)
and collects the member fits of a round from every group into one batch: a group's members
receive the same global weights in a round, so the first member call of a group submits the
fits of all its members (:class:`GroupRuntime`), and the batch runs once every group loop is
waiting on it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
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


class Lockstep:
    """Runs callables in threads, one at a time, batching the jobs they :meth:`submit`.

    A thread that submits blocks; when every live thread is blocked on a submission (or done),
    the collected jobs run as one :func:`run_jobs` batch, in the order of their keys, and all
    resume. Only one thread runs Python at any time, and a batch holds the same jobs in the
    same order whatever the thread schedule, so the numbers are those of a sequential run."""

    def __init__(self, model: FlatAE, batch_size: int, lr: float, device: str = "cpu") -> None:
        self.model, self.batch_size, self.lr, self.device = model, batch_size, lr, device
        self._cv = threading.Condition()
        self._turn = threading.Lock()  # held by the one thread that runs
        self._live = 0
        self._waiting = 0
        self._pending: list[tuple[tuple, Job, dict]] = []
        self._error: BaseException | None = None
        self.batches: list[int] = []  # jobs per batch (logs, tests)

    def map(self, fns: Sequence[Callable[[], Any]]) -> list[Any]:
        """``[f() for f in fns]``, each in its own thread (each may call :meth:`submit`)."""
        results: list[Any] = [None] * len(fns)
        errors: list[BaseException] = []

        def body(i: int) -> None:
            with self._turn:
                try:
                    results[i] = fns[i]()
                except BaseException as err:  # noqa: BLE001 - re-raised by map
                    errors.append(err)
                    with self._cv:
                        self._error = self._error or err
                        self._cv.notify_all()
                finally:
                    with self._cv:
                        self._live -= 1
                        self._flush_if_all_wait()

        self._live, self._waiting, self._pending, self._error = len(fns), 0, [], None
        threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(len(fns))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return results

    def submit(self, key: tuple, jobs: Sequence[Job]) -> list[tuple[torch.Tensor, list[float]]]:
        """Queue ``jobs`` (ordered in the batch by ``key``, then position) and wait for them."""
        slots: list[dict] = [{} for _ in jobs]
        with self._cv:
            self._pending += [
                ((*key, k), j, s) for k, (j, s) in enumerate(zip(jobs, slots, strict=True))
            ]
            self._waiting += 1
            self._flush_if_all_wait()
            while not all("out" in s for s in slots):
                if self._error is not None:
                    raise RuntimeError("a parallel training failed") from self._error
                self._cv.release()
                self._turn.release()  # the next thread runs while this one waits
                self._cv.acquire()
                if not all("out" in s for s in slots) and self._error is None:
                    self._cv.wait()
                self._cv.release()
                self._turn.acquire()  # resume in turn
                self._cv.acquire()
        return [s["out"] for s in slots]

    def _flush_if_all_wait(self) -> None:
        """(Condition held.) Run the pending batch once every live thread waits on it."""
        if self._error is not None or not self._pending or self._waiting < self._live:
            return
        pending = sorted(self._pending, key=lambda t: t[0])
        self._pending, self._waiting = [], 0
        try:
            outs = run_jobs(self.model, [j for _, j, _ in pending], self.batch_size, self.lr,
                            self.device)  # fmt: skip
        except BaseException as err:  # noqa: BLE001
            self._error = err
            self._cv.notify_all()
            raise
        self.batches.append(len(pending))
        for (_, _, slot), o in zip(pending, outs, strict=True):
            slot["out"] = o
        self._cv.notify_all()


class GroupRuntime:
    """The members of one FedAvg group as the simulation runs them: when a member is asked to
    fit and holds no result for these weights yet, the fits of every member without one run as
    one batch from the same global weights (FedAvg sends all members the same model) and each
    result is handed to its member (``deposit``); the member's own ``fit`` then answers from it
    (and trains alone if the weights or config differ)."""

    def __init__(
        self,
        members: Sequence[Any],
        make_job: Callable[[Any, NDArrays, dict], Job],
        ready: Callable[[Any, NDArrays, dict], bool],
        deposit: Callable[[Any, NDArrays, dict, Any], None],
        submit: Callable[[Sequence[Job]], list],
    ) -> None:
        self.members = list(members)
        self.make_job, self.ready, self.deposit, self.submit = make_job, ready, deposit, submit

    def prepare(self, i: int, parameters: NDArrays, config: dict) -> None:
        """Make sure member ``i`` holds its result for ``parameters`` / ``config``."""
        if self.ready(self.members[i], parameters, config):
            return
        others = range(len(self.members))
        todo = [i] + [j for j in others if j != i and not self.ready(self.members[j], parameters,
                                                                      config)]  # fmt: skip
        outs = self.submit([self.make_job(self.members[j], parameters, config) for j in todo])
        for j, o in zip(todo, outs, strict=True):
            self.deposit(self.members[j], parameters, config, o)


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
