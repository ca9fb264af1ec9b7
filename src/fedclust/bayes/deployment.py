"""Federated Bayesian neural networks (seed 003 ch. 4: PVI / VIRTUAL-style federated BBB, and
FedAvg of deterministic networks) as a deployed stage (:mod:`fedclust.deployment`).

One run is one federated unit of the bayes stage: ``rounds`` rounds of the core's
:func:`~fedclust.federation.run_rounds` under the unit's schedule (sequential, synchronous or
sampled), the server's PVI update η_q ← η_q + Σ Δ_m (:class:`.server.NaturalSum`) or FedAvg —
:func:`.server.serve` with the strategy of :func:`.experiment.server_parts`, as the workflow's
:func:`.experiment.run_federated_unit` runs it in-process. A centre's file holds its own
training and test images and labels, its name, index (the client number of the per-client
accuracy) and training seed; it keeps its PVI factor t, its random streams and (hierarchical)
its private weights φ between rounds (``Context.state`` on a deployment). The run's parameters
(:func:`params_from_config`) are the model (hidden layers, bias, class count), the seeded start
point, the local training settings, the prior, the schedule and the floor; the input width
comes from the handshake. Outputs: the final global parameters ``eta`` (PVI's natural
parameters, FedAvg's weights), the per-round ``rounds`` table (the strategy's records) and the
ledger. The workflow's server-side accuracy on the pooled test images is an evaluation, not a
message: a deployment's server holds no images, so ``rounds`` has no ``server_accuracy``.
PVI's factors and the sampled schedule need every centre (no drops).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from fedclust.seeds import derive_seed

from . import bbb, pooled, protocols, server
from .experiment import _damping, _per_round, make_centre, server_parts, settings

NAME = "bayes"


def params_from_config(cfg: Mapping[str, Any], unit: str, n_classes: int,
                       seed: int) -> dict[str, Any]:  # fmt: skip
    """The run parameters of federated unit ``unit`` (``<method>__<split>``, a PVI or FedAvg
    method) of the workflow's ``bayes`` config; ``n_classes``: the labels' count (the model's
    output width), ``seed``: the workflow's seed (the start point and the schedule)."""
    from .workflow import federated_specs

    c = settings(dict(cfg))
    spec, fed = federated_specs(c)[unit], c["federated"]
    m = int(fed["n_clients"])
    local = {**fed["local"], **{k: spec[k] for k in ("kl_weight", "epochs", "lr") if k in spec}}
    per_round = _per_round(spec, m)
    return {
        "unit": unit, "algorithm": str(spec["algorithm"]), "schedule": str(spec["schedule"]),
        "per_round": per_round, "damping": _damping(spec, per_round),
        "rounds": int(spec["rounds"]),
        "schedule_seed": derive_seed(seed, "bayes", "schedule", unit),
        "hidden": [int(h) for h in fed["model"]["hidden"]], "bias": bool(fed["model"]["bias"]),
        "n_classes": int(n_classes), "init": dict(c["init"]), "init_seed": int(seed),
        "local": local, "prior_sigma": float(fed["prior_sigma"]),
        "var_max": float(fed["var_max"] or float(fed["prior_sigma"]) ** 2),
        "private_sigma": float(fed["private_sigma"]) if spec.get("hierarchical") else None,
        "min_samples": int(fed["min_samples"]),
    }  # fmt: skip


def _layout(n_in: int, params: Mapping[str, Any]) -> bbb.Layout:
    return bbb.make_layout(int(n_in), params["hidden"], int(params["n_classes"]),
                           bool(params["bias"]))  # fmt: skip


def save(centre: Any, path: Path) -> None:
    save_npz(path, x=centre.x, y=centre.y, x_test=centre.x_test, y_test=centre.y_test,
             cid=centre.cid, index=int(centre.index), seed=int(centre.seed))  # fmt: skip


def setup(params: Mapping[str, Any]) -> None:
    """Declare the unit's protocol at the centre (a request names it; a deployment answers
    every message in a fresh process, where only declared protocols resolve)."""
    floor = int(params["min_samples"])
    if params["algorithm"] == "pvi":
        protocols.pvi_delta(floor)
    else:
        protocols.fedavg_fit(floor)


