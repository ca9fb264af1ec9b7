"""Federated gradient boosting (seed 003 ch. 10, D6.2 §10) as a deployed stage
(:mod:`fedclust.deployment`).

One run is one federated scheme of a boosting unit: round 0 the shared grid (moments, the merged
lattice sketch, the cuts to every centre), then the trees (``histogram`` / ``histogram_nofloor``
/ ``vote_<zero|union>_s<S>``: :func:`.server.boost`; ``bagging`` / ``cyclic``: the Flower XGBoost
baselines, :func:`.server.bagging` / :func:`.server.cyclic`) — the server functions the workflow
runs in-process (:func:`.experiment.run_unit`). A centre's file holds its training rows (raw
features, labels 0/1) and its name; the run's parameters are the scheme, ``trees``,
``min_samples``, the tree ``params`` and the ``grid`` (the ``boosting`` config's keys,
:func:`params_from_config`). The feature count comes from the handshake. A centre keeps its
binned rows and margins between messages (``Context.state`` on a deployment). Outputs: the
grid's cuts, the trees (one array per tree and field), ``base_margin``, ``rounds`` and the
ledger; pooled scoring stays with the workflow (no centre sends test rows).
Every protocol is exact (no drops): a tree's sums need every centre that took part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from fedclust.deployment import (
    DeployedStage,
    WorkflowHook,
    WorkflowRun,
    cap,
    load_npz,
    pick,
    register,
    same_schema,
    save_npz,
)
from fedclust.errors import ConfigError
from fedclust.federation.disclosure import configured_policy

from . import server as S
from . import tree as T
from .centre import Centre, without_floor
from .experiment import grid_cfg, params_of, parse_scheme
from .protocols import protocols

NAME = "boosting"


def params_from_config(cfg: Mapping[str, Any], scheme: str) -> dict[str, Any]:
    """The run parameters of federated scheme ``scheme`` of the workflow's ``boosting`` config
    (the keys :func:`.experiment.run_unit` reads)."""
    sch = parse_scheme(scheme)
    if sch.family in ("pooled", "pooled_raw", "isolated"):
        raise ConfigError(f"scheme {scheme!r} is not federated", where="boosting scheme",
                          fix="histogram[_nofloor], vote_*, bagging or cyclic")  # fmt: skip
    return {"scheme": sch.id, "trees": int(cfg.get("trees", 10)),
            "min_samples": int(cfg.get("min_samples", 3)), "params": dict(cfg.get("params", {})),
            "grid": dict(cfg.get("grid", {})),
            "local_rounds": int(cfg.get("local_rounds", 1))}  # fmt: skip


def _floor(params: Mapping[str, Any]) -> int:
    nofloor = parse_scheme(str(params["scheme"])).family == "histogram_nofloor"
    return 1 if nofloor else int(params["min_samples"])


def save(centre: Centre, path: Path) -> None:
    save_npz(path, x=centre.X, y=centre.y, cid=centre.cid)


def load(path: Path, params: Mapping[str, Any]) -> Centre:
    """The centre of ``path``; ``histogram_nofloor`` (the exactness check) builds it with its
    configured settings less the sample floor, as the workflow does."""
    d = load_npz(path)
    return centre(str(d["cid"]), d["x"], d["y"], params)


def centre(cid: str, x: np.ndarray, y: np.ndarray, params: Mapping[str, Any]) -> Centre:
    """A centre of the run ``params`` holding the rows ``x``, ``y``."""
    nofloor = parse_scheme(str(params["scheme"])).family == "histogram_nofloor"
    own = without_floor(configured_policy(cid)) if nofloor else None
    return Centre(cid, x, y, params_of(params), _floor(params), own)


def describe(centre: Centre) -> dict[str, Any]:
    return {"n_features": int(centre.X.shape[1])}


def server(params: Mapping[str, Any]):
    """The scheme's server function (as :func:`.experiment.run_unit` builds it)."""
    sch = parse_scheme(str(params["scheme"]))
    P = protocols(_floor(params))  # the server's ledger: min_samples (each centre checks its own)
    kw = {"P": P, "params": params_of(params), "n_trees": int(params["trees"]),
          "grid_cfg": grid_cfg(params)}  # fmt: skip
    if sch.family in ("histogram", "histogram_nofloor", "vote"):
        fam = "vote" if sch.family == "vote" else "histogram"
        return partial(S.boost, scheme=fam, top=sch.top, variant=sch.variant or "zero", **kw)
    return partial(getattr(S, sch.family), local_rounds=int(params.get("local_rounds", 1)), **kw)


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    same_schema(schema, "n_features", NAME)
    model = server(params)(list(proxies))
    packed = T.pack(model.trees)
    return {"cuts": list(model.grid.cuts), **{f"tree_{k}": v for k, v in packed.items()},
            "base_margin": float(model.base_margin), "rounds": int(model.rounds),
            "n_trees": len(model.trees)}  # fmt: skip


