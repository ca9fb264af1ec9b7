"""A centre's log of the sample sets whose sums it has released (issue 22: gradual sharing).

One run of gradual sharing publishes centroids of disjoint sets of ≥ n_min samples, which
isolate nobody. The workflow, however, runs the protocol on the *same* centre data under several
settings (n_min grid, linkages, panels); the server rebuilds each published set from the merge
broadcasts, and a linear combination of the published sums can equal one sample
(:func:`fedclust.privacy.attacks.gradual_differencing` recovers them on the unprotected code).

The centre therefore keeps a :class:`ReleaseLog` per data matrix: the indicator vectors of the
sets whose sums it released, as the orthogonal projector ``P`` onto their span. A release of set
``S`` is allowed only if, with ``S`` added, no vector supported on fewer than ``floor`` samples
lies in the span:

- one sample ``i`` is isolated iff ``P_ii = 1`` (its unit vector is in the span);
- two samples ``i, j`` are isolated (some ``a e_i + b e_j`` is in the span) iff the 2 × 2 block
  of ``I − P`` on ``{i, j}`` is singular: ``(1 − P_ii)(1 − P_jj) = P_ij²``.

That is exact for the default floor 3 (DataSHIELD's ``nfilter.subset``); for a larger floor the
log checks supports 1 and 2 and, in addition, every difference of two nested released sets
(the attack that matters in practice; an exact check of every support < floor is a
minimum-weight codeword problem). A set already in the span adds nothing and is always allowed.

Across Snakemake jobs the log is a file (:meth:`to_json` / :meth:`from_json`): the jobs that
release sums of one cohort's matrix run in a chain, each reading the previous job's log and
writing its own (``rules/hac.smk``), so the order of releases, and therefore every number, is
fixed by the config.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TOL = 1e-9


@dataclass
class ReleaseLog:
    """The released sets of one centre's samples (ids ``0 … n − 1``) and their span."""

    n: int
    floor: int = 3
    sets: list[tuple[int, ...]] = field(default_factory=list)
    refused: int = 0

    def __post_init__(self) -> None:
        self._P = np.zeros((self.n, self.n))
        self._sizes: list[int] = []
        done, self.sets = list(self.sets), []
        for s in done:
            self._add(s, self._residual(s))

    # ---- linear algebra
    def _vector(self, members: Iterable[int]) -> np.ndarray:
        v = np.zeros(self.n)
        v[np.asarray(list(members), dtype=int)] = 1.0
        return v

    def _residual(self, members: Iterable[int]) -> np.ndarray:
        v = self._vector(members)
        return v - self._P @ v

    def _add(self, members: Iterable[int], r: np.ndarray) -> None:
        key = tuple(sorted(int(i) for i in members))
        self.sets.append(key)
        nr = np.linalg.norm(r)
        if nr > TOL:
            q = r / nr
            self._P += np.outer(q, q)

    @staticmethod
    def _isolates(P: np.ndarray) -> bool:
        d = 1.0 - np.diag(P)
        if np.any(d < TOL):
            return True
        det = np.outer(d, d) - P**2
        np.fill_diagonal(det, 1.0)
        return bool(np.any(det < TOL))

    # ---- the centre's decision
    def allows(self, members: Iterable[int]) -> bool:
        """Whether releasing the sum over ``members`` keeps every sample hidden (module doc)."""
        members = sorted(int(i) for i in members)
        if len(members) < self.floor:
            return False
        r = self._residual(members)
        nr = np.linalg.norm(r)
        if nr <= TOL:
            return True  # already determined by earlier releases: nothing new
        q = r / nr
        if self._isolates(self._P + np.outer(q, q)):
            return False
        s = set(members)
        for old in self.sets:
            o = set(old)
            if (o < s and len(s - o) < self.floor) or (s < o and len(o - s) < self.floor):
                return False
        return True

    def release(self, members: Iterable[int]) -> bool:
        """Log the release of ``members`` if :meth:`allows` it; returns whether it may go."""
        members = list(members)
        if not self.allows(members):
            self.refused += 1
            return False
        self._add(members, self._residual(members))
        return True

    def release_all(self, sets: Iterable[Iterable[int]]) -> bool:
        """Log every set of ``sets`` if the log allows them all (one after another), else none."""
        trial = ReleaseLog(self.n, self.floor)
        trial._P, trial.sets = self._P.copy(), list(self.sets)
        for s in sets:
            if not trial.release(s):
                self.refused += 1
                return False
        self._P, self.sets = trial._P, trial.sets
        return True

    @property
    def rank(self) -> int:
        return int(round(np.trace(self._P)))

    # ---- files (one per chain link of Snakemake jobs)
    def state(self) -> dict:
        return {"n": self.n, "floor": self.floor, "sets": [list(s) for s in self.sets],
                "refused": self.refused}  # fmt: skip

    @classmethod
    def from_state(cls, s: Mapping) -> ReleaseLog:
        return cls(int(s["n"]), int(s["floor"]), [tuple(v) for v in s["sets"]], int(s["refused"]))


Logs = dict[str, dict[int, ReleaseLog]]


def to_json(logs: Logs, path: str | Path) -> None:
    """Write ``{matrix: {centre: log}}`` (atomically, via :mod:`fedclust.io`)."""
    from fedclust.io import write_json

    write_json(path, {m: {str(k): v.state() for k, v in c.items()} for m, c in logs.items()})


def from_json(path: str | Path | None) -> Logs:
    """Read a log file (None or a missing path: empty logs, the first link of a chain)."""
    if path is None or not Path(path).exists():
        return {}
    raw = json.loads(Path(path).read_text())
    return {m: {int(k): ReleaseLog.from_state(v) for k, v in c.items()} for m, c in raw.items()}


def logs_for(logs: Logs, matrix: str, sizes: Iterable[int], floor: int) -> dict[int, ReleaseLog]:
    """The per-centre logs of one data matrix (created empty on first use)."""
    cur = logs.setdefault(matrix, {})
    for k, n in enumerate(sizes):
        if k not in cur:
            cur[k] = ReleaseLog(int(n), int(floor))
        elif cur[k].n != int(n):
            raise ValueError(f"release log of {matrix!r} centre {k}: {cur[k].n} samples, data {n}")
    return cur
