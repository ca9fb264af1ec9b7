"""Center-side / server-side split for the projection methods (Algorithms 2 and 5).

The server functions here receive *only* ledger messages (dicts of arrays), never a sample
matrix; a test checks that a message cannot carry anything but the sketch.

Both protocols send **one row per sample** (``hac.projection``: ``X Q`` with a public
shared-seed Q, ``k`` columns; ``hac.perturbation``: ``X Q`` with an orthogonal Q, every
pairwise distance exact). Their privacy argument is the map, not aggregation, and it does not
hold against a server that knows a few of the inputs
(:func:`fedclust.privacy.attacks.known_input_inversion`; the attacks stage, seed 001 §4.4):
they cannot be made non-disclosive, so a centre sends them only when its configuration opts in
(the protocol's name in ``disclosure.default.allow_per_sample``; issue 22).
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from ..errors import ConfigError
from ..federation import INPROCESS, Ledger, Protocol, Transport, call_all, federate
from .boundary import PER_SAMPLE, Policies, centre_send, policy_of, require
from .pooled import EUCLIDEAN_ONLY, check_method, check_samples
from .projection import (
    center_cost,
    normalise_rows,
    orthogonal_transform,
    project_centers,
    sketch_distances,
    sketch_kind,
)

SERVER = "server"
SKETCH = Protocol("hac.projection", {"y": "per_sample"}, per_sample=True)
PERTURBED = Protocol("hac.perturbation", {"y": "per_sample"}, per_sample=True)
#: the server's request of Algorithm 2: the padded width of Q (or nothing: Q is d × d)
PERTURBED_REQUEST = Protocol("hac.perturbation.request", {"p": "metadata"})


def _prepare(x_k: np.ndarray, metric: str) -> np.ndarray:
    x_k = np.asarray(x_k, dtype=float)
    if metric in ("cosine", "correlation"):
        x_k = normalise_rows(x_k, centre=metric == "correlation")
    return x_k


def center_sketch(
    x_k: np.ndarray,
    metric: str,
    k: int,
    seed: int,
    d: int,
    kind: str | None = None,
    dtype: str = "float32",
    density: float | None = None,
) -> dict:
    """Center-side (Alg. 5): normalise locally if needed, project with the shared-seed Q
    (streamed in row blocks: memory O(block × k))."""
    x_k = _prepare(x_k, metric)
    if x_k.shape[1] != d:
        raise ValueError(f"center holds {x_k.shape[1]} features, the shared matrix has d={d}")
    return {"y": project_centers([x_k], k, sketch_kind(metric, kind), seed, dtype, density)[0]}


def server_linkage(messages: list[dict], method: str, metric: str, estimator: str = "geometric"):
    """Server-side (Alg. 5): stack sketches, estimate distances, cluster. Returns (Z, D)."""
    y = np.vstack([np.asarray(m["y"], dtype=float) for m in messages])
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
    kind: str | None = None,
    dtype: str = "float32",
    density: float | None = None,
    threads: int = 1,
    policy: Policies = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Random-projection HAC (Algorithm 5) on per-center blocks; samples ordered as stacked.

    The public shared-seed matrix is drawn once, block by block, for all simulated centers
    (:func:`~fedclust.hac.projection.project_centers`); each center's message is exactly its
    own ``X_c Q``, sent through the ledger. ``kind``: ``gaussian`` (default) or ``sparse`` (very
    sparse, ℓ2 metrics); ``dtype``: sketch arithmetic precision; ``threads``: parallel blocks.
    ``policy``: the centres' disclosure policies (default: configured); each must opt in to
    ``hac.projection`` (one row per sample).
    """
    check_method(method, metric, where="hac.projection")
    if method in EUCLIDEAN_ONLY and metric != "euclidean":
        raise AssertionError  # pragma: no cover - check_method raises first
    led = ledger if ledger is not None else Ledger()
    pols = [policy_of(policy, f"center{c}", c) for c in range(len(blocks))]
    require(pols, None, PER_SAMPLE["projection"], "hac.projection")
    law = sketch_kind(metric, kind)
    xs = [_prepare(b, metric) for b in blocks]
    ys = project_centers(xs, k, law, seed, dtype, density, threads)
    msgs = [centre_send(led, pols[c], f"center{c}", len(blocks[c]), {"y": y}, 0, "sketch", SKETCH)
            for c, y in enumerate(ys)]  # fmt: skip
    return server_linkage(msgs, method, metric, estimator)


def projection_center_costs(
    blocks: list[np.ndarray], metric: str, k: int, kind: str | None = None, density=None
) -> list[float]:
    """Multiply-adds each center spends on its sketch (what each center computes)."""
    law = sketch_kind(metric, kind)
    return [center_cost(b.shape[0], b.shape[1], k, law, density) for b in blocks]


def center_perturb(x_k: np.ndarray, seed: int, p: int | None = None) -> dict:
    """Center-side (Alg. 2): ``X Q`` with a shared exactly orthogonal Q (``p ≥ d`` hides d),
    applied as random signs × orthonormal DCT × permutation rounds, never formed densely."""
    return {"y": orthogonal_transform(x_k, seed, p)}


def perturbation_clustering(
    blocks: list[np.ndarray],
    method: str,
    seed: int,
    ledger: Ledger | None = None,
    p: int | None = None,
    policy: Policies = None,
    transport: Transport = INPROCESS,
) -> tuple[np.ndarray, np.ndarray]:
    """Orthogonal perturbation (Alg. 2): exact Euclidean distances on the server. ``policy``:
    each centre must opt in to ``hac.perturbation`` (one row per sample). The centres
    (:class:`.centre.HacCentre`, the shared ``seed`` of Q theirs) answer
    :func:`perturbation_server` through ``transport`` (:func:`fedclust.federation.federate`)."""
    from .centre import HacCentre

    check_method(method, "euclidean", where="hac.perturbation")
    led = ledger if ledger is not None else Ledger()
    pols = [policy_of(policy, f"center{c}", c) for c in range(len(blocks))]
    require(pols, None, PER_SAMPLE["perturbation"], "hac.perturbation")
    check_samples(np.vstack(blocks))  # finite, ≥ 2 samples in all (a center may hold one)
    cents = [HacCentre(f"center{c}", b, n_min=1, method=method, index=c, seed=seed,
                       disclosure=pols[c]) for c, b in enumerate(blocks)]  # fmt: skip
    return federate(cents, perturbation_server(method, p), ledger=led, transport=transport)


def perturbation_server(method: str, p: int | None = None):
    """The server of Algorithm 2 (``server(proxies) -> (Z, D)``): every centre's ``X Q``
    (``p``: the padded width, public: the rows' length shows it), stacked in the centres'
    order; the pairwise Euclidean distances are the pooled ones."""
    check_method(method, "euclidean", where="hac.perturbation")

    def server(proxies: list) -> tuple[np.ndarray, np.ndarray]:
        req = {} if p is None else {"p": int(p)}
        msgs = call_all(proxies, "perturbed", req, 0, "perturbed", PERTURBED, PERTURBED_REQUEST)
        if any(m is None for m in msgs):
            raise ConfigError(
                "a centre refused hac.perturbation (one row per sample): it has not opted in",
                where="hac.perturbation",
                fix="the centres list hac.perturbation under disclosure.default.allow_per_sample",
            )
        dist = pdist(np.vstack([np.asarray(m["y"], dtype=float) for m in msgs]), "euclidean")
        return linkage(dist, method=method), dist

    return server
