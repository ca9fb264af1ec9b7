"""DEC (seed 000) stages A–B under differential privacy: the federated TSAE by central
DP-FedAvg under secure aggregation, then every centre's local k-means centroids released with
the centre's own noise (:class:`DPKMeansClient`), aggregated by double k-means.

Budget: ε is split between the TSAE rounds (``1 − release_share``; T Gaussian releases of the
clipped-update sum, unit one centre) and the centroid release (``release_share``; two Gaussian
releases per centre: the per-cluster sums of embeddings clipped to ``bound``, Δ₂ = bound, and
the per-cluster counts, Δ₂ = 1). The accountant composes both for the ε each centre spent.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedclust.dec.federated import (
    AE_FIT,
    DECClient,
    aggregate_centroids,
    local_centroid_messages,
)
from fedclust.dec.model import DECModel, get_parameters, set_parameters
from fedclust.dec.optim import make_optimizer
from fedclust.dec.pipeline import make_tsae, reference_mask
from fedclust.dec.train import ae_epoch, embed, kmeans_centroids, shuffle_generator
from fedclust.federation import Abstain, FedAvg, Ledger, federate, run_rounds
from fedclust.federation import privacy as PV
from fedclust.federation.dp import Accountant, clip_rows
from fedclust.federation.dpsgd import DPSGD
from fedclust.metrics.assignment import hungarian_accuracy
from fedclust.seeds import derive_seed, rng

from .records import budget_rows, curve_row, epsilons, frames, noise_multiplier, settings_for


class DPKMeansClient(DECClient):
    """A DEC centre whose stage-B message is privatised at the centre (module docstring):
    embeddings clipped to ``bound``, local k-means, per cluster sum + N(0, (z·bound)²) and
    count + N(0, z²); centroid = noisy sum / max(noisy count, 1); the released counts rounded
    and kept in [m, n] (post-processing). ``noise`` 0: the stage's own message, unchanged."""

    def __init__(
        self, *args: Any, noise: float = 0.0, bound: float = 1.0, noise_seed: int = 0, **kw: Any
    ) -> None:
        super().__init__(*args, **kw)
        self.noise, self.bound = float(noise), float(bound)
        self._noise = np.random.default_rng(noise_seed)

    def kmeans(self, parameters, config: dict[str, Any]) -> dict[str, Any] | Abstain:
        if self.noise <= 0:
            return super().kmeans(parameters, config)
        self.tsae = list(parameters)
        z = clip_rows(embed(self._model("ae", parameters).tsae, self.x), self.bound)
        k, m = int(config["k"]), int(config.get("min_cluster_size", 1))
        if len(z) <= k:
            return Abstain(f"{len(z)} samples <= k={k}")
        _, lab = kmeans_centroids(z, k, "none", int(config["n_init"]), int(config["seed"]))
        counts = np.bincount(lab, minlength=k).astype(np.float64)
        if counts.min() < m:
            return Abstain(f"a local cluster has {int(counts.min())} < m={m} samples")
        sums = np.zeros((k, z.shape[1]))
        np.add.at(sums, lab, z)
        sums = sums + self._noise.normal(0.0, self.noise * self.bound, sums.shape)
        noisy = counts + self._noise.normal(0.0, self.noise, k)
        mu = sums / np.maximum(noisy, 1.0)[:, None]
        out = np.clip(np.rint(noisy), m, len(z)).astype(np.int64)
        return {"centroids": mu.astype(np.float32), "counts": out}


