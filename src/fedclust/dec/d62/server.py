"""The server of D6.2 ch. 7's federated DEC (seed 003 §6.4): sees only messages.

1. one count aggregation: p1 = Σ ones / Σ n per column, broadcast (the random-flip layer's
   frequencies);
2. stage A: FedAvg of the tied autoencoder (weights n_k / N), ``ae_rounds`` rounds of
   ``local_epochs`` epochs;
3. stage B: every centre's local k-means centroids (25 seeds, 300 iterations) → the max–min
   (farthest-first) aggregation of the DEC stage → k global centroids;
4. stage C: FedAvg of the encoder + centroids; every ``update_interval`` epochs the centres
   recompute their target distribution P from the global model (D6.2: 10 000 epochs, P every
   100 epochs, SGD lr 0.1).

:class:`MetricsFedAvg` is the core's FedAvg with Flower's ``fit_metrics_aggregation`` place
filled: it keeps the n-weighted mean of every metric of each round (training loss, held-out
loss, changed fraction), from which the G metric (train / evaluation loss) is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fedclust.dec.federated import KMEANS_REQUEST, aggregate_centroids, dec_parameters
from fedclust.dec.model import set_parameters
from fedclust.federation import FedAvg, run_rounds

from . import protocols as P


@dataclass
class MetricsFedAvg(FedAvg):
    """FedAvg (weights n_k / N) that records the n-weighted mean of each metric per round."""

    rounds: list[dict[str, float]] = field(default_factory=list)

    def aggregate_fit(self, server_round: int, results, current=None):
        tot = sum(r[1] for r in results)
        keys = sorted(set.intersection(*(set(r[2]) for r in results))) if results else []
        self.rounds.append(
            {k: float(sum(float(r[2][k]) * r[1] for r in results) / tot) for k in keys}
            | {"round": server_round, "participants": len(results)}
        )
        return super().aggregate_fit(server_round, results, current)


@dataclass
class RefreshFedAvg(MetricsFedAvg):
    """Stage C: asks the centres to recompute P from the global model every ``update_every``
    rounds (the first round included)."""

    update_every: int = 1

    def configure_fit(self, server_round, parameters, clients, config):
        refresh = (server_round - 1) % max(int(self.update_every), 1) == 0
        return super().configure_fit(server_round, parameters, clients,
                                     {**config, "refresh": refresh})  # fmt: skip


def flip_frequencies(proxies: Sequence, min_samples: int) -> np.ndarray:
    """Step 1: every centre's column counts of ones → p1, broadcast to every centre."""
    proto = P.column_ones(min_samples)
    msgs = [p.call("column_ones", {"columns": "all"}, 0, "column_ones", proto,
                   P.COLUMN_ONES_REQUEST) for p in proxies]  # fmt: skip
    msgs = [m for m in msgs if m is not None]
    if not msgs:
        raise RuntimeError("every centre abstained from the column count")
    p1 = np.sum([m["ones"] for m in msgs], axis=0) / sum(m["n"] for m in msgs)
    for p in proxies:
        p.call("flip_rates", {"p1": p1}, 0, "flip_rates", P.RECEIVED, P.FLIP_RATES)
    return p1.ravel()


@dataclass
class Plan:
    """One unit's schedule (from ``dec.d62`` and the unit's Table 7.1 configuration)."""

    k: int
    ae_rounds: int
    dec_rounds: int
    local_epochs: int
    update_every: int  # rounds between refreshes of P
    ae: dict[str, Any]  # fit config of stage A
    dec: dict[str, Any]  # fit config of stage C (without refresh)
    n_init: int = 25
    seed: int = 0
    min_samples: int = P.MIN_SAMPLES
    min_cluster_size: int = P.MIN_SAMPLES


@dataclass
class Trained:
    ae_params: list[np.ndarray]
    dec_params: list[np.ndarray]
    centroids0: np.ndarray
    p1: np.ndarray
    ae_rounds: list[dict[str, float]]
    dec_rounds: list[dict[str, float]]
    kmeans_senders: int


def server(proxies: list, plan: Plan, init_ae: list[np.ndarray], make_model, rng) -> Trained:
    """Steps 1–4 over the proxies (the core's :func:`fedclust.federation.federate` hands them
    in); ``make_model`` builds the server's copy to carry the encoder and centroids."""
    p1 = flip_frequencies(proxies, plan.min_samples)
    fit = P.fit(plan.min_samples)
    ae = MetricsFedAvg()
    ae_params = run_rounds(proxies, ae, init_ae, plan.ae_rounds, plan.ae, fit, kind="ae",
                           label=f"d62 ae k={plan.k}")  # fmt: skip
    request = {"parameters": ae_params, "k": plan.k, "n_init": plan.n_init, "seed": plan.seed,
               "scaler": "none", "min_cluster_size": plan.min_cluster_size}  # fmt: skip
    kproto = P.declared(plan.min_samples, plan.min_cluster_size)["kmeans"]
    local = [p.call("kmeans", request, 0, "kmeans_centroids", kproto, KMEANS_REQUEST)
             for p in proxies]  # fmt: skip
    local = [m for m in local if m is not None]
    mu = aggregate_centroids(
        "max_min", [m["centroids"] for m in local], [m["counts"] for m in local], plan.k, rng,
        plan.n_init,
    )  # fmt: skip
    model = make_model()
    set_parameters(model.tsae, ae_params)
    with torch.no_grad():
        model.centroids.copy_(torch.as_tensor(mu))
    params = dec_parameters(model)
    dec = RefreshFedAvg(update_every=plan.update_every)
    params = run_rounds(proxies, dec, params, plan.dec_rounds, plan.dec, fit, kind="dec",
                        label=f"d62 dec k={plan.k}")  # fmt: skip
    return Trained(ae_params, params, mu, p1, ae.rounds, dec.rounds, len(local))
