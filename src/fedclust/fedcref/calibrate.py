"""θ calibration utility (seed 002 §8.4) and the statistic's dependence on the cluster size S.

Calibration: on *labelled validation* client systems (own seeds, the run's system size), the
association statistic max(stat_ab, stat_ba) for same-class vs different-class cluster pairs,
and the θ that separates them. The validation partitions carry the run's own initial dirtiness
(dirty-uniform at the setting's dirtiness; a DEC start at ``calibration.dec_dirtiness``, the
paper's "DEC produces a level of dirtiness around 0.2", §3.5): a θ calibrated on clean
partitions over-links dirty ones (issue 28). A pair's class is each cluster's Hungarian-mapped
true class (the same rule as the wrong-link count, evaluation only).

A pair passes when its statistic ≤ θ. One false link merges two groups in the connected
components, so θ is the largest observed statistic at which the expected number of wrong links
per validation system, FPR(θ) × (different-class pairs per system), stays ≤
``max_wrong_links``; θ is placed midway to the next larger statistic. The paper's θ = 0.2 is
reported beside it, with its TPR/FPR on the same pairs.

Size study (:func:`size_statistics`): eq. 2 min-max normalises |ΔE| per vector, so what moves
the statistic is the number of samples S in the cluster (the α-th percentile of a min-max
normalised sample falls as S grows). For each S, two disjoint clusters of S samples per class
(a share ``dirtiness`` of each replaced by samples of other classes), one AE each, and the
statistic of every cross pair: same class (the two clusters of a class) vs different class.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from fedclust.seeds import derive_seed
from fedclust.seeds import rng as make_rng

from .algorithm import Client, FedCRefParams
from .association import direction_statistic, node_classes
from .init import initial_partition
from .model import errors_many, generator, make_ae
from .parallel import Job, run_jobs
from .settings import level_of  # noqa: F401  (re-exported)
from .system import system_for


def pair_statistics(
    cfg: dict,
    setting: dict,
    x_pool: np.ndarray,
    y_pool: np.ndarray,
    seed: int,
    dirtiness: float = 0.0,
) -> pd.DataFrame:
    """One validation system with dirty-uniform partitions: every cross-client cluster pair,
    its statistic and whether both clusters map to the same class."""
    cl = system_for(cfg, setting, y_pool, seed)
    p = FedCRefParams.from_config(cfg, theta=1.0)
    init = [
        initial_partition("dirty_uniform", x_pool[c.idx], c.y, c.k,
                          derive_seed(seed, "init", c.cid), cfg["dec"], dirtiness)
        for c in cl
    ]  # fmt: skip
    clients = [
        Client(i, c.cid, x_pool[c.idx], lab, c.k, p, seed)
        for i, (c, lab) in enumerate(zip(cl, init, strict=True))
    ]
    jobs = [c.local_jobs(0) for c in clients]
    trained = run_jobs(clients[0].template(), [j for js in jobs for _, _, j in js],
                       p.batch_size, p.lr, p.device)  # fmt: skip
    models = {}
    for c, js in zip(clients, jobs, strict=True):
        models[c.index] = c.set_local(js, trained[: len(js)])
        trained = trained[len(js) :]
    for c in clients:  # models travel, each client evaluates them on its own data only
        c.evaluate_models({u: w for j, m in models.items() if j != c.index for u, w in m.items()})
    stat = {}
    uid_of = {(c.index, q): c.models[q] for c in clients for q in c.live()}
    for c in clients:
        foreign = {n: u for n, u in uid_of.items() if n[0] != c.index}
        msg = c.association_stats(foreign)
        for a, q in enumerate(msg["clusters"]):
            for b, f in enumerate(msg["foreign"]):
                stat[((c.index, int(q)), (int(f[0]), int(f[1])))] = msg["stat"][a, b]
    cls = node_classes([c.labels for c in clients], [c.y for c in cl])
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
    cfg: dict,
    setting: dict,
    x_pool: np.ndarray,
    y_pool: np.ndarray,
    seed: int,
    levels: list[float] | None = None,
) -> tuple[list[dict[str, float]], pd.DataFrame]:
    """θ per initial dirtiness ``levels`` (default: clean); the pairs of every level."""
    reps = int(cfg["calibration"]["repetitions"])
    paper = float(cfg["association"]["paper_theta"])
    out, frames = [], []
    for level in levels if levels is not None else [0.0]:
        pairs = pd.concat(
            [
                pair_statistics(
                    cfg, setting, x_pool, y_pool, derive_seed(seed, "calibration", r), level
                ).assign(repetition=r)
                for r in range(reps)
            ],
            ignore_index=True,
        ).assign(dirtiness=level)
        row = choose_theta(pairs, float(cfg["calibration"]["max_wrong_links"]), reps)
        row = {"dirtiness": level, **row}
        s, same = pairs["stat"].to_numpy(float), pairs["same_class"].to_numpy(bool)
        row.update(
            paper_theta=paper,
            paper_tpr=float((s[same] <= paper).mean()),
            paper_fpr=float((s[~same] <= paper).mean()),
            paper_expected_wrong_links=float((s[~same] <= paper).sum() / reps),
        )
        out.append(row)
        frames.append(pairs)
    return out, pd.concat(frames, ignore_index=True)


def theta_for(calibration: dict, dirtiness: float) -> float:
    """The calibrated θ of the level nearest ``dirtiness`` in a calibration file's content."""
    levels = calibration.get("levels") or [calibration]
    best = min(levels, key=lambda r: abs(float(r.get("dirtiness", 0.0)) - float(dirtiness)))
    return float(best["theta"])