def _mse_rows(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return ((out - target) ** 2).mean(1)


class DPSGDClient(DPKMeansClient):
    """A DEC centre that trains its TSAE by DP-SGD (:class:`fedclust.federation.dpsgd.DPSGD`,
    record-level local DP; ``dpsgd`` None: the stage's training) — stage A of the ``local``
    arm. Its own accountant records every step."""

    def __init__(self, *args: Any, dpsgd: DPSGD | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.dpsgd = dpsgd

    def fit(self, parameters, config: dict[str, Any]):
        if self.dpsgd is None or config["stage"] != "ae":
            return super().fit(parameters, config)
        tsae = self._model("ae", parameters).tsae
        params = list(tsae.parameters())
        opt = make_optimizer(config["optimizer"], params, config["lr"])
        tsae.train()
        losses = [
            self.dpsgd.epoch(tsae, params, opt, self.x, self.x, _mse_rows, self.gen)
            for _ in range(int(config.get("epochs", 1)))
        ]
        return get_parameters(tsae), len(self.x), {"loss": float(np.mean(losses))}


def _logrank(t, e, groups) -> float:
    from lifelines.statistics import multivariate_logrank_test

    ok = np.isfinite(t) & np.isfinite(e)
    if len(set(np.asarray(groups)[ok].tolist())) < 2:
        return 0.0
    res = multivariate_logrank_test(t[ok], np.asarray(groups)[ok], e[ok].astype(bool))
    return float(res.test_statistic)


def _nearest(z: np.ndarray, mu: np.ndarray) -> np.ndarray:
    return np.argmin(((z[:, None, :] - mu[None]) ** 2).sum(-1), axis=1)


def _train_tsae(make_model, x: np.ndarray, epochs: int, cfg_fit: dict, seed: int) -> DECModel:
    """Centralized TSAE (the pooled / isolated baselines): ``epochs`` epochs of the centres'
    local training on ``x``."""
    torch.manual_seed(seed)
    model = make_model()
    opt = make_optimizer(cfg_fit["optimizer"], list(model.tsae.parameters()), cfg_fit["lr"])
    xt = torch.as_tensor(np.asarray(x, np.float32))
    gen = shuffle_generator(seed)
    for _ in range(epochs):
        ae_epoch(model.tsae, xt, opt, cfg_fit["batch_size"], cfg_fit["loss"], True, gen)
    return model


def run_dec(
    x: np.ndarray,
    centre: np.ndarray,
    labels: np.ndarray,
    obs: pd.DataFrame,
    dec_cfg: dict[str, Any],
    cfg: dict[str, Any],
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    m, delta = cfg["dec"], float(cfg["delta"])
    x = np.asarray(x, np.float32)
    k = int(dec_cfg["datasets"]["mds"]["k"])
    f = dec_cfg["federated"]
    rounds, share, bound = int(m["ae_rounds"]), float(m["release_share"]), float(m["bound"])
    n_init = int(m["n_init"])
    cfg_fit = {
        "stage": "ae",
        "optimizer": "adam",
        "lr": float(dec_cfg["autoencoder"]["lr"]["adam"]),
        "batch_size": int(f["ae_batch_size"]),
        "epochs": int(f["local_epochs"]),
        "loss": dec_cfg["autoencoder"]["loss"],
        "shuffle": True,
    }
    ok = reference_mask(labels)
    t = obs["OS_YEARS"].to_numpy(float)
    e = obs["OS_STATUS"].to_numpy(float)
    ids = sorted(set(centre.tolist()))
    min_size = int(f.get("min_cluster_size", 1))

    def make_model() -> DECModel:
        return DECModel(make_tsae(dec_cfg, x.shape[1]), k, float(f["alpha"]))

    def evaluate(model: DECModel, mu: np.ndarray) -> tuple[float, float]:
        lab = _nearest(embed(model.tsae, torch.as_tensor(x)), mu)  # evaluation on pooled rows
        return hungarian_accuracy(lab[ok], labels[ok]), _logrank(t, e, lab)

    curve, budget = [], []
    for s in range(int(cfg["seeds"])):
        sd = derive_seed(seed, "pu", "dec", s)
        for eps in epsilons(cfg["epsilons"]):
            for mech in m["mechanisms"] if not math.isinf(eps) else ["central"]:
                arm = "federated" if mech == "central" else "federated_local"
                eps_fit = math.inf if math.isinf(eps) else (1.0 - share) * eps
                z_rel = noise_multiplier(math.inf if math.isinf(eps) else share * eps, delta, 2)

                def dpsgd(n: int, eps_fit=eps_fit, mech=mech) -> DPSGD | None:
                    if mech != "local" or math.isinf(eps_fit):
                        return None
                    steps = rounds * cfg_fit["epochs"] * math.ceil(n / cfg_fit["batch_size"])
                    return DPSGD.calibrated(
                        eps_fit, delta, float(m["sgd_clip"]), cfg_fit["batch_size"], n, steps
                    )

                clients = [
                    DPSGDClient(
                        f"center_{c}",
                        x[centre == c],
                        make_model,
                        "cpu",
                        derive_seed(sd, "shuffle", c),
                        noise=z_rel,
                        bound=bound,
                        noise_seed=derive_seed(sd, "release", eps, mech, c),
                        dpsgd=dpsgd(int((centre == c).sum())),
                    )
                    for c in ids
                ]
                torch.manual_seed(sd)
                init = make_model()
                PV.budget_rows(reset=True)
                st = settings_for(eps_fit if mech == "central" else math.inf, cfg, sd, m["clip"])
                w0 = get_parameters(init.tsae)
                with PV.using(st):
                    params = federate(
                        clients,
                        lambda ps, w0=w0: run_rounds(
                            ps, FedAvg(), w0, rounds, cfg_fit, AE_FIT, label="dec tsae"
                        ),
                        ledger=Ledger(),
                    )
                spent = PV.budget_rows(reset=True)
                msgs = local_centroid_messages(
                    clients,
                    params,
                    k,
                    Ledger(),
                    n_init,
                    derive_seed(sd, "kmeans"),
                    min_cluster_size=min_size,
                )
                mu = aggregate_centroids(
                    "double_kmeans",
                    [q["centroids"] for q in msgs],
                    [q["counts"] for q in msgs],
                    k,
                    rng(sd, "aggregate", eps),
                    n_init,
                )
                set_parameters(init.tsae, params)
                acc, lr_stat = evaluate(init, np.asarray(mu, np.float64))
                curve.append(curve_row("dec", arm, eps, s, "accuracy", acc))
                curve.append(curve_row("dec", arm, eps, s, "logrank", lr_stat))
                if math.isinf(eps):
                    continue
                if mech == "central":
                    z_fit = spent[-1]["noise_multiplier"] if spent else 0.0
                    acc_ = Accountant().gaussian(z_fit, rounds).gaussian(z_rel, 2)
                    budget += budget_rows(
                        "dec",
                        eps,
                        s,
                        [c.cid for c in clients],
                        "central DP-FedAvg (TSAE) + centre's noisy centroids",
                        rounds + 2,
                        z_fit,
                        acc_.epsilon(delta),
                        delta,
                    )
                else:
                    for c in clients:
                        acc_ = Accountant().extend(c.dpsgd.accountant).gaussian(z_rel, 2)
                        budget += budget_rows(
                            "dec",
                            eps,
                            s,
                            [c.cid],
                            "local DP-SGD (TSAE) + centre's noisy centroids",
                            sum(ev[2] for ev in acc_.events),
                            c.dpsgd.noise_multiplier,
                            acc_.epsilon(delta),
                            delta,
                        )
        pooled = _train_tsae(make_model, x, rounds * cfg_fit["epochs"], cfg_fit, sd)
        mu, _ = kmeans_centroids(
            embed(pooled.tsae, torch.as_tensor(x)), k, "none", n_init, derive_seed(sd, "kmeans")
        )
        acc, lr_stat = evaluate(pooled, np.asarray(mu, np.float64))
        curve.append(curve_row("dec", "pooled", math.inf, s, "accuracy", acc))
        curve.append(curve_row("dec", "pooled", math.inf, s, "logrank", lr_stat))
        accs, w = [], []
        for c in ids:
            sel = centre == c
            if sel.sum() <= k:
                continue
            own = _train_tsae(make_model, x[sel], rounds * cfg_fit["epochs"], cfg_fit, sd)
            _, lab = kmeans_centroids(
                embed(own.tsae, torch.as_tensor(x[sel])),
                k,
                "none",
                n_init,
                derive_seed(sd, "kmeans"),
            )
            keep = ok[sel]
            if keep.sum():
                accs.append(hungarian_accuracy(lab[keep], labels[sel][keep]))
                w.append(keep.sum())
        curve.append(
            curve_row(
                "dec", "isolated", math.inf, s, "accuracy", float(np.dot(w, accs) / np.sum(w))
            )
        )
    return frames(curve, budget)
