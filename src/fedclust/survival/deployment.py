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
from typing import TYPE_CHECKING, Any

import numpy as np

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
from fedclust.errors import ConfigError, InputDataError

from .coxph import CoxCentre, coxph_server
from .km import KMCentre, grid_edges, km_from_counts, km_server, logrank_from_counts

if TYPE_CHECKING:  # the neural stage's modules import torch: a survival_km / survival_coxph
    from .strategies import SurvivalClient  # centre (a ClientApp process per message) does not
    from .train import ModelConfig

NAME = "survival"
STRATEGIES = ("weights_averaging", "sequential")


def model_config(params: Mapping[str, Any]) -> ModelConfig:
    from .train import ModelConfig

    m = dict(params["model"])
    m["hidden"] = tuple(int(h) for h in m["hidden"])
    return ModelConfig(**m)


def save(centre: SurvivalClient, path: Path) -> None:
    save_npz(path, x=centre.x_np, t=centre.t_np, e=centre.e_np, cid=centre.cid,
             seed=np.int64(centre.seed), min_samples=np.int64(centre.min_samples))  # fmt: skip


def load(path: Path, params: Mapping[str, Any]) -> SurvivalClient:
    from .strategies import MIN_SAMPLES, SurvivalClient

    d = load_npz(path)
    floor = int(d["min_samples"]) if "min_samples" in d else MIN_SAMPLES  # the site's own floor
    return SurvivalClient(str(d["cid"]), d["x"], d["t"], d["e"], model_config(params),
                          int(d["seed"]), floor)  # fmt: skip


def describe(centre: SurvivalClient) -> dict[str, Any]:
    return {"n_features": int(centre.x_np.shape[1])}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    from .experiment import init_parameters
    from .strategies import Federation, sequential_server, weights_averaging_server
    from .train import HyperParams

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


# ---------------------------------------------------------------- the workflow's rule
COHORT = {"covariates": "results/survival/cohort/covariates.parquet",
          "outcomes": "results/survival/cohort/outcomes.tsv"}  # fmt: skip


def _units(config: Mapping[str, Any]) -> list[str]:
    cfg = config.get("survival", {})
    return [f"{e}/{s}" for e in cfg.get("endpoints") or [] for s in cfg.get("scenarios") or []]


def _cohort_inputs(config: Mapping[str, Any]) -> dict[str, str]:
    return dict(COHORT)


def _training(config: Mapping[str, Any], inputs: Mapping[str, str], stage: str,
              uid: str | None = None):  # fmt: skip
    """(unit, prepared repetition 0, the survival config) of the training centres rules
    ``survival_reference`` and ``survival_job`` build from the survival cohort."""
    import pandas as pd

    from fedclust.io import read_table

    from .prepare import prepare

    uid = uid or pick(config, stage, _units(config))
    endpoint, scenario = uid.split("/")
    cfg = dict(config["survival"])
    x = read_table(inputs["covariates"])
    obs = pd.read_csv(inputs["outcomes"], sep="\t", index_col=0)
    obs.index = obs.index.astype(str)
    return uid, prepare(x, obs, endpoint, scenario, 0, cfg, int(config["seed"])), cfg


def km_workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The KM / log-rank of BM_BLAST groups on the training centres (``survival_reference``'s
    check), on the public grid ``survival.km_grid``; reference: :func:`.km.federated_km`."""
    from .km import federated_km
    from .reference import BM_BINS, bm_groups

    uid, d, cfg = _training(config, inputs, "survival_km")
    if d["bm_blast_train"] is None:
        raise InputDataError("the survival cohort has no BM_BLAST column for the KM groups",
                             where=inputs["covariates"],
                             fix="a cohort with BM_BLAST, or drop survival_km from "
                             "deployment.stages")  # fmt: skip
    cen, t, e = d["centre"], d["t_train"], d["e_train"]
    grp = bm_groups(d["bm_blast_train"])
    labels = [name for _, _, name in BM_BINS]
    params = km_params(cfg.get("km_grid"), labels)
    edges = grid_edges(params["km_grid"])
    K = int(cfg["n_centres"])
    parts = [(t[cen == k], e[cen == k], grp[cen == k]) for k in range(K)]
    cs = [KMCentre(f"centre{k}", *p, edges) for k, p in enumerate(parts)]
    km, lr = federated_km(parts, edges, labels)
    ref = {"km": km, "logrank": None if lr is None else {"chi2": lr[0], "p": lr[1], "df": lr[2]}}
    return WorkflowRun(uid, cs, params, ref)


def cox_workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The Cox-PH stratified by centre on ``survival.coxph_covariates`` of the training centres
    (``survival_reference``'s check); reference: :func:`.coxph.fit_federated_coxph`."""
    from .coxph import fit_federated_coxph
    from .reference import cox_covariates

    uid, d, cfg = _training(config, inputs, "survival_coxph")
    cen, t, e = d["centre"], d["t_train"], d["e_train"]
    _, cols = cox_covariates(d["covariates"], cfg)
    x = d["x_train"].astype(float)[:, cols]
    parts = [(x[cen == k], t[cen == k], e[cen == k]) for k in range(int(cfg["n_centres"]))]
    cs = [CoxCentre(f"centre{k}", *p) for k, p in enumerate(parts)]
    beta, se, path = fit_federated_coxph(parts)
    return WorkflowRun(uid, cs, {}, {"beta": beta, "se": se, "loglik": [float(v) for v in path]})


