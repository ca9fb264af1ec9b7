"""Federated TSAE + DEC (seed 000 §1.8–1.10) on the federation core.

Center side: :class:`DECClient` sees only its local array. Server side: the core's strategies
(:mod:`fedclust.federation.strategy`) and :func:`aggregate_centroids` see only messages. Every
message passes the ledger under one of the protocols below (:mod:`fedclust.federation.ledger`):

- ``dec_ae_fit`` / ``dec_fit``: the TSAE (stage A) or the encoder + centroids (stage C), the
  number of local samples and the local loss. In stage C the decoder biases never travel: DEC
  does not need a decoder, so the server does not hold one beyond the TSAE stage.
- ``dec_kmeans``: a center's k local centroids in feature space and their cluster sizes,
  every size ≥ ``m`` (``dec.federated.min_cluster_size``). A center with ≤ k samples, or whose
  local k-means has a cluster smaller than ``m``, abstains (the ledger records it): k-means with
  n ≤ k returns the samples' own embeddings, and a 1-sample cluster's centroid is that sample.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fedclust import federation as _core
from fedclust.errors import ConfigError
from fedclust.federation import (
    INPROCESS,
    Abstain,
    Ledger,
    Protocol,
    Transport,
    declares,
    federate,
    fit_protocol,
)

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
CENTROID_METHODS = (
    "max_min", "random", "random_weighted", "random_weighted_dup", "double_kmeans"
)  # fmt: skip
STRATEGIES = ("fedavg", "fedadam", "fedyogi")
DECODER_PREFIX = "tsae.dec_bias"
AE_FIT = fit_protocol("dec_ae_fit")
DEC_FIT = fit_protocol("dec_fit")
KMEANS_REQUEST = Protocol(
    "dec_kmeans_request",
    {"parameters": "parameters", "k": "metadata", "n_init": "metadata", "seed": "metadata",
     "scaler": "metadata", "min_cluster_size": "metadata"},
)  # fmt: skip
CENTROID_BROADCAST = Protocol("dec_global_centroids", {"centroids": "aggregate"})


@declares((1,))
def kmeans_protocol(min_cluster_size: int) -> Protocol:
    """A center's local centroids: aggregates, each over ≥ ``min_cluster_size`` samples."""
    return Protocol(
        "dec_kmeans", {"centroids": "aggregate", "counts": "count"}, min_samples=min_cluster_size
    )


def dec_parameters(model: DECModel) -> NDArrays:
    """What stage C shares: encoder weights and biases and the centroids (no decoder)."""
    return [v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()
            if not k.startswith(DECODER_PREFIX)]  # fmt: skip


def set_dec_parameters(model: DECModel, parameters: Sequence[np.ndarray]) -> None:
    keys = [k for k in model.state_dict() if not k.startswith(DECODER_PREFIX)]
    if len(keys) != len(parameters):
        raise ValueError(f"expected {len(keys)} encoder/centroid arrays, got {len(parameters)}")
    model.load_state_dict(
        {k: torch.as_tensor(np.asarray(p)) for k, p in zip(keys, parameters, strict=True)},
        strict=False,
    )


# ---------------------------------------------------------------- center side
class TooFewCentroids(ConfigError):
    """Fewer local centroids than k reached the server: the centres whose clusters are below
    their own floor abstained (a privacy outcome at small sizes, not a crash to hide)."""


