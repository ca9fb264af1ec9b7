"""Center-side / server-side split for the projection methods (Algorithms 2 and 5).

The server functions here receive *only* ledger messages (dicts of arrays), never a sample
matrix; a test checks that a message cannot carry anything but the sketch.
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from ..ledger import Ledger
from .pooled import EUCLIDEAN_ONLY, check_method, check_samples
from .projection import normalise_rows, project, projection_matrix, sketch_distances, sketch_kind

SERVER = "server"


def center_sketch(x_k: np.ndarray, metric: str, k: int, seed: int, d: int) -> dict:
    """Center-side (Alg. 5): normalise locally if needed, project with the shared-seed Q."""
    x_k = np.asarray(x_k, dtype=float)
    if metric in ("cosine", "correlation"):
        x_k = normalise_rows(x_k, centre=metric == "correlation")
    q = projection_matrix(d, k, sketch_kind(metric), seed)
    return {"y": project(x_k, q)}


def server_linkage(messages: list[dict], method: str, metric: str, estimator: str = "geometric"):
    """Server-side (Alg. 5): stack sketches, estimate distances, cluster. Returns (Z, D)."""
    y = np.vstack([m["y"] for m in messages])
    dist = sketch_distances(y, metric, estimator)
    return linkage(dist, method=method), dist


def projection_clustering(
    blocks: list[np.ndarray],
    method: str,
    metric: str,
    k: int,
    seed: int,
    estimator: str = "geometric",
    ledger: Ledger | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Random-projection HAC (Algorithm 5) on per-center blocks; samples ordered as stacked."""
    check_method(method, metric, where="hac.projection")
    if method in EUCLIDEAN_ONLY and metric != "euclidean":
        raise AssertionError  # pragma: no cover - check_method raises first
    led = ledger if ledger is not None else Ledger()
    d = blocks[0].shape[1]
    msgs = [
        led.send(f"center{c}", SERVER, center_sketch(b, metric, k, seed, d), 0, "sketch")
        for c, b in enumerate(blocks)
    ]
    return server_linkage(msgs, method, metric, estimator)


def center_perturb(x_k: np.ndarray, seed: int, p: int | None = None) -> dict:
    """Center-side (Alg. 2): ``X Q`` with a shared orthogonal Q (``p ≥ d`` hides d)."""
    x_k = np.asarray(x_k, dtype=float)
    d = x_k.shape[1]
    return {"y": project(x_k, projection_matrix(d, p or d, "orthogonal", seed))}


def perturbation_clustering(
    blocks: list[np.ndarray], method: str, seed: int, ledger: Ledger | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Orthogonal perturbation (Alg. 2): exact Euclidean distances on the server."""
    check_method(method, "euclidean", where="hac.perturbation")
    led = ledger if ledger is not None else Ledger()
    msgs = [
        led.send(f"center{c}", SERVER, center_perturb(check_samples(b), seed), 0, "perturbed")
        for c, b in enumerate(blocks)
    ]
    y = np.vstack([m["y"] for m in msgs])
    dist = pdist(y, "euclidean")
    return linkage(dist, method=method), dist
