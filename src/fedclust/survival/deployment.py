"""Federated survival training (D6.2 §8.3, seed 003) as a deployed stage
(:mod:`fedclust.deployment`).

One run trains one strategy at one grid point: Weights Averaging (FedAvg with the D6.2
learning-rate rule, a FedAvg-type protocol: a centre lost mid-run can be dropped with
``min_available``) or Sequential (the model visits the centres in a seeded order: exact, a
lost centre stops the run). The server functions are :mod:`.strategies`'; a centre's file holds
its training patients (covariates, times, events), its name and its minibatch seed; the server
learns the covariate count from the handshake. Output: the model's parameters and the ledger.

Two exact references of the stage are deployed beside it, each the server function the
workflow federates in-process (no copy):

- ``survival_km``: the federated Kaplan–Meier and log-rank test on a public grid
  (:func:`.km.km_server`, what :func:`.km.federated_km` runs). A centre's file holds its
  follow-up times, events and group labels, its name, the time grid it accepts (its own
  setting: a request on another grid is refused) and, when the site set one, its disclosure
  policy (its ``nfilter_tab`` floor; a SuperNode's ``disclosure`` file replaces it). The run's
  parameters: ``labels`` (the public group labels) and the grid, ``km_grid`` ({step, max},
  :func:`.km.grid_edges`) or explicit ``edges``. Outputs: the KM table ``km`` and ``logrank``
  ({chi2, p, df}; None with one group).
- ``survival_coxph``: the exact Cox-PH stratified by centre (:func:`.coxph.coxph_server`, what
  :func:`.coxph.fit_federated_coxph` runs). A centre's file holds its covariates, times and
  events, its name and, optionally, its policy (``nfilter_subset`` / ``nfilter_glm``); the
  covariate count comes from the handshake. Parameters (optional): ``ties``, ``tol``,
  ``max_iter``. Outputs: ``beta``, ``se`` and the log-likelihood path ``loglik``.

Both are exact protocols: a lost centre stops the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from fedclust.deployment import (
    DeployedStage,
    file_policy,
    load_npz,
    register,
    same_schema,
    save_npz,
)
from fedclust.errors import ConfigError

from .coxph import CoxCentre, coxph_server
from .km import KMCentre, grid_edges, km_from_counts, km_server, logrank_from_counts
from .strategies import Federation, SurvivalClient, sequential_server, weights_averaging_server
from .train import HyperParams, ModelConfig

NAME = "survival"
STRATEGIES = ("weights_averaging", "sequential")


def model_config(params: Mapping[str, Any]) -> ModelConfig:
    m = dict(params["model"])
    m["hidden"] = tuple(int(h) for h in m["hidden"])
    return ModelConfig(**m)


def save(centre: SurvivalClient, path: Path) -> None:
    save_npz(path, x=centre.x_np, t=centre.t_np, e=centre.e_np, cid=centre.cid,
             seed=np.int64(centre.seed))  # fmt: skip


def load(path: Path, params: Mapping[str, Any]) -> SurvivalClient:
    d = load_npz(path)
    return SurvivalClient(str(d["cid"]), d["x"], d["t"], d["e"], model_config(params),
                          int(d["seed"]))  # fmt: skip


def describe(centre: SurvivalClient) -> dict[str, Any]:
    return {"n_features": int(centre.x_np.shape[1])}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    from .experiment import init_parameters

    n_in = int(same_schema(schema, "n_features", NAME))
    mc, hp = model_config(params), HyperParams(**params["hp"])
    init = init_parameters(mc, n_in, int(params["init_seed"]))
    fed = Federation(int(params.get("min_samples", 2)))
    strategy = str(params["strategy"])
    if strategy == "weights_averaging":
        model = weights_averaging_server(init, hp, mc, fed)(list(proxies))
    elif strategy == "sequential":
        order = np.random.default_rng(int(params["order_seed"]))
        model = sequential_server(init, hp, mc, order, fed)(list(proxies))
    else:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    return {"model": model}


def drops(params: Mapping[str, Any]) -> bool:
    """Weights Averaging (FedAvg-type) may go on without a lost centre; Sequential may not."""
    return params.get("strategy") == "weights_averaging"


STAGE = register(DeployedStage(NAME, load, save, serve, describe, drops=drops))


# ---------------------------------------------------------------- exact references
def _own_policy(centre: Any) -> dict[str, Any]:
    """The site's policy the centre object carries, as a file field (none: the configured)."""
    own = centre.__dict__.get("disclosure")
    return {} if own is None else {"disclosure": json.dumps(asdict(own))}


