"""The server side of the stage's own protocols: only messages (secure sums, the centres' own
noisy releases), Gaussian noise added once after a secure sum (central DP).

Sensitivities (add/remove one record; each record lies in one centre and one cell):

- centring mean: Σ of rows clipped to ``raw_bound`` → Δ₂ = raw_bound (the centre sizes, and so
  N, are public in this simulation);
- DP-Lloyd per iteration: per-cluster counts Δ₂ = 1 and per-cluster sums of rows clipped to
  ``bound`` Δ₂ = bound — two Gaussian releases per iteration;
- Kaplan–Meier: the table of events and censorings per interval, one patient in one cell
  → Δ₂ = 1, one release.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import fcluster
from scipy.spatial.distance import cdist

from fedclust.federation import secure_sum
from fedclust.federation.dp import clip_rows
from fedclust.hac.pooled import weighted_linkage

from . import protocols as P


def dp_mean(
    proxies: Sequence[Any], raw_bound: float, noise_multiplier: float, rng: np.random.Generator
) -> np.ndarray:
    """The mean of the centres' clipped rows: (secure Σ + N(0, (z·raw_bound)²)) / N."""
    sums, _ = secure_sum(
        proxies,
        "mean_stats",
        {"parameters": [np.zeros(1)]},
        0,
        "mean",
        P.MEAN_STATS,
        P.MEAN_REQUEST,
    )
    s = np.asarray(sums["sum"], dtype=np.float64)[0]
    s = s + rng.normal(0.0, noise_multiplier * raw_bound, s.shape)
    return s / float(sums["n"])


def lloyd_noise(
    k: int, d: int, iterations: int, noise_multiplier: float, bound: float, rng: np.random.Generator
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The server's draws for every iteration: (count noise (k,), sum noise (k, d))."""
    return [
        (rng.normal(0.0, noise_multiplier, k), rng.normal(0.0, noise_multiplier * bound, (k, d)))
        for _ in range(iterations)
    ]


def lloyd_update(
    counts: np.ndarray, sums: np.ndarray, noise: tuple[np.ndarray, np.ndarray], bound: float
) -> np.ndarray:
    """One DP-Lloyd update from (summed) counts and sums and one noise draw: centroid =
    noisy sum / max(noisy count, 1), then projected onto the ball of radius ``bound`` (the
    rows' public bound; post-processing)."""
    c = np.asarray(counts, np.float64) + noise[0]
    s = np.asarray(sums, np.float64) + noise[1]
    return clip_rows(s / np.maximum(c, 1.0)[:, None], bound)


def dp_lloyd(proxies: Sequence[Any], init: np.ndarray, noise: list, bound: float) -> np.ndarray:
    """Federated DP-Lloyd: per iteration the secure sum of every centre's per-cluster counts
    and sums, the noise added once (:func:`lloyd_update`). ``noise``: :func:`lloyd_noise`."""
    c = np.asarray(init, dtype=np.float64)
    for it, draw in enumerate(noise, 1):
        sums, _ = secure_sum(
            proxies, "lloyd_stats", {"parameters": [c]}, it, "lloyd", P.LLOYD_STATS, P.LLOYD_REQUEST
        )
        c = lloyd_update(np.asarray(sums["counts"])[0], sums["sums"], draw, bound)
    return c


def cluster_releases(proxies: Sequence[Any], mean: np.ndarray, n_min: int) -> list[dict]:
    """Every centre's own (noisy) cluster release; abstentions are left out."""
    out = []
    for p in proxies:
        m = p.call(
            "cluster_release",
            {"parameters": [mean], "n_min": int(n_min), "k": 0},
            1,
            "cluster_release",
            P.CLUSTER_RELEASE,
            P.CLUSTER_REQUEST,
        )
        out.append(m)
    return out


def labels_from_releases(messages: Sequence[dict | None], k: int, method: str = "ward") -> list:
    """The server's tree over the released centroids (each weighted by its noisy count, ≥ 1),
    cut into ``k`` clusters: one array of cluster labels per centre (``None`` if it abstained).
    Ward distances as simultaneous sharing's server (|C| identical points at the centroid)."""
    kept = [m for m in messages if m is not None]
    sizes = np.concatenate([np.maximum(np.asarray(m["counts"])[0], 1.0) for m in kept])
    cents = np.vstack(
        [np.asarray(m["sums"]) / np.maximum(np.asarray(m["counts"])[0], 1.0)[:, None] for m in kept]
    )
    if len(cents) <= k:
        lab = np.arange(len(cents))
    else:
        d = cdist(cents, cents)
        if method == "ward":
            d = d * np.sqrt(2 * np.outer(sizes, sizes) / np.add.outer(sizes, sizes))
        z = weighted_linkage(d, sizes, method)
        n = len(cents)
        objects = np.ones(2 * n - 1)
        for i, (a, b) in enumerate(z[:, :2].astype(int)):
            objects[n + i] = objects[a] + objects[b]
        z[:, 3] = objects[n:]  # scipy's cut wants object counts, not weights
        lab = fcluster(z, k, criterion="maxclust") - 1
    out, pos = [], 0
    for m in messages:
        if m is None:
            out.append(None)
            continue
        size = np.asarray(m["counts"]).shape[1]
        out.append(lab[pos : pos + size])
        pos += size
    return out


def km_from_counts(events: np.ndarray, censored: np.ndarray) -> np.ndarray:
    """S at the end of each grid interval from (noisy) interval counts: at risk at the start
    of interval g = Σ_{h ≥ g} (events + censorings); S = Π (1 − d_g / n_g). Noisy counts are
    clamped at 0 first (post-processing)."""
    d = np.maximum(np.asarray(events, np.float64), 0.0)
    c = np.maximum(np.asarray(censored, np.float64), 0.0)
    at_risk = np.cumsum((d + c)[::-1])[::-1]
    frac = np.divide(d, at_risk, out=np.zeros_like(d), where=at_risk > 0)
    return np.cumprod(1.0 - np.minimum(frac, 1.0))


def dp_km(
    proxies: Sequence[Any], edges: np.ndarray, noise_multiplier: float, rng: np.random.Generator
) -> np.ndarray:
    """The KM curve at the grid's interval ends from the secure sum of the count tables and
    one Gaussian draw per cell (Δ₂ = 1)."""
    sums, _ = secure_sum(
        proxies,
        "km_counts",
        {"parameters": [np.asarray(edges)]},
        0,
        "km",
        P.KM_COUNTS,
        P.KM_REQUEST,
    )
    ev = np.asarray(sums["events"])[0]
    ce = np.asarray(sums["censored"])[0]
    ev = ev + rng.normal(0.0, noise_multiplier, ev.shape)
    ce = ce + rng.normal(0.0, noise_multiplier, ce.shape)
    return km_from_counts(ev, ce)
