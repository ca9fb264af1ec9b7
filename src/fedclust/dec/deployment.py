"""Federated DEC (seed 000 §1.8–1.10, stages A–C) as a deployed stage (:mod:`fedclust.deployment`).

One run is one (strategy, centroid aggregation) of :func:`.pipeline.run_federated`: stage A
(federated TSAE rounds), stage B (every centre's local k-means message, aggregated on the
server) and stage C (federated DEC rounds), with the pipeline's seeds, learning rates and
message protocols. A centre's file holds its samples, its name and its minibatch generator's
state; the server learns the feature count from the handshake (no shape is fixed). Outputs:
the global TSAE, the DEC parameters (encoder + centroids), the aggregated centroids, the round
curves and the ledger. Evaluation on pooled data (the pipeline's accuracy columns) is not part
of the protocol and not done here. A run equals the pipeline's run of the strategy's *first*
aggregation method: the pipeline's later aggregations continue the centres' generators after
the earlier ones' DEC rounds (one process), a deployed run starts from the centre files.

In one process the simulated centres share torch's global generator (dropout, input noise);
on a deployment each centre draws from its own, so the numbers agree with the in-process
engine for models without dropout or input noise (the configs' default).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

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
from fedclust.federation import History, call_all, run_rounds
from fedclust.seeds import derive_seed

from .federated import (
    AE_FIT,
    DEC_FIT,
    KMEANS_REQUEST,
    DECClient,
    aggregate_centroids,
    broadcast_centroids,
    dec_parameters,
    kmeans_protocol,
    make_strategy,
)
from .model import DECModel, get_parameters, set_parameters

NAME = "dec"


def build_model(model_cfg: Mapping[str, Any], n_features: int, k: int, alpha: float) -> DECModel:
    from .pipeline import make_tsae

    return DECModel(make_tsae({"model": dict(model_cfg)}, n_features), int(k), float(alpha))


def params_from_config(cfg: dict, dataset: str, split: str, strategy: str, method: str,
                       seed: int) -> dict[str, Any]:  # fmt: skip
    """The run parameters of one (strategy, aggregation) of the workflow's ``dec`` config."""
    from .pipeline import PAIRING, dataset_setting

    f, opt = cfg["federated"], PAIRING[strategy]
    shuffle = bool(cfg["shuffle_batches"])
    return {
        "strategy": strategy, "centroid_aggregation": method,
        "k": int(cfg["datasets"][dataset]["k"]), "alpha": float(f["alpha"]),
        "model": dict(cfg["model"]), "server": dict(f["server"]),
        "ae_rounds": int(dataset_setting(cfg, dataset, "federated.ae_rounds")),
        "dec_rounds": int(dataset_setting(cfg, dataset, "federated.dec_rounds")),
        "ae": {"stage": "ae", "optimizer": opt,
               "lr": dataset_setting(cfg, dataset, "autoencoder.lr", opt),
               "batch_size": int(dataset_setting(cfg, dataset, "federated.ae_batch_size")),
               "epochs": int(f["local_epochs"]), "loss": cfg["autoencoder"]["loss"],
               "beta": float(cfg["autoencoder"]["dice_bce_beta"]), "shuffle": shuffle},
        "dec": {"stage": "dec", "optimizer": opt,
                "lr": dataset_setting(cfg, dataset, "clustering.lr", opt),
                "batch_size": int(dataset_setting(cfg, dataset, "federated.dec_batch_size")),
                "epochs": int(f["local_epochs"]),
                "target_update": cfg["clustering"]["target_update"], "shuffle": shuffle},
        "n_init": int(cfg["clustering"]["n_init"]),
        "min_cluster_size": int(f["min_cluster_size"]),
        "tsae_seed": derive_seed(seed, "dec", dataset, "fed", split, strategy),
        "kmeans_seed": derive_seed(seed, "dec", dataset, split, strategy, "kmeans"),
        # the pipeline's rng(seed, "dec", dataset, split, strategy, method)
        "aggregation_seed": derive_seed(seed, "dec", dataset, split, strategy, method),
    }  # fmt: skip


def centres(x: np.ndarray, centers: np.ndarray, cfg: dict, dataset: str, split: str,
            strategy: str, seed: int) -> list[DECClient]:  # fmt: skip
    """The pipeline's centre objects of one split (:func:`.pipeline._fed_clients`)."""
    from .pipeline import _fed_clients

    return _fed_clients(x, centers, cfg, dataset, split, strategy, seed)[0]


# ---------------------------------------------------------------- centre side
def save(centre: DECClient, path: Path) -> None:
    save_npz(path, x=centre.x.cpu().numpy(), cid=centre.cid,
             generator=centre.gen.get_state().numpy())  # fmt: skip


def setup(params: Mapping[str, Any]) -> None:
    """Declare stage B's protocol at the centre (a request names it; the floor applied is the
    larger of ``min_cluster_size`` and the centre's own ``nfilter_subset``)."""
    kmeans_protocol(int(params["min_cluster_size"]))


def load(path: Path, params: Mapping[str, Any]) -> DECClient:
    d = load_npz(path)
    x = np.asarray(d["x"], dtype=np.float32)
    make_model = functools.partial(build_model, params["model"], x.shape[1], params["k"],
                                   params["alpha"])  # fmt: skip
    centre = DECClient(str(d["cid"]), x, make_model, "cpu", 0)
    centre.gen.set_state(torch.from_numpy(np.asarray(d["generator"], dtype=np.uint8)))
    return centre


