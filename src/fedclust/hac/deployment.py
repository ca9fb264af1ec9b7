"""Federated HAC (seed 001) as a deployed stage (:mod:`fedclust.deployment`): simultaneous
sharing (§5.1, thesis §3.3.2), gradual sharing (Algorithm 4, §5.2) and genewise clustering
(Algorithm 3, §4).

One run is one (linkage, n_min) of the hac stage's simultaneous or gradual sharing, or one
metric of its genewise baseline (``variant``). Simultaneous sharing: the server asks every centre
once for its cut (:func:`.simultaneous.simultaneous_server`, the server function the workflow
runs in-process through :func:`fedclust.federation.federate`) and agglomerates the centroids.
Gradual sharing: one merge a round (:func:`.gradual.gradual_server`); each request carries the
public updates (merges, published centroids) the centre has not seen yet, and the centre keeps
its own state (its clusters, its distances, its copy of the public state) between messages (on
a deployment in the SuperNode's ``Context.state``). Genewise: the centres' gene statistics
(cosine / correlation), sent back with the request for their additive distance shares, summed
(:func:`.genewise.genewise_server`). A centre's file holds its block (one row per sample, the
data stage's ``sf`` / ``vst`` matrix), its name and the secret material of its leaf relabelling
(``seed``, ``index``: the permutation never leaves the site); its disclosure policy is the
site's own (the one its file carries, replaced by the SuperNode's ``disclosure`` file when it
names one, else its configured one; the partial dendrograms and gradual sharing's distances
need the site's opt-in to ``hac.simultaneous`` / ``hac.gradual.candidate`` and
``hac.gradual.distances``). The run's parameters are ``variant``, ``n_min``, ``method`` (the
linkage) and ``metric`` (gradual also ``d_min`` and ``average_delta``); the feature count comes
from the handshake. Outputs: simultaneous, the global tree ``z`` over the participating centres'
*relabelled* leaves, stacked in centre-id order (each site maps its own leaves back with
:meth:`.centre.HacCentre.leaf_order`), and the participating ``centres``; gradual, the tree
``z`` over the centres' samples stacked in centre-id order, ``shares``, ``inversions`` and
``bad_radicands``; genewise, the gene tree ``z`` and the condensed gene distances ``d``;
perturbation (Algorithm 2: each site's ``X Q`` with the Q of the sites' shared ``seed``, never
sent; the site's opt-in to ``hac.perturbation``), the sample tree ``z`` and the exact distances
``d`` over the sites' samples stacked in centre-id order; projection (Algorithm 5: each site
draws the public Q of the sites' shared ``seed`` for the request's ``run`` itself,
:func:`~fedclust.hac.projection.run_seed`, and sends its ``X Q``; the server names only ``k``,
Q's law, the run; the site's opt-in to ``hac.projection``), the tree ``z`` of the estimated
distances ``d`` over the sites' samples stacked in centre-id order (parameters also ``k``,
``run``, ``kind``, ``estimator``, ``dtype``, ``density``, ``threads``); all the ledger. Exact
protocols: a lost centre stops the run. The deployed centre keeps no release log across runs
(the workflow's ``hac.release_log``).

The workflow's deployment rule (:class:`~fedclust.deployment.WorkflowHook`) deploys one unit
``<cohort>/<variant>/<unit>`` of the hac stage (:mod:`.workflow`'s units: gradual
``<prep>-<metric>-<linkage>`` at the smallest n_min of the grid the centres allow, simultaneous
``<linkage>`` likewise, projection ``<prep>-<metric>-<estimator>-run<i>`` at the first sketch
size) on the data stage's matrices, and compares it with the workflow's own functions
(:func:`.gradual.gradual_sharing`, :func:`.federated.projection_clustering`; simultaneous:
the participating centres).
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
    WorkflowHook,
    WorkflowRun,
    file_policy,
    load_npz,
    pick,
    register,
    same_schema,
    save_npz,
)
from fedclust.errors import ConfigError

from .centre import HacCentre
from .federated import perturbation_server, projection_server
from .genewise import genewise_server
from .gradual import gradual_server
from .pooled import check_method
from .projection import sketch_kind
from .simultaneous import simultaneous_server

NAME = "hac"


VARIANTS = ("simultaneous", "gradual", "genewise", "perturbation", "projection")


def params_from_config(n_min: int, linkage: str, metric: str = "euclidean",
                       variant: str = "simultaneous", d_min: float = 0.0,
                       average_delta: str = "stored", k: int = 10, run: int | None = 0,
                       kind: str | None = None, estimator: str = "geometric",
                       dtype: str = "float32", density: float | None = None,
                       threads: int = 1) -> dict[str, Any]:  # fmt: skip
    """The run parameters of one (linkage, n_min) of the workflow's ``hac.simultaneous`` or
    ``hac.gradual`` (with its ``d_min`` and one ``average_delta``), of one metric of its
    genewise baseline (``hac.exact``: ``average``, ``n_min``), or of one sketch of its random
    projections (``hac.projection``: sketch size ``k``, seed index ``run``, ``kind``,
    ``estimator``, ``dtype``, ``density``, ``threads``; ``n_min`` unused)."""
    _check(variant, linkage, metric)
    out = {"variant": variant, "n_min": int(n_min), "method": str(linkage), "metric": str(metric)}
    if variant == "gradual":
        out.update(d_min=float(d_min), average_delta=str(average_delta))
    if variant == "projection":
        out.update(k=int(k), run=None if run is None else int(run),
                   kind=sketch_kind(metric, kind), estimator=str(estimator), dtype=str(dtype),
                   density=None if density is None else float(density),
                   threads=int(threads))  # fmt: skip
    return out


def _check(variant: str, method: str, metric: str) -> None:
    if variant not in VARIANTS:
        raise ConfigError(f"HAC variant {variant!r} is not deployable", where="params.variant",
                          fix=f"one of {VARIANTS}")  # fmt: skip
    check_method(method, "euclidean" if variant == "perturbation" else metric,
                 where=f"hac.{variant}")  # fmt: skip


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
                     index=int(d["index"]), seed=int(d["seed"]), disclosure=own,
                     d_min=float(params.get("d_min", 0.0)),
                     average_delta=str(params.get("average_delta", "stored")),
                     threads=int(params.get("threads", 1)))  # fmt: skip


def describe(centre: HacCentre) -> dict[str, Any]:
    return {"n_features": int(centre.x.shape[1])}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    same_schema(schema, "n_features", NAME)
    variant, method, metric = str(params["variant"]), str(params["method"]), str(params["metric"])
    _check(variant, method, metric)
    if variant == "perturbation":
        z, d = perturbation_server(method)(list(proxies))
        return {"z": z, "d": d}
    if variant == "projection":
        run, density = params.get("run"), params.get("density")
        server = projection_server(method, metric, int(params["k"]), params.get("kind"),
                                   str(params.get("estimator", "geometric")),
                                   None if run is None else int(run),
                                   str(params.get("dtype", "float32")),
                                   None if density is None else float(density))  # fmt: skip
        z, d = server(list(proxies))
        return {"z": z, "d": d}
    if variant == "genewise":
        d = genewise_server(metric, int(params["n_min"]))(list(proxies))
        return {"z": linkage(d, method=method), "d": d}
    if variant == "gradual":
        delta = str(params.get("average_delta", "stored"))
        res = gradual_server(int(params["n_min"]), method, metric, delta)(list(proxies))
        return {"z": res.Z, "shares": res.shares, "inversions": res.inversions,
                "bad_radicands": res.bad_radicands,
                "centres": [p.cid for p in proxies]}  # fmt: skip
    res = simultaneous_server(int(params["n_min"]), method, metric)(list(proxies))
    return {"z": res.z, "centres": list(res.centres)}


# ---------------------------------------------------------------- the workflow's rule
#: the hac stage's variants the rule deploys (the exact baselines: perturbation / genewise runs)
RULE_VARIANTS = ("gradual", "simultaneous", "projection")
HAC_DATA = "results/data/rnaseq/{cohort}"


def _cohorts(config: Mapping[str, Any]) -> list[str]:
    hac = config.get("hac") or {}
    return list(hac.get("cohorts") or config.get("data", {}).get("rnaseq", {}).get("cohorts") or [])


def _unit_name(cohort: str, u: Any) -> str:
    tail = u.name if u.variant != "projection" else f"{u.name}-run{u.seeds[0]}"
    return f"{cohort}/{u.variant}/{tail}"


def _units(config: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """Unit id → (cohort, :class:`.workflow.Unit`) of every deployable unit, in table order."""
    from .workflow import units

    hac = config.get("hac") or {}
    if not hac.get("enabled", False):
        return {}
    out: dict[str, tuple[str, Any]] = {}
    for cohort in _cohorts(config):
        for v in RULE_VARIANTS:
            for u in units(hac, v):
                out.setdefault(_unit_name(cohort, u), (cohort, u))
    return out


def workflow_unit(config: Mapping[str, Any]) -> str:
    """The unit deployed: ``deployment.units.hac`` (``<cohort>/<variant>/<unit>``), else the
    first gradual unit of the first cohort."""
    return pick(config, NAME, list(_units(config)))


def workflow_inputs(config: Mapping[str, Any]) -> dict[str, str]:
    cohort, u = _units(config)[workflow_unit(config)]
    root = HAC_DATA.format(cohort=cohort)
    return {u.prep: f"{root}/{u.prep}.parquet", "obs": f"{root}/obs.tsv"}


def _first_allowed(values: Sequence[int], pols: Sequence[Any], sizes: Sequence[int],
                   where: str) -> int:  # fmt: skip
    """The smallest configured n_min every centre's floor allows and some centre holds."""
    floor = max(int(p.nfilter_subset) for p in pols)
    ok = [int(v) for v in values if int(v) >= floor and int(v) <= max(sizes)]
    if not ok:
        raise ConfigError(f"no n_min of {where} is allowed by the centres' floor ({floor}) and "
                          "held by a centre", where=where,
                          fix="add an n_min ≥ disclosure.default.nfilter_subset")  # fmt: skip
    return min(ok)


def workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The unit's centres as rule ``hac_<variant>`` builds them (the data stage's matrix split
    by region, the configured disclosure policies, the workflow's ``seed``), one run's
    parameters and the workflow function's outputs on the same blocks."""
    from fedclust.federation.disclosure import policy_from

    from .experiments import _stacked, load_cohort
    from .federated import projection_clustering
    from .gradual import gradual_sharing
    from .nmin import nmin_grid
    from .workflow import linkages_for

    name = workflow_unit(config)
    cohort, u = _units(config)[name]
    hac, seed = config["hac"], int(config["seed"])
    data, centers = load_cohort({u.prep: inputs[u.prep]}, inputs["obs"])
    xs, cs, blocks = _stacked(data[u.prep], centers)
    names = [f"center{k}" for k in range(len(blocks))]
    pols = [policy_from(config.get("disclosure"), nm) for nm in names]
    sizes = [len(b) for b in blocks]
    ref: dict[str, Any] | None
    if u.variant == "projection":
        p = hac["projection"]
        method = linkages_for(list(hac["linkages"]), u.metric)[0]
        params = params_from_config(1, method, u.metric, "projection", k=int(p["sketch_sizes"][0]),
                                    run=u.seeds[0], kind=None if u.metric == "cityblock"
                                    else p["kind"], estimator=str(u.estimator),
                                    dtype=p["dtype"], density=p["density"],
                                    threads=int(p["threads"]))  # fmt: skip
        z, d = projection_clustering(blocks, method, u.metric, params["k"], seed, u.estimator,
                                     kind=params["kind"], dtype=params["dtype"],
                                     density=params["density"], threads=params["threads"],
                                     policy=pols, run=params["run"])  # fmt: skip
        ref = {"z": z, "d": d}
    elif u.variant == "gradual":
        g = hac["gradual"]
        grid = nmin_grid(len(cs), g["n_min"], g["fraction"], cohort)
        n_min = _first_allowed(grid, pols, sizes, "hac.gradual.n_min")
        params = params_from_config(n_min, str(u.linkage), u.metric, "gradual",
                                    d_min=float(g["d_min"]),
                                    average_delta=str(list(g["average_delta"])[0]))  # fmt: skip
        res = gradual_sharing(xs, cs, n_min, str(u.linkage), u.metric, d_min=params["d_min"],
                              average_delta=params["average_delta"], policy=pols)  # fmt: skip
        ref = {"z": res.Z, "shares": res.shares, "inversions": res.inversions,
               "bad_radicands": res.bad_radicands}  # fmt: skip
    else:
        n_mins = hac["simultaneous"]["n_min"]
        n_min = _first_allowed(n_mins if isinstance(n_mins, list) else [n_mins], pols, sizes,
                               "hac.simultaneous.n_min")  # fmt: skip
        params = params_from_config(n_min, str(u.linkage))
        # the tree is over each site's relabelled leaves (mapped back only at the site): the
        # workflow's own output compared is who took part
        took = [nm for nm, p, b in zip(names, pols, blocks, strict=True)
                if len(b) >= p.floor(n_min)]  # fmt: skip
        ref = {"centres": took}
    centres = [HacCentre(nm, b, n_min=params["n_min"], method=params["method"],
                         metric=params["metric"], index=k, seed=seed, disclosure=pols[k],
                         d_min=float(params.get("d_min", 0.0)),
                         average_delta=str(params.get("average_delta", "stored")),
                         threads=int(params.get("threads", 1)))
               for k, (nm, b) in enumerate(zip(names, blocks, strict=True))]  # fmt: skip
    return WorkflowRun(name, centres, params, ref)


STAGE = register(
    DeployedStage(NAME, load, save, serve, describe, drops=False,
                  workflow=WorkflowHook(workflow_unit, workflow_inputs, workflow_run))
)  # fmt: skip