def _train_units(config: Mapping[str, Any]) -> list[str]:
    cfg = config.get("survival", {})
    fed = [s for s in cfg.get("strategies") or [] if s in STRATEGIES]
    return [f"{u}/{s}" for u in _units(config) for s in fed]


def train_workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The training centres of rule ``survival_job`` (repetition 0: patients, minibatch seeds,
    initial model) and one strategy's final training at the first point of ``survival.grid``
    (the workflow picks the point by cross-validation when the grid has several;
    ``deployment.iterations``: at most that many federated epochs); reference: the workflow's
    :func:`.strategies.train_strategy` on the same centres."""
    from fedclust.deployment import cap
    from fedclust.federation import Ledger
    from fedclust.seeds import derive_seed

    from .experiment import _clients, grid, init_parameters
    from .experiment import model_config as config_model
    from .strategies import Federation, train_strategy

    uid = pick(config, NAME, _train_units(config))
    endpoint, scenario, strategy = uid.split("/")
    seed = int(config["seed"])
    _, d, cfg = _training(config, inputs, NAME, f"{endpoint}/{scenario}")
    mc, K = config_model(cfg), range(int(cfg["n_centres"]))
    hp = grid(cfg)[0]
    hp = type(hp)(cap(hp.fe, config), hp.ie, hp.batches, hp.lr)
    label = (seed, "survival", endpoint, 0, scenario, strategy)
    params = {"strategy": strategy, "model": {**asdict(mc), "hidden": list(mc.hidden)},
              "hp": asdict(hp), "init_seed": derive_seed(seed, "survival", endpoint, 0, "init"),
              "order_seed": derive_seed(*label, "order", "final"),
              "min_samples": int(cfg.get("min_samples", 2))}  # fmt: skip
    fed = Federation(params["min_samples"])
    init = init_parameters(mc, d["x_train"].shape[1], params["init_seed"])
    floor = params["min_samples"]
    order = np.random.default_rng(params["order_seed"])
    ref = train_strategy(strategy, _clients(d, K, mc, seed, endpoint, 0, scenario, floor), init, hp,
                         mc, Ledger(), order, fed)  # fmt: skip
    return WorkflowRun(uid, _clients(d, K, mc, seed, endpoint, 0, scenario, floor), params,
                       {"model": list(ref[0][0])})  # fmt: skip


STAGE = register(
    DeployedStage(NAME, load, save, serve, describe, drops=drops,
                  workflow=WorkflowHook(lambda c: pick(c, NAME, _train_units(c)),
                                        _cohort_inputs, train_workflow_run))
)  # fmt: skip
KM_STAGE = register(
    DeployedStage("survival_km", load_km, save_km, serve_km, drops=False,
                  workflow=WorkflowHook(lambda c: pick(c, "survival_km", _units(c)),
                                        _cohort_inputs, km_workflow_run))
)  # fmt: skip
COX_STAGE = register(
    DeployedStage("survival_coxph", load_cox, save_cox, serve_cox, describe_cox, drops=False,
                  workflow=WorkflowHook(lambda c: pick(c, "survival_coxph", _units(c)),
                                        _cohort_inputs, cox_workflow_run))
)  # fmt: skip