def describe(centre: DECClient) -> dict[str, Any]:
    return {"n_features": int(centre.x.shape[1])}


# ---------------------------------------------------------------- server side
def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """Stages A, B and C over the centres' proxies (the pipeline's order and seeds)."""
    n_features = int(same_schema(schema, "n_features", NAME))
    p, strategy = params, str(params["strategy"])
    tsae_seed = int(p["tsae_seed"])
    torch.manual_seed(tsae_seed)
    model = build_model(p["model"], n_features, p["k"], p["alpha"])
    torch.manual_seed(tsae_seed)
    ae_hist = History()
    ae = run_rounds(proxies, make_strategy(strategy, p["server"]), get_parameters(model.tsae),
                    int(p["ae_rounds"]), dict(p["ae"]), AE_FIT, kind="ae", label="dec ae",
                    history=ae_hist)  # fmt: skip
    request = {"parameters": ae, "k": int(p["k"]), "n_init": int(p["n_init"]),
               "seed": int(p["kmeans_seed"]), "scaler": "none",
               "min_cluster_size": int(p["min_cluster_size"])}  # fmt: skip
    msgs = call_all(proxies, "kmeans", request, 0, "kmeans_centroids",
                    kmeans_protocol(int(p["min_cluster_size"])), KMEANS_REQUEST)  # fmt: skip
    msgs = [m for m in msgs if m is not None]
    method = str(p["centroid_aggregation"])
    mu = aggregate_centroids(method, [m["centroids"] for m in msgs],
                             [m["counts"] for m in msgs], int(p["k"]),
                             np.random.default_rng(int(p["aggregation_seed"])),
                             int(p["n_init"]))  # fmt: skip
    broadcast_centroids(proxies, mu, proxies[0].ledger)
    set_parameters(model.tsae, ae)
    with torch.no_grad():
        model.centroids.copy_(torch.as_tensor(mu))
    torch.manual_seed(derive_seed(tsae_seed, method))
    dec_hist = History()
    dec = run_rounds(proxies, make_strategy(strategy, p["server"]), dec_parameters(model),
                     int(p["dec_rounds"]), dict(p["dec"]), DEC_FIT, kind="dec", label="dec dec",
                     history=dec_hist)  # fmt: skip
    curves = pd.DataFrame(
        [{"stage": "ae", "round": i + 1, "loss": v} for i, v in enumerate(ae_hist.loss)]
        + [{"stage": "dec", "round": i + 1, "loss": v} for i, v in enumerate(dec_hist.loss)]
    )
    return {"tsae": ae, "dec": dec, "centroids": mu, "curves": curves,
            "participants": ae_hist.participants + dec_hist.participants}  # fmt: skip


# ---------------------------------------------------------------- the workflow's rule
def workflow_units(config: Mapping[str, Any]) -> list[str]:
    """``dataset/split/strategy/aggregation`` of the ``dec`` config's federated runs."""
    cfg = config.get("dec", {})
    f = cfg.get("federated", {})
    return [f"{d}/{s}/{st}/{m}" for d in cfg.get("federated_datasets") or []
            for s in cfg.get("splits") or [] for st in f.get("strategies") or []
            for m in f.get("centroid_aggregation") or []]  # fmt: skip


def workflow_unit(config: Mapping[str, Any]) -> str:
    return pick(config, NAME, workflow_units(config))


def workflow_inputs(config: Mapping[str, Any]) -> dict[str, Any]:
    """The data set, its split and the tuned settings file (when ``dec.tuning.apply``), as rule
    ``dec_train_federated_unit`` reads them."""
    from types import SimpleNamespace

    from .workflow import final_settings

    dataset, split = workflow_unit(config).split("/")[:2]
    tuned = final_settings(dict(config["dec"]), SimpleNamespace(dataset=dataset))
    return {"features": f"results/data/{dataset}/features.parquet",
            "obs": f"results/data/{dataset}/obs.tsv",
            "split": f"results/data/{dataset}/splits/{split}.tsv", "settings": tuned}  # fmt: skip


def workflow_run(config: Mapping[str, Any], inputs: Mapping[str, Any]) -> WorkflowRun:
    """The pipeline's centres of the split (:func:`centres`) and the run's parameters
    (:func:`params_from_config`; ``deployment.iterations``: at most that many TSAE and DEC
    rounds each)."""
    from .io import load_centers, load_dataset
    from .units import apply_settings, read_settings

    uid = workflow_unit(config)
    dataset, split, strategy, method = uid.split("/")
    seed = int(config["seed"])
    cfg = apply_settings(dict(config["dec"]), dataset, read_settings(dict(inputs)))
    x, obs, _ = load_dataset(inputs["features"], inputs["obs"])
    where = load_centers(inputs["split"], obs.index)
    params = params_from_config(cfg, dataset, split, strategy, method, seed)
    params["ae_rounds"] = cap(params["ae_rounds"], config)
    params["dec_rounds"] = cap(params["dec_rounds"], config)
    return WorkflowRun(uid, centres(x, where, cfg, dataset, split, strategy, seed), params)


STAGE = register(
    DeployedStage(NAME, load, save, serve, describe, drops=True, setup=setup,
                  workflow=WorkflowHook(workflow_unit, workflow_inputs, workflow_run))
)  # fmt: skip
