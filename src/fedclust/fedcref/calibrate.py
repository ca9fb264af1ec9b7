"""θ calibration utility (seed 002 §8.4): on a *labelled validation* client system (own seed,
oracle partition), the distribution of the association statistic max(stat_ab, stat_ba) for
same-class vs different-class cluster pairs, and the θ that separates them.

A pair passes when its statistic ≤ θ. One false link merges two groups in the connected
components, so θ is the largest observed statistic at which the expected number of wrong links
in a system of this size, FPR(θ) × (different-class pairs per validation system), stays
≤ ``max_wrong_links``; θ is placed midway to the next larger statistic. The paper's θ = 0.2 is
reported beside it, with its TPR/FPR on the same pairs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedclust.seeds import derive_seed

from .algorithm import Client, FedCRefParams
from .experiments import system_for
from .system import oracle_partition


def pair_statistics(
    cfg: dict, setting: dict, x_pool: np.ndarray, y_pool: np.ndarray, seed: int
) -> pd.DataFrame:
    """One validation system: every cross-client cluster pair, its statistic and same-class."""
    cl = system_for(cfg, setting, y_pool, seed)
    p = FedCRefParams.from_config(cfg, theta=1.0)
    clients = [
        Client(i, c.cid, x_pool[c.idx], oracle_partition(c.y), c.k, p, seed)
        for i, c in enumerate(cl)
    ]
    models = {c.index: c.train_local(0) for c in clients}
    for c in clients:  # models travel, each client evaluates them on its own data only
        for j, m in models.items():
            if j != c.index:
                c.evaluate_models(m)
    stat = {}
    uid_of = {(c.index, q): u for c in clients for q, u in c.models.items()}
    for c in clients:
        foreign = {n: u for n, u in uid_of.items() if n[0] != c.index}
        msg = c.association_stats(foreign)
        for a, q in enumerate(msg["clusters"]):
            for b, f in enumerate(msg["foreign"]):
                stat[((c.index, int(q)), (int(f[0]), int(f[1])))] = msg["stat"][a, b]
    cls = {(i, q): int(np.unique(c.y)[q]) for i, c in enumerate(cl) for q in range(c.k)}
    rows = []
    for (a, b), s in stat.items():
        if a < b:
            rows.append(
                {
                    "a": f"{a[0]}:{a[1]}",
                    "b": f"{b[0]}:{b[1]}",
                    "stat_ab": s,
                    "stat_ba": stat[(b, a)],
                    "stat": max(s, stat[(b, a)]),
                    "same_class": bool(cls[a] == cls[b]),
                }
            )
    return pd.DataFrame(rows)


def choose_theta(
    pairs: pd.DataFrame, max_wrong_links: float = 1.0, n_systems: int = 1
) -> dict[str, float]:
    """θ from the same/different distributions (module docstring); with rates at θ."""
    s = pairs["stat"].to_numpy(float)
    same = pairs["same_class"].to_numpy(bool)
    if same.sum() == 0 or (~same).sum() == 0:
        raise ValueError("calibration needs both same-class and different-class pairs")
    cand = np.unique(s[np.isfinite(s)])
    wrong = np.array([(s[~same] <= t).sum() for t in cand]) / max(n_systems, 1)
    ok = np.flatnonzero(wrong <= max_wrong_links)
    i = int(ok[-1]) if len(ok) else 0
    nxt = cand[i + 1] if i + 1 < len(cand) else min(1.0, cand[i] + 0.01)
    theta = float(np.clip((cand[i] + nxt) / 2, 1e-6, 1.0))
    return {
        "theta": theta,
        "tpr": float((s[same] <= theta).mean()),
        "fpr": float((s[~same] <= theta).mean()),
        "same_median": float(np.median(s[same])),
        "different_median": float(np.median(s[~same])),
        "same_n": int(same.sum()),
        "different_n": int((~same).sum()),
        "expected_wrong_links": float((s[~same] <= theta).sum() / max(n_systems, 1)),
    }


def calibrate(
    cfg: dict, setting: dict, x_pool: np.ndarray, y_pool: np.ndarray, seed: int
) -> tuple[dict[str, float], pd.DataFrame]:
    reps = int(cfg["calibration"]["repetitions"])
    pairs = pd.concat(
        [
            pair_statistics(
                cfg, setting, x_pool, y_pool, derive_seed(seed, "calibration", r)
            ).assign(repetition=r)
            for r in range(reps)
        ],
        ignore_index=True,
    )
    out = choose_theta(pairs, float(cfg["calibration"]["max_wrong_links"]), reps)
    paper = float(cfg["association"]["paper_theta"])
    s, same = pairs["stat"].to_numpy(float), pairs["same_class"].to_numpy(bool)
    out.update(
        paper_theta=paper,
        paper_tpr=float((s[same] <= paper).mean()),
        paper_fpr=float((s[~same] <= paper).mean()),
    )
    return out, pairs