def km_params(km_grid: Mapping[str, Any] | None, labels: Sequence[str]) -> dict[str, Any]:
    """The ``survival_km`` run parameters of the workflow's KM check (``survival.km_grid``)."""
    return {"km_grid": dict(km_grid or {}), "labels": [str(v) for v in labels]}


def save_km(centre: KMCentre, path: Path) -> None:
    save_npz(path, t=centre.t, e=centre.e, groups=centre.g, edges=centre.edges, cid=centre.cid,
             **_own_policy(centre))  # fmt: skip


def load_km(path: Path, params: Mapping[str, Any]) -> KMCentre:
    d = load_npz(path)
    return KMCentre(str(d["cid"]), d["t"], d["e"], d["groups"], d["edges"], file_policy(d))


def serve_km(proxies: Sequence[Any], params: Mapping[str, Any],
             schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """:func:`.km.km_server` on the run's public grid, then the KM table and log-rank test
    (as :func:`.km.federated_km`)."""
    edges = (np.asarray(params["edges"], float) if "edges" in params
             else grid_edges(params.get("km_grid")))  # fmt: skip
    labels = [str(v) for v in params.get("labels", ["all"])]
    if not labels:
        raise ConfigError(
            "the run's labels are empty: no group to count",
            where="survival_km run parameters: labels",
            fix="list the public group labels, or leave labels out (one group)",
        )
    counts = km_server(list(proxies), edges, labels)
    lr = logrank_from_counts(counts) if len(labels) > 1 else None
    logrank = None if lr is None else {"chi2": lr[0], "p": lr[1], "df": lr[2]}
    return {"km": km_from_counts(edges, labels, counts), "logrank": logrank}


def save_cox(centre: CoxCentre, path: Path) -> None:
    save_npz(path, x=centre.x, t=centre.t, e=centre.e, cid=centre.cid, **_own_policy(centre))


def load_cox(path: Path, params: Mapping[str, Any]) -> CoxCentre:
    d = load_npz(path)
    return CoxCentre(str(d["cid"]), d["x"], d["t"], d["e"], file_policy(d))


def describe_cox(centre: CoxCentre) -> dict[str, Any]:
    return {"n_features": int(centre.x.shape[1])}


COX_OPTIONS = ("ties", "tol", "max_iter")


def serve_cox(proxies: Sequence[Any], params: Mapping[str, Any],
              schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """:func:`.coxph.coxph_server` with the covariate count from the handshake."""
    p = int(same_schema(schema, "n_features", "survival_coxph"))
    kinds = {"ties": str, "tol": float, "max_iter": int}
    opts = {k: kinds[k](params[k]) for k in COX_OPTIONS if k in params}
    for k in ("tol", "max_iter"):
        if k in opts and not opts[k] > 0:
            raise ConfigError(f"survival_coxph {k} = {opts[k]} must be > 0",
                              where=f"survival_coxph run parameters: {k}",
                              fix="e.g. tol: 1e-10, max_iter: 100 (or leave it out)")  # fmt: skip
    beta, se, path = coxph_server(list(proxies), p, **opts)
    return {"beta": beta, "se": se, "loglik": [float(v) for v in path]}


KM_STAGE = register(DeployedStage("survival_km", load_km, save_km, serve_km, drops=False))
COX_STAGE = register(
    DeployedStage("survival_coxph", load_cox, save_cox, serve_cox, describe_cox, drops=False)
)