# ------------------------------------------------------------------ statistic vs S
def _shift(img: np.ndarray, side: int, r: np.random.Generator, max_px: int = 2) -> np.ndarray:
    dy, dx = r.integers(-max_px, max_px + 1, size=2)
    out = np.roll(img.reshape(side, side), (int(dy), int(dx)), axis=(0, 1))
    return out.reshape(-1)


def size_clusters(
    y: np.ndarray, x: np.ndarray, s: int, dirtiness: float, seed: int, augment: bool = True
) -> tuple[list[np.ndarray], list[int], list[int]]:
    """Two disjoint clusters of ``s`` samples per class (one per simulated client), a share
    ``dirtiness`` of each taken from other classes; a class with fewer than 2·s samples gives
    each cluster its half of the originals topped up with ±2 px shifted copies (``augment``)
    or is left out. Returns (cluster samples, cluster class, augmented samples per cluster)."""
    r = make_rng(seed, "fedcref", "size", s)
    classes = np.unique(y)
    side = int(round(np.sqrt(x.shape[1])))
    pools = {c: list(r.permutation(np.flatnonzero(y == c))) for c in classes}
    n_dirty = int(round(dirtiness * s))
    n_clean = s - n_dirty
    out, cls, aug = [], [], []
    for c in classes:
        need = 2 * n_clean
        if len(pools[c]) < need and not augment:
            continue
        own = pools[c][: min(need, len(pools[c]))]
        pools[c] = pools[c][len(own) :]
        for half in (own[0::2], own[1::2]):
            xs = [x[i] for i in half]
            k = len(xs)
            while len(xs) < n_clean:  # shifted copies of this cluster's own originals
                xs.append(_shift(x[half[len(xs) % k]], side, r))
            out.append(np.stack(xs[:n_clean]))
            cls.append(int(c))
            aug.append(max(n_clean - k, 0))
    for a, c in enumerate(cls):  # contamination: other classes' unused samples, else shifted
        others = [o for o in classes if o != c]
        picks = []
        for _ in range(n_dirty):
            o = others[int(r.integers(len(others)))]
            if pools[o]:
                picks.append(x[pools[o].pop()])
            else:
                picks.append(_shift(x[r.choice(np.flatnonzero(y == o))], side, r))
                aug[a] += 1
        if picks:
            out[a] = np.concatenate([out[a], np.stack(picks)])
    return out, cls, aug


def size_statistics(
    cfg: dict,
    x: np.ndarray,
    y: np.ndarray,
    sizes: list[int],
    levels: list[float],
    repetitions: int,
    seed: int,
    augment: bool = True,
) -> pd.DataFrame:
    """The association statistic of every cross pair of :func:`size_clusters` clusters, for
    each S in ``sizes``, dirtiness in ``levels`` and repetition (one AE per cluster with the
    run's autoencoder settings)."""
    ae = {**cfg["autoencoder"], **((cfg.get("size_study") or {}).get("autoencoder") or {})}
    p = FedCRefParams.from_config({**cfg, "autoencoder": ae}, theta=1.0)
    alpha = float(cfg["association"]["alpha"])
    model = make_ae(x.shape[1], p.hidden, None)
    rows = []
    for s in sizes:
        for level in levels:
            for rep in range(repetitions):
                sd = derive_seed(seed, "size", s, level, rep)
                clusters, cls, aug = size_clusters(y, x, int(s), float(level), sd, augment)
                xt = [torch.as_tensor(c, dtype=torch.float32) for c in clusters]
                jobs = [
                    Job(make_ae(x.shape[1], p.hidden, derive_seed(sd, "ae", i)).flat, xt[i],
                        p.epochs, generator(sd, "shuffle", i), p.patience)
                    for i in range(len(xt))
                ]  # fmt: skip
                out = run_jobs(model, jobs, p.batch_size, p.lr, p.device)
                flats = torch.stack([f for f, _ in out])
                err = [errors_many(model, flats, xi, device=p.device) for xi in xt]  # j on i
                for i in range(len(xt)):
                    for j in range(i + 1, len(xt)):
                        s_ij = direction_statistic(err[i][:, i], err[i][:, j], alpha)
                        s_ji = direction_statistic(err[j][:, j], err[j][:, i], alpha)
                        rows.append(
                            {"S": int(s), "dirtiness": float(level), "repetition": rep,
                             "class_a": cls[i], "class_b": cls[j],
                             "same_class": cls[i] == cls[j], "stat": max(s_ij, s_ji),
                             "augmented": int(aug[i] + aug[j])}
                        )  # fmt: skip
    return pd.DataFrame(rows)


def size_summary(stats: pd.DataFrame) -> pd.DataFrame:
    """Per (S, dirtiness): same- and different-class medians and ranges, the gap between the
    largest same-class and the smallest different-class statistic, TPR/FPR at the paper's θ."""
    rows = []
    for (s, d), g in stats.groupby(["S", "dirtiness"], sort=True):
        same, diff = g.stat[g.same_class], g.stat[~g.same_class]
        rows.append(
            {
                "S": int(s),
                "dirtiness": float(d),
                "same median": float(same.median()),
                "same range": f"{same.min():.3f}–{same.max():.3f}",
                "different median": float(diff.median()),
                "different 5th pct": float(diff.quantile(0.05)),
                "different min": float(diff.min()),
                "separated": bool(same.max() < diff.min()),
                "same pairs": int(len(same)),
                "different pairs": int(len(diff)),
                "augmented samples": int(g.augmented.max()),
            }
        )
    return pd.DataFrame(rows)
