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
from ..federation import INPROCESS, Ledger, Transport, call_all, federate
from .boundary import (
    PER_SAMPLE,
    PERTURBED,
    PERTURBED_REQUEST,
    SKETCH,
    SKETCH_REQUEST,
    Policies,
    policy_of,
    require,
)
from .centre import (  # noqa: F401  (the centre side, re-exported: callers import it from here)
    HacCentre,
    center_perturb,
    center_sketch,
)
from .pooled import check_method, check_samples
from .projection import center_cost, sketch_distances, sketch_kind

SERVER = "server"


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
    run: int | None = None,
    transport: Transport = INPROCESS,
) -> tuple[np.ndarray, np.ndarray]:
    """Random-projection HAC (Algorithm 5) on per-center blocks; samples ordered as stacked.

    Each centre (:class:`.centre.HacCentre`, the sites' shared ``seed`` its own) draws the
    public Q itself and sends exactly its own ``X_c Q`` (:meth:`.centre.HacCentre.sketch`) to
    :func:`projection_server` through ``transport`` (:func:`fedclust.federation.federate`);
    in-process the centres share the drawn blocks (:func:`~fedclust.hac.projection.
    shared_blocks`), so Q is drawn once as before. ``run``: Q's seed is
    :func:`~fedclust.hac.projection.run_seed` of ``seed`` (None: ``seed`` itself). ``kind``:
    ``gaussian`` (default) or ``sparse`` (very sparse, ℓ2 metrics); ``dtype``: sketch arithmetic
    precision; ``threads``: each centre's parallel blocks. ``policy``: the centres' disclosure
    policies (default: configured); each must opt in to ``hac.projection`` (one row per sample).
    """
    check_method(method, metric, where="hac.projection")
    led = ledger if ledger is not None else Ledger()
    pols = [policy_of(policy, f"center{c}", c) for c in range(len(blocks))]
    require(pols, None, PER_SAMPLE["projection"], "hac.projection")
    law = sketch_kind(metric, kind)
    cents = [HacCentre(f"center{c}", b, n_min=1, method=method, metric=metric, index=c,
                       seed=seed, disclosure=pols[c], threads=threads)
             for c, b in enumerate(blocks)]  # fmt: skip
    server = projection_server(method, metric, k, law, estimator, run, dtype, density)
    return federate(cents, server, ledger=led, transport=transport)


def projection_server(method: str, metric: str, k: int, kind: str | None = None,
                      estimator: str = "geometric", run: int | None = None,
                      dtype: str = "float32", density: float | None = None):  # fmt: skip
    """The server of Algorithm 5 (``server(proxies) -> (Z, D)``): asks every centre for its
    sketch of size ``k`` (Q's law ``kind``, projection ``run``: public), stacks the answers in
    the centres' order and estimates the distances (``estimator`` for cityblock). It never
    holds Q's seed."""
    check_method(method, metric, where="hac.projection")
    req: dict = {"k": int(k), "kind": sketch_kind(metric, kind), "dtype": str(dtype)}
    if run is not None:
        req["run"] = int(run)
    if density is not None:  # a setting, sent as text (metadata holds no fractions)
        req["density"] = repr(float(density))

    def server(proxies: list) -> tuple[np.ndarray, np.ndarray]:
        msgs = call_all(proxies, "sketch", req, 0, "sketch", SKETCH, SKETCH_REQUEST)
        if any(m is None for m in msgs):
            raise ConfigError(
                "a centre refused hac.projection (one row per sample): it has not opted in",
                where="hac.projection",
                fix="the centres list hac.projection under disclosure.default.allow_per_sample",
            )
        return server_linkage(msgs, method, metric, estimator)

    return server


def projection_center_costs(
    blocks: list[np.ndarray], metric: str, k: int, kind: str | None = None, density=None
) -> list[float]:
    """Multiply-adds each center spends on its sketch (what each center computes)."""
    law = sketch_kind(metric, kind)
    return [center_cost(b.shape[0], b.shape[1], k, law, density) for b in blocks]


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
