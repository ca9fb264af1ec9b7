"""Federated TSAE + DEC (seed 000 §1.8–1.10): Flower-shaped clients and strategies, simulated
in-process. Center-side code sees only its local array; server-side code sees only messages, and
every message passes :class:`fedclust.ledger.Ledger`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from sklearn.cluster import KMeans

from fedclust.errors import ConfigError
from fedclust.ledger import Ledger

from .model import DECModel, get_parameters, set_parameters
from .optim import make_optimizer
from .train import (
    ae_epoch,
    dec_epoch,
    embed,
    kmeans_centroids,
    reconstruction_mse,
    shuffle_generator,
)

NDArrays = list[np.ndarray]
log = logging.getLogger(__name__)
CENTROID_METHODS = ("max_min", "random", "random_weighted", "double_kmeans")
STRATEGIES = ("fedavg", "fedadam", "fedyogi")


# ---------------------------------------------------------------- center side
class DECClient:
    """One center. ``fit`` mirrors Flower's ``NumPyClient.fit(parameters, config)``.

    A fresh model and a fresh local optimizer are built every round (as the thesis' Flower clients
    were re-created each round), so no optimizer state survives between rounds. With
    ``config["shuffle"]`` the minibatch order is redrawn every local epoch from the client's own
    generator (seeded by ``seed``), which lives across rounds.
    """

    def __init__(
        self,
        cid: str,
        x: np.ndarray,
        make_model: Callable[[], DECModel],
        device: torch.device | str = "cpu",
        seed: int = 0,
    ) -> None:
        self.cid = cid
        self.device = torch.device(device)
        self.x = torch.as_tensor(np.asarray(x, dtype=np.float32), device=self.device)
        self.make_model = make_model
        self.gen = shuffle_generator(seed)

    def _model(self, stage: str, parameters: NDArrays) -> DECModel:
        model = self.make_model().to(self.device)
        target = model.tsae if stage == "ae" else model
        set_parameters(target, parameters)
        return model

    def fit(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[NDArrays, int, dict]:
        """``config``: stage (ae|dec), optimizer, lr, batch_size, epochs, loss, target_update,
        shuffle."""
        stage = config["stage"]
        model = self._model(stage, parameters)
        target = model.tsae if stage == "ae" else model
        params = [p for n, p in target.named_parameters() if not n.startswith("tsae.dec_bias")]
        opt = make_optimizer(config["optimizer"], params, config["lr"])
        losses = []
        shuffle = bool(config.get("shuffle", False))
        for _ in range(int(config.get("epochs", 1))):
            if stage == "ae":
                losses.append(
                    ae_epoch(
                        model.tsae,
                        self.x,
                        opt,
                        config["batch_size"],
                        config.get("loss", "mse"),
                        shuffle,
                        self.gen,
                    )
                )
            else:
                losses.append(
                    dec_epoch(
                        model,
                        self.x,
                        opt,
                        config["batch_size"],
                        config.get("target_update", "batch"),
                        shuffle,
                        self.gen,
                    )
                )
        return get_parameters(target), len(self.x), {"loss": float(np.mean(losses))}

    def kmeans(self, parameters: NDArrays, config: dict[str, Any]) -> dict[str, Any]:
        """Local k-means in feature space: k centroids and their cluster sizes (one message).

        A center with fewer than k samples abstains: it sends 0 centroids (k-means with k ≥ n
        would return its samples themselves, i.e. raw data). Skewed splits of large data sets
        have such centers in the histogram's tail (seed 000 §2.4). It still trains every round.
        """
        model = self._model("ae", parameters)
        z = embed(model.tsae, self.x)
        k = int(config["k"])
        if len(z) < k:
            log.warning(
                "center %s has %d samples, fewer than k=%d: it sends no centroids",
                self.cid, len(z), k,
            )  # fmt: skip
            return {
                "centroids": np.zeros((0, z.shape[1]), dtype=np.float32),
                "counts": np.zeros(0, dtype=np.int64),
            }
        mu, labels = kmeans_centroids(
            z, k, config.get("scaler", "none"), config["n_init"], config["seed"]
        )
        return {"centroids": mu, "counts": np.bincount(labels, minlength=k).astype(np.int64)}


# ---------------------------------------------------------------- server side
def weighted_average(results: Sequence[tuple[NDArrays, int]]) -> NDArrays:
    """FedAvg aggregate: Σ_k (n_k / n) w_k (Algorithm 1)."""
    total = sum(n for _, n in results)
    if total <= 0:
        raise ValueError("FedAvg needs at least one example")
    return [
        sum(w[i].astype(np.float64) * (n / total) for w, n in results).astype(
            results[0][0][i].dtype
        )
        for i in range(len(results[0][0]))
    ]


class FedAvg:
    """``aggregate_fit(server_round, results, current) -> parameters`` (Flower-shaped)."""

    def aggregate_fit(
        self, server_round: int, results: Sequence[tuple[NDArrays, int]], current: NDArrays
    ) -> NDArrays:
        return weighted_average(results)


@dataclass
class FedOpt(FedAvg):
    """FedAdam / FedYogi server step (Reddi et al.; Flower semantics, seed 000 §1.8).

    Δ = FedAvg(results) − current; m = β1 m + (1−β1) Δ; v as Adam or Yogi (zero-initialised,
    no bias correction); x ← x + η m / (√v + τ).
    """

    kind: str = "adam"
    eta: float = 0.01
    beta_1: float = 0.9
    beta_2: float = 0.999
    tau: float = 1e-3
    m: NDArrays | None = field(default=None, repr=False)
    v: NDArrays | None = field(default=None, repr=False)

    def aggregate_fit(
        self, server_round: int, results: Sequence[tuple[NDArrays, int]], current: NDArrays
    ) -> NDArrays:
        avg = weighted_average(results)
        delta = [
            a.astype(np.float64) - c.astype(np.float64) for a, c in zip(avg, current, strict=False)
        ]
        if self.m is None:
            self.m = [np.zeros_like(d) for d in delta]
            self.v = [np.zeros_like(d) for d in delta]
        self.m = [
            self.beta_1 * m + (1 - self.beta_1) * d for m, d in zip(self.m, delta, strict=False)
        ]
        if self.kind == "adam":
            self.v = [
                self.beta_2 * v + (1 - self.beta_2) * d * d
                for v, d in zip(self.v, delta, strict=False)
            ]
        else:
            self.v = [
                v - (1 - self.beta_2) * d * d * np.sign(v - d * d)
                for v, d in zip(self.v, delta, strict=False)
            ]
        return [
            (c + self.eta * m / (np.sqrt(v) + self.tau)).astype(c.dtype)
            for c, m, v in zip(current, self.m, self.v, strict=False)
        ]


def make_strategy(name: str, server: dict[str, float]) -> FedAvg:
    if name == "fedavg":
        return FedAvg()
    if name in ("fedadam", "fedyogi"):
        return FedOpt(
            kind=name[3:],
            eta=server["eta"],
            beta_1=server["beta_1"],
            beta_2=server["beta_2"],
            tau=server["tau"],
        )
    raise ConfigError(
        f"unknown strategy {name!r}", where="dec.federated", fix=f"one of {STRATEGIES}"
    )


def aggregate_centroids(
    method: str,
    centroids: Sequence[np.ndarray],
    counts: Sequence[np.ndarray],
    k: int,
    rng: np.random.Generator,
    n_init: int = 20,
) -> np.ndarray:
    """Server-side aggregation of the centers' k-means centroids (seed 000 §1.9).

    max_min: start from one centroid drawn uniformly among all N·k, then repeatedly add the
    candidate farthest (Euclidean) from the chosen set. random: k of the shuffled N·k.
    random_weighted: k distinct ones drawn with probability ∝ cluster size. double_kmeans:
    k-means of all centroids weighted by their cluster sizes.
    """
    allc = np.concatenate([np.asarray(c, dtype=np.float64) for c in centroids])
    alln = np.concatenate([np.asarray(n, dtype=np.float64) for n in counts])
    if len(allc) < k:
        raise ConfigError(
            f"only {len(allc)} centroids for k={k} (centers with fewer than k samples send none)",
            where="dec centroid aggregation",
            fix="use fewer centers or a less skewed split",
        )
    if method == "max_min":
        chosen = [int(rng.integers(len(allc)))]
        dmin = np.linalg.norm(allc - allc[chosen[0]], axis=1)
        while len(chosen) < k:
            nxt = int(np.argmax(dmin))
            chosen.append(nxt)
            dmin = np.minimum(dmin, np.linalg.norm(allc - allc[nxt], axis=1))
        out = allc[chosen]
    elif method == "random":
        out = allc[rng.permutation(len(allc))[:k]]
    elif method == "random_weighted":
        if np.count_nonzero(alln) < k:
            raise ConfigError("fewer than k non-empty clusters", where="dec random_weighted")
        out = allc[rng.choice(len(allc), size=k, replace=False, p=alln / alln.sum())]
    elif method == "double_kmeans":
        seed = int(rng.integers(2**31 - 1))
        km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(allc, sample_weight=alln)
        out = km.cluster_centers_
    else:
        raise ConfigError(
            f"unknown centroid aggregation {method!r}",
            where="dec.federated.centroid_aggregation",
            fix=f"one of {CENTROID_METHODS}",
        )
    return out.astype(np.float32)


# ---------------------------------------------------------------- simulation driver
@dataclass
class FederatedHistory:
    ae_loss: list[float] = field(default_factory=list)
    dec_loss: list[float] = field(default_factory=list)
    round_seconds: list[float] = field(default_factory=list)


def run_rounds(
    clients: Sequence[DECClient],
    strategy: FedAvg,
    parameters: NDArrays,
    rounds: int,
    fit_config: dict[str, Any],
    ledger: Ledger,
    losses: list[float],
    on_round: Callable[[int, NDArrays], None] | None = None,
) -> NDArrays:
    """``rounds`` federated rounds: broadcast, local fit, ledger, ``aggregate_fit``."""
    stage = fit_config["stage"]
    for rnd in range(1, rounds + 1):
        results = []
        round_losses = []
        for c in clients:
            sent = ledger.send("server", c.cid, {"parameters": parameters}, rnd, f"{stage}_global")
            params, n, metrics = c.fit(sent["parameters"], fit_config)
            msg = ledger.send(
                c.cid,
                "server",
                {"parameters": params, "n": n, "loss": metrics["loss"]},
                rnd,
                f"{stage}_update",
            )
            results.append((msg["parameters"], msg["n"]))
            round_losses.append((msg["loss"], msg["n"]))
        parameters = strategy.aggregate_fit(rnd, results, parameters)
        tot = sum(n for _, n in round_losses)
        losses.append(float(sum(loss * n for loss, n in round_losses) / tot))
        if on_round is not None:
            on_round(rnd, parameters)
    return parameters


def federated_centroids(
    clients: Sequence[DECClient],
    ae_parameters: NDArrays,
    method: str,
    k: int,
    rng: np.random.Generator,
    ledger: Ledger,
    n_init: int = 20,
    seed: int = 0,
    scaler: str = "none",
) -> np.ndarray:
    """Stage B: local k-means at every center, aggregation on the server, broadcast."""
    msgs = local_centroid_messages(clients, ae_parameters, k, ledger, n_init, seed, scaler)
    mu = aggregate_centroids(
        method, [m["centroids"] for m in msgs], [m["counts"] for m in msgs], k, rng, n_init
    )
    for c in clients:
        ledger.send("server", c.cid, {"centroids": mu}, 0, "global_centroids")
    return mu


def local_centroid_messages(
    clients: Sequence[DECClient],
    ae_parameters: NDArrays,
    k: int,
    ledger: Ledger,
    n_init: int = 20,
    seed: int = 0,
    scaler: str = "none",
) -> list[dict[str, Any]]:
    """Every center's (k centroids, k cluster sizes) message, through the ledger."""
    out = []
    for c in clients:
        msg = ledger.send(
            c.cid,
            "server",
            c.kmeans(ae_parameters, {"k": k, "n_init": n_init, "seed": seed, "scaler": scaler}),
            0,
            "kmeans_centroids",
        )
        out.append(msg)
    return out


def ae_loss_pooled(model: DECModel, x: np.ndarray) -> float:
    return reconstruction_mse(model.tsae, torch.as_tensor(x))
