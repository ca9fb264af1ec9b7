"""Federated HAC (seed 001) as a deployed stage (:mod:`fedclust.deployment`): simultaneous
sharing (§5.1, thesis §3.3.2) and genewise clustering (Algorithm 3, §4).

One run is one (linkage, n_min) of the hac stage's simultaneous sharing, or one metric of its
genewise baseline (``variant``). Simultaneous sharing: the server asks every centre once for
its cut (:func:`.simultaneous.simultaneous_server`, the server function the workflow runs
in-process through :func:`fedclust.federation.federate`) and agglomerates the centroids.
Genewise: the centres' gene statistics (cosine / correlation), sent back with the request for
their additive distance shares, summed (:func:`.genewise.genewise_server`). A centre's file
holds its block (one row per sample, the data stage's ``sf`` / ``vst`` matrix), its name and the
secret material of its leaf relabelling (``seed``, ``index``: the permutation never leaves the
site); its disclosure policy is the site's own (the one its file carries, replaced by the
SuperNode's ``disclosure`` file when it names one, else its configured one; the partial
dendrograms need the site's opt-in to ``hac.simultaneous``). The run's parameters are
``variant``, ``n_min``, ``method`` (the linkage) and ``metric``; the feature count comes from the
handshake. Outputs: simultaneous, the global tree ``z`` over the participating centres'
*relabelled* leaves, stacked in centre-id order (each site maps its own leaves back with
:meth:`.centre.HacCentre.leaf_order`), and the participating ``centres``; genewise, the gene
tree ``z`` and the condensed gene distances ``d``; both the ledger. Exact protocols: a lost
centre stops the run. The deployed centre keeps no release log across runs (the workflow's
``hac.release_log``); gradual sharing and the projections are not deployed yet (gradual
sharing's centres still share one in-process replica of the public state, not on the seam).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from scipy.cluster.hierarchy import linkage

from fedclust.deployment import (
    DeployedStage,
    file_policy,
    load_npz,
    register,
    same_schema,
    save_npz,
)
from fedclust.errors import ConfigError

from .centre import HacCentre
from .genewise import genewise_server
from .pooled import check_method
from .simultaneous import simultaneous_server

NAME = "hac"


VARIANTS = ("simultaneous", "genewise")


def params_from_config(n_min: int, linkage: str, metric: str = "euclidean",
                       variant: str = "simultaneous") -> dict[str, Any]:  # fmt: skip
    """The run parameters of one (linkage, n_min) of the workflow's ``hac.simultaneous``, or
    of one metric of its genewise baseline (``hac.exact``: ``average``, ``n_min``)."""
    _check(variant, linkage, metric)
    return {"variant": variant, "n_min": int(n_min), "method": str(linkage),
            "metric": str(metric)}  # fmt: skip


def _check(variant: str, method: str, metric: str) -> None:
    if variant not in VARIANTS:
        raise ConfigError(f"HAC variant {variant!r} is not deployable", where="params.variant",
                          fix=f"one of {VARIANTS}")  # fmt: skip
    check_method(method, metric, where=f"hac.{variant}")


def save(centre: HacCentre, path: Path) -> None:
    """The centre's file; a policy the centre object carries (its site's settings, e.g. the
    opt-in to ``hac.simultaneous``' per-sample merge heights) is written beside its rows."""
    own = centre.__dict__.get("disclosure")
    extra = {} if own is None else {"disclosure": json.dumps(asdict(own))}
    save_npz(path, x=centre.x, cid=centre.cid, seed=centre.seed, index=centre.index, **extra)


def load(path: Path, params: Mapping[str, Any]) -> HacCentre:
    d = load_npz(path)
    own = file_policy(d)
    return HacCentre(str(d["cid"]), d["x"], n_min=int(params["n_min"]),
                     method=str(params["method"]), metric=str(params["metric"]),
                     index=int(d["index"]), seed=int(d["seed"]), disclosure=own)  # fmt: skip


def describe(centre: HacCentre) -> dict[str, Any]:
    return {"n_features": int(centre.x.shape[1])}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    same_schema(schema, "n_features", NAME)
    variant, method, metric = str(params["variant"]), str(params["method"]), str(params["metric"])
    _check(variant, method, metric)
    if variant == "genewise":
        d = genewise_server(metric, int(params["n_min"]))(list(proxies))
        return {"z": linkage(d, method=method), "d": d}
    res = simultaneous_server(int(params["n_min"]), method, metric)(list(proxies))
    return {"z": res.z, "centres": list(res.centres)}


STAGE = register(DeployedStage(NAME, load, save, serve, describe, drops=False))
