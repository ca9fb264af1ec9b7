"""End-to-end runs on numpy arrays: centralized grid (optimizer × α × scaler) and the federated
grid (split × strategy × centroid aggregation), evaluated on the pooled data (seed 000 §1.10)."""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedclust import torch_optim
from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import INPROCESS, Ledger, Transport
from fedclust.metrics.assignment import cycle_accuracy, external_scores, internal_scores
from fedclust.seeds import derive_seed, rng, seed_torch

from .federated import (
    DECClient,
    FederatedHistory,
    aggregate_centroids,
    broadcast_centroids,
    dec_parameters,
    local_centroid_messages,
    make_strategy,
    run_rounds,
    set_dec_parameters,
)
from .io import MISSING_LABELS
from .model import TSAE, DECModel, encoder_dims, get_parameters, set_parameters
from .optim import make_optimizer
from .train import (
    SCHEDULERS,
    ae_epoch,
    embed,
    kmeans_centroids,
    predict,
    predict_reconstructed,
    reconstruction_mse,
    shuffle_generator,
    train_dec,
)
from .units import central_configs, skip_dec_draws

log = logging.getLogger(__name__)

#: Server strategy ↔ local optimizer pairing (seed 000 §1.8).
PAIRING = {"fedavg": "sgd", "fedadam": "adam", "fedyogi": "yogi"}


