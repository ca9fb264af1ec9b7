"""Train / blind-test split and the four centre scenarios of D6.2 §8.3.2 (seed 003 §7.5).

* ``iid_balanced``: a random permutation cut into K equal parts;
* ``iid_unbalanced``: one hub with ``hub_fraction`` (40 %) of the patients, the rest split equally
  over the other K − 1 centres (D6.2 does not say how the other 60 % are split);
* ``noniid_time``: patients sorted by survival time (of the endpoint, event or censoring), cut
  into K equal contiguous bins (non-overlapping time ranges, D6.2 Fig. 8.7a);
* ``noniid_bm_blast``: sorted by bone-marrow blasts (raw %, ties broken at random), K equal
  contiguous bins (D6.2 Fig. 8.7b).
"""

from __future__ import annotations

import numpy as np

from fedclust.errors import ConfigError, InputDataError

from .names import SCENARIOS


def split_train_test(n: int, event: np.ndarray, test_fraction: float, seed: int):
    """Indices (train, test), stratified by event status."""
    if not 0 < test_fraction < 1:
        raise ConfigError(
            f"test fraction {test_fraction} not in (0, 1)", where="survival.test_fraction"
        )
    from sklearn.model_selection import train_test_split  # here: the DAG parse imports SCENARIOS

    idx = np.arange(n)
    tr, te = train_test_split(
        idx, test_size=test_fraction, random_state=seed, stratify=np.asarray(event)
    )
    return np.sort(tr), np.sort(te)


def partition(
    scenario: str,
    n_centres: int,
    rng: np.random.Generator,
    time: np.ndarray | None = None,
    bm_blast: np.ndarray | None = None,
    hub_fraction: float = 0.4,
) -> np.ndarray:
    """Centre index (0..K−1) of each of the n training patients."""
    n = len(time) if time is not None else len(bm_blast)
    if n_centres < 1 or n_centres > n:
        raise ConfigError(f"{n_centres} centres for {n} patients", where="survival.n_centres")
    out = np.empty(n, dtype=int)
    if scenario == "iid_balanced":
        order = rng.permutation(n)
        for k, part in enumerate(np.array_split(order, n_centres)):
            out[part] = k
    elif scenario == "iid_unbalanced":
        if not 0 < hub_fraction < 1:
            raise ConfigError(
                f"hub fraction {hub_fraction} not in (0, 1)", where="survival.hub_fraction"
            )
        order = rng.permutation(n)
        n_hub = int(round(hub_fraction * n))
        out[order[:n_hub]] = 0
        rest = np.array_split(order[n_hub:], max(n_centres - 1, 1))
        for k, part in enumerate(rest, start=1 if n_centres > 1 else 0):
            out[part] = k
    elif scenario in ("noniid_time", "noniid_bm_blast"):
        v = time if scenario == "noniid_time" else bm_blast
        if v is None:
            raise InputDataError(
                f"scenario {scenario} needs its sorting variable", where="survival.partition"
            )
        v = np.asarray(v, dtype=float)
        if np.isnan(v).any():
            raise InputDataError(
                f"{int(np.isnan(v).sum())} training patient(s) have no value to sort on",
                where=f"survival scenario {scenario}",
                fix="impute BM_BLAST before partitioning",
            )
        order = np.lexsort((rng.random(n), v))  # by value, ties at random
        for k, part in enumerate(np.array_split(order, n_centres)):
            out[part] = k
    else:
        raise ConfigError(
            f"unknown scenario {scenario!r}",
            where="survival.scenarios",
            fix=f"one of {', '.join(SCENARIOS)}",
        )
    return out