class DECClient:
    """One center. ``fit`` mirrors Flower's ``NumPyClient.fit(parameters, config)``.

    A fresh model and a fresh local optimizer are built every round (as the thesis' Flower clients
    were re-created each round), so no optimizer state survives between rounds. With
    ``config["shuffle"]`` the minibatch order is redrawn every local epoch from the client's own
    generator (seeded by ``seed``), which lives across rounds. The decoder biases of the last
    TSAE the center received stay here; stage C neither needs nor sends them.
    """

    def __init__(
        self,
        cid: str,
        x: np.ndarray,
        make_model: Callable[[], DECModel],
        device: torch.device | str = "cpu",
        seed: int = 0,
        k: int | None = None,
        min_cluster_size: int = 1,
        disclosure: Any = None,
    ) -> None:
        self.cid = cid
        self.device = torch.device(device)
        self.x = torch.as_tensor(np.asarray(x, dtype=np.float32), device=self.device)
        self.make_model = make_model
        self.gen = shuffle_generator(seed)
        self.tsae: NDArrays | None = None  # the final global TSAE (with the decoder biases)
        # stage B's settings are the centre's own (issue 22): its k (the study's number of
        # clusters, None: any) and its cluster floor m; a request beyond them is refused
        self.k_own, self.m_own = k, int(min_cluster_size)
        if disclosure is not None:
            self.disclosure = disclosure

    @property
    def n_samples(self) -> int:
        return len(self.x)

    def cluster_floor(self) -> int:
        """The centre's m: its ``min_cluster_size`` raised to its ``nfilter_subset``."""
        from fedclust.federation.guard import centre_policy

        return max(self.m_own, int(centre_policy(self).nfilter_subset))

    def _model(self, stage: str, parameters: NDArrays) -> DECModel:
        model = self.make_model().to(self.device)
        if stage == "ae":
            set_parameters(model.tsae, parameters)
        else:
            if self.tsae is not None:
                set_parameters(model.tsae, self.tsae)
            set_dec_parameters(model, parameters)
        return model

    def fit(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[NDArrays, int, dict]:
        """``config``: stage (ae|dec), optimizer, lr, batch_size, epochs, loss, target_update,
        shuffle. Stage ae trains and returns the TSAE; stage dec the encoder + centroids."""
        stage = config["stage"]
        model = self._model(stage, parameters)
        target = model.tsae if stage == "ae" else model
        params = [p for n, p in target.named_parameters() if not n.startswith(DECODER_PREFIX)]
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
                        float(config.get("beta", 0.5)),
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
        out = get_parameters(model.tsae) if stage == "ae" else dec_parameters(model)
        return out, len(self.x), {"loss": float(np.mean(losses))}

    def kmeans(self, parameters: NDArrays, config: dict[str, Any]) -> dict[str, Any] | Abstain:
        """Local k-means in feature space: k centroids and their cluster sizes (one message).

        Abstains (sends nothing) with ≤ k samples — k-means with k ≥ n returns the samples
        themselves, and with n = k + 1 all but one centroid are single samples — or when a local
        cluster has fewer than m samples. ``config``: k, n_init, seed, scaler,
        min_cluster_size. k and m are the centre's own (issue 22): a request for more clusters
        than the centre's k, or for a lower floor than its m (its ``min_cluster_size`` raised to
        its ``nfilter_subset``), is refused — a server asking k = n − 1, m = 1 would otherwise
        receive single-patient embeddings, and it holds the decoder. Skewed splits of large data
        sets have such centers in the histogram's tail (seed 000 §2.4). It still trains every
        round. Reasons carry no counts.
        """
        k = int(config["k"])
        m = self.cluster_floor()
        if self.k_own is not None and k > int(self.k_own):
            return self._abstain("refused: the requested k exceeds the centre's own")
        if "min_cluster_size" in config and int(config["min_cluster_size"]) < m:
            return self._abstain("refused: the requested cluster floor is below the centre's own")
        m = max(m, int(config.get("min_cluster_size", 1)))
        self.tsae = list(parameters)
        model = self._model("ae", parameters)
        z = embed(model.tsae, self.x)
        if len(z) <= k:
            return self._abstain("no more samples than clusters")
        mu, labels = kmeans_centroids(
            z, k, config.get("scaler", "none"), int(config["n_init"]), int(config["seed"])
        )
        counts = np.bincount(labels, minlength=k).astype(np.int64)
        if counts.min() < m:
            return self._abstain("a local cluster is below the centre's floor m")
        return {"centroids": mu, "counts": counts}

    def _abstain(self, reason: str) -> Abstain:
        log.warning("center %s abstains from the centroid round: %s", self.cid, reason)
        return Abstain(reason)


# ---------------------------------------------------------------- server side
# The strategies live once in the federation core (fedclust.federation.strategy).
def make_strategy(name: str, server: dict[str, float]) -> _core.Strategy:
    """``fedavg`` | ``fedadam`` | ``fedyogi`` (seed 000 §1.8) from the core."""
    if name not in STRATEGIES:
        raise ConfigError(
            f"unknown strategy {name!r}", where="dec.federated", fix=f"one of {STRATEGIES}"
        )
    return _core.make_strategy(name, server)


def _max_min(
    allc: np.ndarray, alln: np.ndarray, k: int, rng: np.random.Generator, n_init: int
) -> np.ndarray:
    chosen = [int(rng.integers(len(allc)))]
    dmin = np.linalg.norm(allc - allc[chosen[0]], axis=1)
    while len(chosen) < k:
        nxt = int(np.argmax(dmin))
        chosen.append(nxt)
        dmin = np.minimum(dmin, np.linalg.norm(allc - allc[nxt], axis=1))
    return allc[chosen]


def _random(
    allc: np.ndarray, alln: np.ndarray, k: int, rng: np.random.Generator, n_init: int
) -> np.ndarray:
    return allc[rng.permutation(len(allc))[:k]]


def _random_weighted(
    allc: np.ndarray, alln: np.ndarray, k: int, rng: np.random.Generator, n_init: int
) -> np.ndarray:
    if np.count_nonzero(alln) < k:
        raise ConfigError("fewer than k non-empty clusters", where="dec random_weighted")
    return allc[rng.choice(len(allc), size=k, replace=False, p=alln / alln.sum())]


def _random_weighted_dup(
    allc: np.ndarray, alln: np.ndarray, k: int, rng: np.random.Generator, n_init: int
) -> np.ndarray:
    """The thesis code: every centroid repeated by its cluster size; duplicates possible."""
    expanded = np.repeat(np.arange(len(allc)), alln.astype(np.int64))
    return allc[expanded[rng.permutation(len(expanded))[:k]]]


def _double_kmeans(
    allc: np.ndarray, alln: np.ndarray, k: int, rng: np.random.Generator, n_init: int
) -> np.ndarray:
    from sklearn.cluster import KMeans  # here: a deployed centre answers without sklearn

    seed = int(rng.integers(2**31 - 1))
    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(allc, sample_weight=alln)
    return km.cluster_centers_


#: centroid aggregation -> (all centroids, their sizes, k, rng, n_init) -> k centroids
_CENTROID_AGGREGATIONS = {
    "max_min": _max_min,
    "random": _random,
    "random_weighted": _random_weighted,
    "random_weighted_dup": _random_weighted_dup,
    "double_kmeans": _double_kmeans,
}


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
    random_weighted: k distinct ones drawn with probability ∝ cluster size.
    random_weighted_dup: the thesis code's draw: every centroid repeated by its cluster size,
    shuffled, the first k taken, so one centroid can be drawn twice. double_kmeans:
    k-means of all centroids weighted by their cluster sizes.
    """
    n_all = sum(len(c) for c in centroids)
    if n_all < k:
        raise TooFewCentroids(
            f"only {n_all} centroids for k={k} (centers that abstain send none)",
            where="dec centroid aggregation",
            fix="fewer centers, a less skewed split or a smaller dec.federated.min_cluster_size",
        )
    if method not in _CENTROID_AGGREGATIONS:
        raise ConfigError(
            f"unknown centroid aggregation {method!r}",
            where="dec.federated.centroid_aggregation",
            fix=f"one of {CENTROID_METHODS}",
        )
    allc = np.concatenate([np.asarray(c, dtype=np.float64) for c in centroids])
    alln = np.concatenate([np.asarray(n, dtype=np.float64) for n in counts])
    out = _CENTROID_AGGREGATIONS[method](allc, alln, k, rng, n_init)
    return out.astype(np.float32)


# ---------------------------------------------------------------- simulation driver
@dataclass
class FederatedHistory:
    ae_loss: list[float] = field(default_factory=list)
    dec_loss: list[float] = field(default_factory=list)
    round_seconds: list[float] = field(default_factory=list)


def run_rounds(
    clients: Sequence[DECClient],
    strategy: _core.Strategy,
    parameters: NDArrays,
    rounds: int,
    fit_config: dict[str, Any],
    ledger: Ledger,
    losses: list[float],
    on_round: Callable[[int, NDArrays], None] | None = None,
    label: str = "",
    transport: Transport = INPROCESS,
) -> NDArrays:
    """``rounds`` federated rounds of the core loop (broadcast, local fit, ledger,
    ``aggregate_fit``) over ``transport``. Stage ae shares the TSAE, stage dec
    :func:`dec_parameters`."""
    stage = fit_config["stage"]
    hist = _core.History()

    def server(ps: list) -> NDArrays:
        return _core.run_rounds(
            ps, strategy, parameters, rounds, fit_config, AE_FIT if stage == "ae" else DEC_FIT,
            kind=stage, label=label or f"dec {stage}", on_round=on_round, history=hist,
        )  # fmt: skip

    out = federate(clients, server, ledger=ledger, transport=transport)
    losses.extend(hist.loss)
    return out


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
    min_cluster_size: int = 1,
    transport: Transport = INPROCESS,
) -> np.ndarray:
    """Stage B: local k-means at every center, aggregation on the server, broadcast."""
    msgs = local_centroid_messages(
        clients, ae_parameters, k, ledger, n_init, seed, scaler, min_cluster_size,
        transport=transport,
    )  # fmt: skip
    mu = aggregate_centroids(
        method, [m["centroids"] for m in msgs], [m["counts"] for m in msgs], k, rng, n_init
    )
    broadcast_centroids(clients, mu, ledger)
    return mu


def broadcast_centroids(clients: Sequence[DECClient], mu: np.ndarray, ledger: Ledger) -> None:
    for c in clients:
        ledger.send("server", c.cid, {"centroids": mu}, 0, "global_centroids",
                    protocol=CENTROID_BROADCAST, downlink=True)  # fmt: skip


def local_centroid_messages(
    clients: Sequence[DECClient],
    ae_parameters: NDArrays,
    k: int,
    ledger: Ledger,
    n_init: int = 20,
    seed: int = 0,
    scaler: str = "none",
    min_cluster_size: int = 1,
    transport: Transport = INPROCESS,
) -> list[dict[str, Any]]:
    """The (k centroids, k cluster sizes) message of every center that does not abstain."""
    request = {"parameters": ae_parameters, "k": int(k), "n_init": int(n_init),
               "seed": int(seed), "scaler": scaler}  # fmt: skip
    proto = kmeans_protocol(int(min_cluster_size))

    def server(ps: list) -> list[dict[str, Any]]:
        msgs = _core.call_all(ps, "kmeans", {**request, "min_cluster_size": int(min_cluster_size)},
                              0, "kmeans_centroids", proto, KMEANS_REQUEST)  # fmt: skip
        return [m for m in msgs if m is not None]

    return federate(clients, server, ledger=ledger, transport=transport)


def ae_loss_pooled(model: DECModel, x: np.ndarray) -> float:
    """Evaluation only (pooled data; not part of the protocol)."""
    return reconstruction_mse(model.tsae, torch.as_tensor(x))