def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def check_features(x: np.ndarray, where: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2 or len(x) == 0:
        raise InputDataError("features must be a non-empty samples × features matrix", where=where)
    if not np.isfinite(x).all():
        raise InputDataError(
            "features contain NaN/inf", where=where, fix="impute missing values in the data stage"
        )
    if x.min() < 0 or x.max() > 1:
        raise InputDataError(
            f"features must lie in [0, 1] (found {x.min():.3g}..{x.max():.3g})",
            where=where,
            fix="scale pixels to [0, 1]; MDS features are binary / imputed probabilities",
        )
    return x


def dataset_setting(cfg: dict, dataset: str, key: str, optimizer: str | None = None) -> Any:
    """A per-dataset override (``dec.datasets.<d>.<key>``) or the global value.

    A per-optimizer override that lacks ``optimizer`` (a tuning grid run for some optimizers
    only) leaves that optimizer on the global value ``dec.<key>``."""
    ds = cfg["datasets"].get(dataset) or {}
    stage, name = key.split(".")
    glob = cfg[stage][name]
    value = ds.get(f"{stage}_{name}", glob)
    if optimizer is None:
        return value
    for v in (value, glob):
        if not isinstance(v, dict):
            return v
        if optimizer in v:
            return v[optimizer]
    raise ConfigError(
        f"no {key} for optimizer {optimizer}",
        where=f"dec.{key}",
        fix=f"give dec.{key} (or dec.datasets.{dataset}.{stage}_{name}) a value for {optimizer}",
    )


def make_tsae(cfg: dict, n_features: int) -> TSAE:
    m = cfg["model"]
    return TSAE(
        encoder_dims(n_features, m["arch"]),
        hidden_act=m["hidden_act"],
        final_act=m["final_act"],
        hidden_dropout=m["hidden_dropout"],
        input_noise=m["input_noise"],
        noise_kind=m["noise_kind"],
        init=m["init"],
    )


def reference_mask(y: np.ndarray) -> np.ndarray:
    """Samples with a reference label (missing ones, "NA" or "unknown", are left out of
    external scores)."""
    return ~np.isin(np.asarray(y).astype(str), MISSING_LABELS)


def reference_scores(
    x: np.ndarray, z: np.ndarray, y: np.ndarray, sample_size: int | None = None
) -> dict[str, float]:
    """Internal scores of the *reference* labels (seed 000 Table 5.1, HDP labels there):
    silhouette (cosine, data space; Euclidean, feature space ``z`` of the best model) and
    Calinski–Harabasz raw and ln, on the samples with a reference category."""
    known = reference_mask(y)
    n = int(known.sum())
    out = internal_scores(
        np.asarray(x)[known], np.asarray(z)[known], np.asarray(y)[known],
        sample_size if sample_size and sample_size < n else None,
    )  # fmt: skip
    return {"n": n, "n_without_reference": int(len(y) - n),
            "n_groups": int(len(np.unique(np.asarray(y)[known]))), **out}  # fmt: skip


def evaluate(
    model: DECModel, x: np.ndarray, y: np.ndarray | None, sample_size: int | None = None
) -> tuple[dict, np.ndarray]:
    """Pooled evaluation: external (vs reference), internal, cycle accuracy, recon. MSE."""
    dev = next(model.parameters()).device
    xt = torch.as_tensor(x, device=dev)
    pred = predict(model, xt)
    z = embed(model.tsae, xt)
    out: dict[str, float] = {}
    if y is not None:
        known = reference_mask(y)
        out.update(external_scores(pred[known], np.asarray(y)[known]))
    out["cycle_accuracy"] = cycle_accuracy(predict_reconstructed(model, xt), pred)
    out["recon_loss"] = reconstruction_mse(model.tsae, xt)
    out["n_clusters_found"] = int(len(np.unique(pred)))
    out.update(
        internal_scores(x, z, pred, sample_size if sample_size and sample_size < len(x) else None)
    )
    return out, pred


@dataclass
class CentralizedResult:
    table: pd.DataFrame
    ae_curves: pd.DataFrame
    dec_curves: pd.DataFrame
    best: dict[str, Any] = field(default_factory=dict)


def train_autoencoder(
    tsae: TSAE,
    x: torch.Tensor,
    optimizer: str,
    lr: float,
    epochs: int,
    batch_size: int,
    loss: str,
    shuffle: bool = False,
    gen: torch.Generator | None = None,
    beta: float = 0.5,
    noise_sigma: float = 0.0,
    clean_epochs: int = 0,
    scheduler: str = "none",
    noise_seed: int = 0,
) -> list[float]:
    """``epochs`` epochs (with truncated Gaussian input noise when ``noise_sigma`` > 0, then
    ``clean_epochs`` more without it, seed 000 §1.4). ``scheduler`` plateau: the thesis code's
    ``ReduceLROnPlateau(mode="min", factor=0.5, patience=20)``, stepped once per epoch on the
    epoch's training loss (the code used a validation loss; Step 1 here has no held-out set)."""
    if scheduler not in SCHEDULERS:
        raise ConfigError(
            f"unknown lr_scheduler {scheduler!r}",
            where="dec.autoencoder.lr_scheduler",
            fix=f"one of {SCHEDULERS}",
        )
    opt = make_optimizer(optimizer, tsae.parameters(), lr)
    sched = (
        torch_optim.ReduceLROnPlateau(opt, factor=0.5, patience=20)
        if scheduler == "plateau"
        else None
    )
    noise_gen = shuffle_generator(noise_seed)
    sigmas = [noise_sigma] * epochs + ([0.0] * clean_epochs if noise_sigma > 0 else [])
    curve = []
    for sigma in sigmas:
        curve.append(ae_epoch(tsae, x, opt, batch_size, loss, shuffle, gen, beta, sigma, noise_gen))
        if sched is not None:
            sched.step(curve[-1])
    return curve


def train_central_tsae(
    xt: torch.Tensor, cfg: dict, dataset: str, opt_name: str, seed: int
) -> tuple[TSAE, list[float]]:
    """Step 1 of one centralized configuration family: the TSAE of one optimizer (its seed
    and shuffling derive from (dataset, optimizer) only)."""
    seed_torch(seed, "dec", dataset, "tsae", opt_name)
    tsae = make_tsae(cfg, xt.shape[1]).to(xt.device)
    t0 = time.perf_counter()
    curve = train_autoencoder(
        tsae,
        xt,
        opt_name,
        dataset_setting(cfg, dataset, "autoencoder.lr", opt_name),
        int(dataset_setting(cfg, dataset, "autoencoder.epochs")),
        int(dataset_setting(cfg, dataset, "autoencoder.batch_size", opt_name)),
        cfg["autoencoder"]["loss"],
        bool(cfg["shuffle_batches"]),
        shuffle_generator(derive_seed(seed, "dec", dataset, "shuffle", "tsae", opt_name)),
        beta=float(cfg["autoencoder"]["dice_bce_beta"]),
        noise_sigma=float(cfg["autoencoder"]["gaussian_sigma"]),
        clean_epochs=int(cfg["autoencoder"]["clean_epochs"]),
        scheduler=cfg["autoencoder"]["lr_scheduler"],
        noise_seed=derive_seed(seed, "dec", dataset, "noise", "tsae", opt_name),
    )
    log.info("%s TSAE %s: %d epochs in %.1fs, MSE %.4g", dataset, opt_name, len(curve),
             time.perf_counter() - t0, reconstruction_mse(tsae, xt))  # fmt: skip
    return tsae, curve


def central_dec_run(
    x: np.ndarray,
    xt: torch.Tensor,
    y: np.ndarray | None,
    tsae: TSAE,
    z: np.ndarray,
    cfg: dict,
    dataset: str,
    config: tuple[str, float, str],
    seed: int,
) -> tuple[dict, list[dict], DECModel, np.ndarray]:
    """Step 2 of one centralized configuration (optimizer, α, scaler) on a trained TSAE with
    embedding ``z``: k-means init, DEC, pooled evaluation. Seeds derive from the configuration."""
    opt_name, alpha, scaler = config
    k = int(cfg["datasets"][dataset]["k"])
    dev = xt.device
    shuffle = bool(cfg["shuffle_batches"])
    s = derive_seed(seed, "dec", dataset, "kmeans", opt_name, alpha, scaler)
    mu, init_labels = kmeans_centroids(z, k, scaler, cfg["clustering"]["n_init"], s)
    model = DECModel(copy.deepcopy(tsae), k, float(alpha)).to(dev)
    with torch.no_grad():
        model.centroids.copy_(torch.as_tensor(mu))
    seed_torch(seed, "dec", dataset, "dec", opt_name, alpha, scaler)
    params = [p for n, p in model.named_parameters() if "dec_bias" not in n]
    opt = make_optimizer(opt_name, params, dataset_setting(cfg, dataset, "clustering.lr", opt_name))
    hist = train_dec(
        model,
        xt,
        opt,
        int(dataset_setting(cfg, dataset, "clustering.batch_size", opt_name)),
        int(cfg["clustering"]["max_epochs"]),
        float(cfg["clustering"]["tol"]),
        cfg["clustering"]["target_update"],
        init_labels,
        shuffle,
        shuffle_generator(
            derive_seed(seed, "dec", dataset, "shuffle", "dec", opt_name, alpha, scaler)
        ),
    )
    metrics, pred = evaluate(model, x, y, cfg["evaluate"]["silhouette_max_points"])
    row = {
        "optimizer": opt_name,
        "alpha": float(alpha),
        "scaler": scaler,
        **metrics,
        "ae_loss": reconstruction_mse(tsae, xt),
        "kmeans_accuracy": external_scores(init_labels[reference_mask(y)], y[reference_mask(y)])[
            "accuracy"
        ]
        if y is not None
        else float("nan"),
        "delta_label": hist.delta_label[-1] if hist.delta_label else 0.0,
        "epochs": len(hist.loss),
    }
    curve = [
        {"optimizer": opt_name, "alpha": float(alpha), "scaler": scaler, "epoch": i + 1,
         "kl": lo, "delta_label": d}
        for i, (lo, d) in enumerate(zip(hist.loss, hist.delta_label, strict=False))
    ]  # fmt: skip
    return row, curve, model, pred


def run_central_unit(
    x: np.ndarray,
    y: np.ndarray | None,
    cfg: dict,
    dataset: str,
    seed: int,
    configs: list[tuple[str, float, str]],
    tsaes: dict[str, tuple[TSAE, list[float]]] | None = None,
    keep: dict | None = None,
) -> CentralizedResult:
    """The configurations ``configs`` (a contiguous block of the grid's loop order). A TSAE
    not given in ``tsaes`` (optimizer → (TSAE, curve)) is trained here and its curve reported;
    ``best`` is the unit's best run by the dataset's selection order (unsorted ``table``)."""
    x = check_features(x, f"results/data/{dataset}/features.parquet")
    dev = device()
    xt = torch.as_tensor(x, device=dev)
    rows, ae_curves, dec_curves, models = [], [], [], {}
    tsaes = dict(tsaes or {})
    for opt_name in dict.fromkeys(c[0] for c in configs):
        if opt_name not in tsaes:
            tsae, curve = train_central_tsae(xt, cfg, dataset, opt_name, seed)
            tsaes[opt_name] = (tsae, curve)
            if keep is not None:
                keep[("tsae", opt_name)] = get_parameters(tsae)
            ae_curves += [
                {"optimizer": opt_name, "epoch": i + 1, "loss": v} for i, v in enumerate(curve)
            ]
        tsae = tsaes[opt_name][0].to(dev)
        z = embed(tsae, xt)
        for config in (c for c in configs if c[0] == opt_name):
            row, curve, model, pred = central_dec_run(x, xt, y, tsae, z, cfg, dataset, config, seed)
            rows.append(row)
            dec_curves += curve
            models[config] = (model, pred)
    table = pd.DataFrame(rows)
    ranked = sort_results(table, cfg["datasets"][dataset]["selection"])
    best_key = tuple(ranked.iloc[0][["optimizer", "alpha", "scaler"]])
    model, pred = models[best_key]
    best = {"key": best_key, "model": model.cpu(), "labels": pred,
            "features": embed(model.tsae, torch.as_tensor(x))}  # fmt: skip
    return CentralizedResult(table, pd.DataFrame(ae_curves), pd.DataFrame(dec_curves), best)


def run_centralized(
    x: np.ndarray,
    y: np.ndarray | None,
    cfg: dict,
    dataset: str,
    seed: int,
    keep: dict | None = None,
) -> CentralizedResult:
    """TSAE once per optimizer, then DEC for every α × scaler (Tables B.4/B.5 layout).
    ``keep`` (optional): receives each optimizer's Step-1 TSAE parameters under
    ``("tsae", optimizer)`` (the extra figures' end-of-TSAE embedding, Figs 5.8/5.10/5.15)."""
    res = run_central_unit(x, y, cfg, dataset, seed, central_configs(cfg), keep=keep)
    res.table = sort_results(res.table, cfg["datasets"][dataset]["selection"])
    return res


def sort_results(table: pd.DataFrame, selection: str) -> pd.DataFrame:
    """accuracy ↓ (digits, §3.8) or the EUROMDS lexicographic order (Silh_data ↓, CH_data ↓,
    Silh_feat ↓, CH_feat ↓, recon ↑)."""
    if selection == "accuracy":
        by, asc = ["accuracy", "recon_loss", "cycle_accuracy"], [False, True, False]
    elif selection == "internal":
        by = ["sil_data", "ch_data", "sil_feat", "ch_feat", "recon_loss"]
        asc = [False, False, False, False, True]
    else:
        raise ConfigError(
            f"unknown selection {selection!r}", where="dec.selection", fix="accuracy or internal"
        )
    return table.sort_values(by, ascending=asc, kind="mergesort").reset_index(drop=True)


@dataclass
class FederatedResult:
    table: pd.DataFrame
    curves: pd.DataFrame
    ledger: pd.DataFrame


@dataclass
class FedTSAEState:
    """What a federated TSAE job hands to its aggregation units: the global TSAE, each client's
    minibatch generator state after stage A, the local k-means messages (stage B), the shared
    ledger table, the TSAE round curve and the pooled reconstruction MSE (evaluation)."""

    strategy: str
    ae_params: list[np.ndarray]
    gen_states: list[torch.Tensor]
    local: list[dict[str, Any]]
    ledger: pd.DataFrame
    ae_curve: list[float]
    ae_loss: float


def _fed_clients(x, centers, cfg, dataset, split, strategy, seed):
    k = int(cfg["datasets"][dataset]["k"])
    f = cfg["federated"]
    names = sorted(np.unique(centers).tolist(), key=str)
    parts = {str(c): x[centers == c] for c in names}

    def make_model(alpha: float = float(f["alpha"])) -> DECModel:
        return DECModel(make_tsae(cfg, x.shape[1]), k, alpha)

    clients = [
        DECClient(f"center_{c}", parts[c], make_model, device(),
                  derive_seed(seed, "dec", dataset, split, strategy, "shuffle", c), k=k,
                  min_cluster_size=int(f["min_cluster_size"]))
        for c in parts
    ]  # fmt: skip
    return clients, make_model


def fed_tsae_stage(
    x: np.ndarray, centers: np.ndarray, cfg: dict, dataset: str, split: str, strategy: str,
    seed: int, transport: Transport = INPROCESS,
) -> tuple[list[DECClient], FedTSAEState]:  # fmt: skip
    """Stages A (federated TSAE rounds) and B (local k-means messages) of one strategy, their
    messages carried by ``transport``."""
    x = check_features(x, f"results/data/{dataset}/features.parquet")
    f = cfg["federated"]
    k = int(cfg["datasets"][dataset]["k"])
    clients, make_model = _fed_clients(x, centers, cfg, dataset, split, strategy, seed)
    ledger = Ledger()  # TSAE rounds and local k-means: shared by the aggregations
    opt_name = PAIRING[strategy]
    tsae_seed = derive_seed(seed, "dec", dataset, "fed", split, strategy)
    torch.manual_seed(tsae_seed)
    init = make_model()
    hist = FederatedHistory()
    t0 = time.perf_counter()
    ae_cfg = {
        "stage": "ae",
        "optimizer": opt_name,
        "lr": dataset_setting(cfg, dataset, "autoencoder.lr", opt_name),
        "batch_size": int(dataset_setting(cfg, dataset, "federated.ae_batch_size")),
        "epochs": int(f["local_epochs"]),
        "loss": cfg["autoencoder"]["loss"],
        "beta": float(cfg["autoencoder"]["dice_bce_beta"]),
        "shuffle": bool(cfg["shuffle_batches"]),
    }
    torch.manual_seed(tsae_seed)
    ae_params = run_rounds(
        clients,
        make_strategy(strategy, f["server"]),
        get_parameters(init.tsae),
        int(dataset_setting(cfg, dataset, "federated.ae_rounds")),
        ae_cfg,
        ledger,
        hist.ae_loss,
        transport=transport,
    )
    set_parameters(init.tsae, ae_params)
    ae_loss = reconstruction_mse(init.tsae, torch.as_tensor(x))  # pooled evaluation only
    log.info("%s/%s %s: %d TSAE rounds in %.1fs, pooled MSE %.4g", dataset, split, strategy,
             len(hist.ae_loss), time.perf_counter() - t0, ae_loss)  # fmt: skip
    # Stage B: the centers' local k-means messages depend only on the TSAE, so they are
    # computed (and counted in the ledger) once per strategy and aggregated every way.
    local = local_centroid_messages(
        clients,
        ae_params,
        k,
        ledger,
        int(cfg["clustering"]["n_init"]),
        derive_seed(seed, "dec", dataset, split, strategy, "kmeans"),
        min_cluster_size=int(f["min_cluster_size"]),
        transport=transport,
    )
    state = FedTSAEState(strategy, ae_params, [c.gen.get_state() for c in clients], local,
                         ledger.table(), list(hist.ae_loss), ae_loss)  # fmt: skip
    return clients, state


def restore_clients(
    x: np.ndarray, centers: np.ndarray, cfg: dict, dataset: str, split: str, state: FedTSAEState,
    seed: int, skip_runs: int = 0,
) -> list[DECClient]:  # fmt: skip
    """The clients as they stand after :func:`fed_tsae_stage` (generator state, received TSAE)
    and after ``skip_runs`` DEC runs of earlier aggregations (their minibatch draws replayed)."""
    x = check_features(x, f"results/data/{dataset}/features.parquet")
    f = cfg["federated"]
    clients, _ = _fed_clients(x, centers, cfg, dataset, split, state.strategy, seed)
    draws = (
        skip_runs
        * int(dataset_setting(cfg, dataset, "federated.dec_rounds"))
        * int(f["local_epochs"])
    )
    for c, g in zip(clients, state.gen_states, strict=True):
        c.gen.set_state(g)
        c.tsae = [np.array(p, copy=True) for p in state.ae_params]
        skip_dec_draws(c.gen, len(c.x), draws, bool(cfg["shuffle_batches"]))
    return clients


def fed_dec_run(
    x: np.ndarray, y: np.ndarray | None, clients: list[DECClient], state: FedTSAEState,
    cfg: dict, dataset: str, split: str, method: str, seed: int, keep: dict | None = None,
    transport: Transport = INPROCESS,
) -> tuple[dict, list[dict], pd.DataFrame]:  # fmt: skip
    """Stage B aggregation + stage C (federated DEC rounds) of one (strategy, aggregation);
    evaluation on the pooled data. Returns the result row, its curve rows and its ledger."""
    f = cfg["federated"]
    k = int(cfg["datasets"][dataset]["k"])
    strategy = state.strategy
    opt_name = PAIRING[strategy]
    tsae_seed = derive_seed(seed, "dec", dataset, "fed", split, strategy)
    mu = aggregate_centroids(
        method,
        [m["centroids"] for m in state.local],
        [m["counts"] for m in state.local],
        k,
        rng(seed, "dec", dataset, split, strategy, method),
        int(cfg["clustering"]["n_init"]),
    )
    dec_ledger = Ledger()
    broadcast_centroids(clients, mu, dec_ledger)
    # the server's model: the federated TSAE's encoder + the global centroids
    model = clients[0].make_model()
    set_parameters(model.tsae, state.ae_params)
    with torch.no_grad():
        model.centroids.copy_(torch.as_tensor(mu))
    pre = predict(model, torch.as_tensor(x))
    dec_cfg = {
        "stage": "dec",
        "optimizer": opt_name,
        "lr": dataset_setting(cfg, dataset, "clustering.lr", opt_name),
        "batch_size": int(dataset_setting(cfg, dataset, "federated.dec_batch_size")),
        "epochs": int(f["local_epochs"]),
        "target_update": cfg["clustering"]["target_update"],
        "shuffle": bool(cfg["shuffle_batches"]),
    }
    dec_losses: list[float] = []
    torch.manual_seed(derive_seed(tsae_seed, method))
    params = run_rounds(
        clients,
        make_strategy(strategy, f["server"]),
        dec_parameters(model),
        int(dataset_setting(cfg, dataset, "federated.dec_rounds")),
        dec_cfg,
        dec_ledger,
        dec_losses,
        transport=transport,
    )
    set_dec_parameters(model, params)
    if keep is not None:
        keep[(strategy, method)] = {"ae": state.ae_params, "model": model}
    # Evaluation on the pooled data, not part of the protocol: it uses the decoder of
    # the federated TSAE stage (cycle accuracy, reconstruction) and every sample.
    metrics, pred = evaluate(model, x, y, cfg["evaluate"]["silhouette_max_points"])
    row = {
        "split": split,
        "strategy": strategy,
        "centroids": method,
        **metrics,
        "ae_loss": state.ae_loss,
        "changed_vs_init": float(np.mean(pred != pre)),
        "init_accuracy": external_scores(pre[reference_mask(y)], y[reference_mask(y)])["accuracy"]
        if y is not None
        else float("nan"),
    }
    curves = [{"strategy": strategy, "centroids": method, "stage": "dec", "round": i + 1,
               "loss": v} for i, v in enumerate(dec_losses)]  # fmt: skip
    return row, curves, dec_ledger.table().assign(strategy=strategy, centroids=method)


def ae_curve_rows(state: FedTSAEState) -> list[dict]:
    return [{"strategy": state.strategy, "centroids": "", "stage": "ae", "round": i + 1,
             "loss": v} for i, v in enumerate(state.ae_curve)]  # fmt: skip


def run_federated_unit(
    x: np.ndarray, y: np.ndarray | None, centers: np.ndarray, cfg: dict, dataset: str,
    split: str, seed: int, runs: list[tuple[str, str]],
    states: dict[str, FedTSAEState] | None = None, keep: dict | None = None,
    transport: Transport = INPROCESS,
) -> FederatedResult:  # fmt: skip
    """The (strategy, aggregation) runs ``runs`` (a contiguous block of the loop order) on one
    split. A strategy whose TSAE state is not in ``states`` trains it here; the unit that does
    (or that holds its first aggregation) carries its TSAE curve and shared ledger."""
    x = check_features(x, f"results/data/{dataset}/features.parquet")
    methods = list(cfg["federated"]["centroid_aggregation"])
    states = dict(states or {})
    rows, curves, ledgers = [], [], []
    for strategy in dict.fromkeys(r[0] for r in runs):
        mine = [m for s, m in runs if s == strategy]
        if strategy in states:
            state = states[strategy]
            clients = restore_clients(x, centers, cfg, dataset, split, state, seed,
                                      methods.index(mine[0]))  # fmt: skip
        else:
            clients, state = fed_tsae_stage(x, centers, cfg, dataset, split, strategy, seed,
                                            transport)  # fmt: skip
            if methods.index(mine[0]) > 0:  # replay the earlier aggregations' draws
                clients = restore_clients(x, centers, cfg, dataset, split, state, seed,
                                          methods.index(mine[0]))  # fmt: skip
        if mine[0] == methods[0]:
            curves += ae_curve_rows(state)
            ledgers.append(state.ledger.assign(strategy=strategy, centroids="shared"))
        for method in mine:
            row, curve, ledger = fed_dec_run(x, y, clients, state, cfg, dataset, split, method,
                                             seed, keep, transport)  # fmt: skip
            rows.append(row)
            curves += curve
            ledgers.append(ledger)
    return FederatedResult(pd.DataFrame(rows), pd.DataFrame(curves),
                           pd.concat(ledgers, ignore_index=True))  # fmt: skip


def run_federated(
    x: np.ndarray,
    y: np.ndarray | None,
    centers: np.ndarray,
    cfg: dict,
    dataset: str,
    split: str,
    seed: int,
    keep: dict | None = None,
    transport: Transport = INPROCESS,
) -> FederatedResult:
    """Every strategy × centroid aggregation on one split; evaluation on the pooled data.
    ``keep`` (optional): receives ``{"ae": TSAE parameters, "model": DEC model}`` under
    ``(strategy, centroid method)`` (the extra figures' Fig. 5.17)."""
    f = cfg["federated"]
    runs = [(s, m) for s in f["strategies"] for m in f["centroid_aggregation"]]
    res = run_federated_unit(x, y, centers, cfg, dataset, split, seed, runs, keep=keep,
                             transport=transport)  # fmt: skip
    res.table = sort_results(res.table, cfg["datasets"][dataset]["selection"])
    return res