def load(path: Path, params: Mapping[str, Any]) -> Any:
    d = load_npz(path)
    layout = _layout(d["x"].shape[1], params)
    init = pooled.initial_posterior(layout, params["init"], int(params["init_seed"]))
    s = bbb.TrainSettings.from_config(dict(params["local"]))
    private = params.get("private_sigma")
    return make_centre(
        str(params["algorithm"]), str(d["cid"]), int(d["index"]),
        (d["x"], d["y"], d["x_test"], d["y_test"]), layout, s, int(d["seed"]), init,
        float(params["prior_sigma"]), int(params["min_samples"]), float(params["var_max"]),
        None if private is None else float(private),
    )  # fmt: skip


def describe(centre: Any) -> dict[str, Any]:
    return {"n_features": int(np.asarray(centre.x).shape[1])}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    layout = _layout(same_schema(schema, "n_features", NAME), params)
    mu0, _ = pooled.initial_posterior(layout, params["init"], int(params["init_seed"]))
    strategy, initial, protocol = server_parts(
        str(params["algorithm"]), str(params["schedule"]), int(params["per_round"]),
        int(params["schedule_seed"]), layout.n_params, float(params["prior_sigma"]),
        float(params["var_max"]), mu0, int(params["min_samples"]),
    )  # fmt: skip
    s = bbb.TrainSettings.from_config(dict(params["local"]))
    config = {"epochs": int(s.epochs), "damping": float(params["damping"])}
    run = server.serve(strategy, initial, int(params["rounds"]), config, protocol,
                       label=str(params.get("unit", "")))  # fmt: skip
    final, records = run(list(proxies))
    return {"eta": [np.asarray(a) for a in final], "rounds": server.rounds_table(records)}


# ---------------------------------------------------------------- the workflow's rule
def workflow_units(config: Mapping[str, Any]) -> list[str]:
    """The PVI and FedAvg units (``<method>__<split>``) of rule ``bayes_federated``."""
    from .workflow import federated_specs

    cfg = config.get("bayes", {})
    if not cfg.get("enabled", False):
        return []
    return [u for u, s in federated_specs(settings(dict(cfg))).items()
            if s.get("algorithm") in ("pvi", "fedavg")]  # fmt: skip


def workflow_unit(config: Mapping[str, Any]) -> str:
    return pick(config, NAME, workflow_units(config))


def _capped(config: Mapping[str, Any], unit: str) -> dict[str, Any]:
    """The ``bayes`` config with the unit's rounds at most ``deployment.iterations``."""
    import copy

    cfg = copy.deepcopy(dict(config["bayes"]))
    method = cfg["federated"]["methods"][unit.split("__")[0]]
    method["rounds"] = cap(int(method["rounds"]), config)
    return cfg


def workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The centres of rule ``bayes_federated``'s unit (its split of ``results/bayes/data.npz``,
    seeds and start point, as :func:`.experiment.run_federated_unit` builds them); reference:
    that function's ``rounds`` table (less the server's accuracy on the pooled test images, an
    evaluation) on the same data."""
    from . import data as D
    from .experiment import load_data, run_federated_unit

    unit, seed = workflow_unit(config), int(config["seed"])
    cfg = _capped(config, unit)
    d = load_data(inputs["data"])
    x, y, xt, yt = d["x_train"], d["y_train"], d["x_test"], d["y_test"]
    params = params_from_config(cfg, unit, int(y.max()) + 1, seed)
    fed = settings(cfg)["federated"]
    split, m = fed["splits"][unit.split("__", 1)[1]], int(fed["n_clients"])
    owner = D.split_clients(y, split, m, seed)
    towner = D.split_test(y, owner, yt, split["kind"], m, seed)
    layout = _layout(x.shape[1], params)
    init = pooled.initial_posterior(layout, params["init"], seed)
    s = bbb.TrainSettings.from_config(dict(params["local"]))
    centres = [make_centre(params["algorithm"], f"c{i:03d}", i,
                           (x[owner == i], y[owner == i], xt[towner == i], yt[towner == i]),
                           layout, s, derive_seed(seed, "bayes", "client", unit, i), init,
                           params["prior_sigma"], params["min_samples"], params["var_max"],
                           params["private_sigma"]) for i in range(m)]  # fmt: skip
    rounds, _, _ = run_federated_unit(cfg, d, unit, seed)
    ref = {"rounds": rounds.drop(columns="server_accuracy")}
    return WorkflowRun(unit, centres, params, ref)


STAGE = register(
    DeployedStage(NAME, load, save, serve, describe, drops=False, setup=setup,
                  workflow=WorkflowHook(workflow_unit, lambda c: {"data": "results/bayes/data.npz"},
                                        workflow_run))
)  # fmt: skip
