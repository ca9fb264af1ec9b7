"""Client system (seed 002 §3.2–3.4): label-skewed clients, overlap transform, dirty-uniform
initial clustering. Labels are used only here (to build the system) and in evaluation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedclust.errors import ConfigError, InputDataError
from fedclust.seeds import rng as make_rng


@dataclass
class ClientData:
    """One client: indices into the pooled sample table, true labels (evaluation only)."""

    cid: str
    idx: np.ndarray
    y: np.ndarray

    @property
    def classes(self) -> np.ndarray:
        return np.unique(self.y)

    @property
    def k(self) -> int:
        return int(len(self.classes))


def check_system_params(n_clients: int, k_min: int, k_max: int, n_classes: int, s: int) -> None:
    if n_clients < 2:
        raise ConfigError(
            f"FedCRef needs at least two clients, got {n_clients}",
            where="fedcref.system.n_clients",
            fix="set n_clients ≥ 2 (the paper uses 20–50)",
        )
    if k_min < 2:
        raise ConfigError(
            f"k_min = {k_min}: a client with one class has nothing to cluster (K_i ≥ 2, §3)",
            where="fedcref.system.k_min",
            fix="set k_min ≥ 2",
        )
    if k_max < k_min or k_max > n_classes:
        raise ConfigError(
            f"K_i range [{k_min}, {k_max}] is empty or exceeds the {n_classes} classes",
            where="fedcref.system.k_max",
            fix=f"use k_min ≤ k_max ≤ {n_classes} (null = ⌊|U|/2⌋)",
        )
    if s < 1:
        raise ConfigError(f"samples_per_class = {s}", where="fedcref.system.samples_per_class")


def build_system(
    y_pool: np.ndarray,
    n_clients: int,
    samples_per_class: int,
    seed: int,
    k_min: int = 2,
    k_max: int | None = None,
    overlap: float = 0.0,
) -> list[ClientData]:
    """N clients, K_i ~ U{k_min..k_max} (default ⌊|U|/2⌋) distinct classes each, every client's
    class combination unique, S disjoint samples per class (§5.2), then the overlap transform.

    Sampling is without replacement from a shrinking per-class pool. A combination that needs a
    class with fewer than S samples left is redrawn (a small offline data set, e.g. 8×8 digits
    at S = 40, would otherwise run out); when none fits, an error (the authors' code silently
    refills the pool, creating duplicates). With data to spare (the paper's sets) nothing is
    redrawn and the draws are those of plain sampling.
    """
    y_pool = np.asarray(y_pool)
    classes = np.unique(y_pool)
    k_max = len(classes) // 2 if k_max is None else int(k_max)
    check_system_params(n_clients, k_min, k_max, len(classes), samples_per_class)
    if not 0.0 <= overlap < 1.0:
        raise ConfigError(f"overlap = {overlap}", where="fedcref.system.overlap", fix="0 ≤ O < 1")
    r = make_rng(seed, "fedcref", "system")
    pools = {c: list(r.permutation(np.flatnonzero(y_pool == c))) for c in classes}
    seen: set[tuple] = set()
    clients = []
    for i in range(n_clients):
        short = None
        for _ in range(1000):
            k = int(r.integers(k_min, k_max + 1))
            combo = tuple(sorted(r.choice(classes, size=k, replace=False).tolist()))
            if combo in seen:
                continue
            short = next((c for c in combo if len(pools[c]) < samples_per_class), None)
            if short is None:
                break
        else:
            if short is not None:
                raise InputDataError(
                    f"too few samples left for client {i}: class {short} has "
                    f"{len(pools[short])} < S = {samples_per_class} (samples are never shared)",
                    where="fedcref.system.samples_per_class",
                    fix="lower samples_per_class or n_clients, or use a larger dataset",
                )
            raise ConfigError(
                f"cannot draw {n_clients} distinct class combinations from {len(classes)} "
                f"classes with K_i in [{k_min}, {k_max}]",
                where="fedcref.system",
                fix="use fewer clients or a wider K_i range",
            )
        seen.add(combo)
        idx = []
        for c in combo:
            idx += pools[c][:samples_per_class]
            pools[c] = pools[c][samples_per_class:]
        idx = np.asarray(idx)
        clients.append(ClientData(f"c{i:03d}", idx, y_pool[idx]))
    if overlap > 0:
        clients = apply_overlap(clients, overlap)
    out = []
    for c in clients:
        order = make_rng(seed, "fedcref", "shuffle", c.cid).permutation(len(c.idx))
        out.append(ClientData(c.cid, c.idx[order], c.y[order]))
    return out


def apply_overlap(clients: list[ClientData], p: float) -> list[ClientData]:
    """§3.3: per class, n holders with q samples each give s = ⌊p·q/(n + p − n·p)⌋ samples to a
    common pool that every holder then receives, so the shared fraction of each cluster is p."""
    parts = [{c: list(cl.idx[cl.y == c]) for c in cl.classes} for cl in clients]
    labels = {int(c): c for cl in clients for c in cl.classes}
    for c in labels.values():
        holders = [i for i, pt in enumerate(parts) if c in pt]
        n = len(holders)
        q = float(np.mean([len(parts[i][c]) for i in holders]))
        s = int(np.floor(p * q / (n + p - n * p)))
        if n < 2 or s == 0:
            continue
        pool = [j for i in holders for j in parts[i][c][:s]]
        for i in holders:
            parts[i][c] = parts[i][c][s:] + pool
    out = []
    for cl, pt in zip(clients, parts, strict=True):
        idx = np.asarray([j for c in sorted(pt) for j in pt[c]])
        y = np.concatenate([np.full(len(pt[c]), c) for c in sorted(pt)])
        out.append(ClientData(cl.cid, idx, y))
    return out


def oracle_partition(y: np.ndarray) -> np.ndarray:
    """Local cluster id = index of the true class in the client's sorted class list."""
    return np.searchsorted(np.unique(y), y).astype(int)


def dirty_uniform(y: np.ndarray, dirtiness: float, rng: np.random.Generator) -> np.ndarray:
    """§3.4: each sample independently, with probability ``dirtiness``, moves to a uniformly
    random *other* cluster; expected ACC ≈ 1 − dirtiness (for dirtiness ≤ (K−1)/K)."""
    if not 0.0 <= dirtiness <= 1.0:
        raise ConfigError(f"dirtiness = {dirtiness}", where="fedcref init", fix="0 ≤ d ≤ 1")
    lab = oracle_partition(y)
    k = int(lab.max()) + 1 if len(lab) else 0
    flip = rng.random(len(lab)) < dirtiness
    shift = rng.integers(1, max(k, 2), size=len(lab))
    return np.where(flip, (lab + shift) % max(k, 1), lab).astype(int)


def system_for(cfg: dict, setting: dict, y_pool: np.ndarray, seed: int) -> list[ClientData]:
    sysc = {**cfg["system"], **cfg["datasets"][setting["dataset"]].get("system", {})}
    return build_system(
        y_pool,
        int(setting.get("n_clients", sysc["n_clients"])),
        int(sysc["samples_per_class"]),
        seed,
        int(sysc["k_min"]),
        None if sysc.get("k_max") is None else int(sysc["k_max"]),
        float(setting.get("overlap", sysc.get("overlap", 0.0))),
    )