def model_of(outputs: Mapping[str, Any]) -> S.Model:
    """The ensemble from a run's outputs (in-process, or read back from a deployment's
    out-dir): score it with ``model.margin(grid.encode(X, model.grid))``."""
    from . import grid as GR

    n = int(outputs["n_trees"])
    trees = [T.Tree.from_arrays({k: np.asarray(outputs[f"tree_{k}"][i]) for k in T.TREE_FIELDS})
             for i in range(n)]  # fmt: skip
    cuts = tuple(np.asarray(c, np.float64) for c in outputs["cuts"])
    return S.Model(GR.Grid(cuts), trees, float(outputs["base_margin"]))


# ---------------------------------------------------------------- the workflow's rule
def workflow_units(config: Mapping[str, Any]) -> list[str]:
    """``dataset/split/scheme`` of every federated unit of the ``boosting`` config."""
    from .workflow import units

    out = []
    for ds, split, sch, _ in units(dict(config.get("boosting", {}))):
        fam = parse_scheme(sch).family
        uid = f"{ds}/{split}/{sch}"
        if fam not in ("pooled", "pooled_raw", "isolated") and uid not in out:
            out.append(uid)
    return out


def workflow_unit(config: Mapping[str, Any]) -> str:
    """``deployment.units.boosting``, else the first federated unit (repetition 0)."""
    return pick(config, NAME, workflow_units(config))


def workflow_inputs(config: Mapping[str, Any]) -> dict[str, str]:
    from .workflow import dataset_inputs

    return dataset_inputs(dict(config["boosting"]), workflow_unit(config).split("/")[0])


def workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The training rows of the unit's centres as :func:`.experiment.run_unit` splits them
    (repetition 0), the scheme's parameters (``deployment.iterations``: at most that many
    trees)."""
    from fedclust.admm.workflow import mds_source

    from . import data as D
    from .experiment import load as load_dataset

    cfg, seed = dict(config["boosting"]), int(config["seed"])
    uid = workflow_unit(config)
    dataset, split, scheme = uid.split("/")
    ds = load_dataset(dataset, cfg, dict(inputs), config["data"].get("heart", {}),
                      mds_source(config["data"]))  # fmt: skip
    spec = cfg["datasets"][dataset]["splits"][split]
    where = D.centres(ds, split, spec, seed, 0)
    test = D.test_rows(ds.y, where, float(cfg.get("test_fraction", 0.25)), seed, ds.name,
                       split, 0)  # fmt: skip
    params = params_from_config(cfg, scheme)
    params["trees"] = cap(params["trees"], config)
    tr = ~test
    names = [c for c in sorted(set(where[tr].tolist())) if (where[tr] == c).any()]
    cs = [centre(str(c), ds.X[tr & (where == c)], ds.y[tr & (where == c)], params)
          for c in names]  # fmt: skip
    return WorkflowRun(uid, cs, params)


STAGE = register(
    DeployedStage(NAME, load, save, serve, describe, drops=False,
                  workflow=WorkflowHook(workflow_unit, workflow_inputs, workflow_run))
)  # fmt: skip
