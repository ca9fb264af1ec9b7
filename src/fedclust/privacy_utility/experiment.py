"""One unit of the privacy–utility stage: one federated method over ε × seeds (issue 24).

Every method runs on the default data of its stage, under secure aggregation wherever its
server step is a sum, with the budget ε (``None`` / ∞: no noise, no clipping — the method as
its stage runs it) spent over the whole run: the noise multiplier z is calibrated by the
accountant (:func:`fedclust.federation.dp.calibrate_gaussian`) for all the run's releases.
Each returns ``(curve, budget)``: the headline metric per (arm, ε, seed) — arm ``federated``
(private), ``pooled`` and ``isolated`` (non-private baselines, once per seed) — and the ε each
centre spent.

Methods (headline metric):

- ``dp_lloyd`` — federated DP-Lloyd k-means on the MDS features over the ``uniform10`` centres
  (FMI with the reference labels);
- ``hac`` — simultaneous sharing (seed 001) with privatised centroids: the centring mean by
  secure sum + central noise, each centre's cut-cluster sums and counts with its own noise; FMI
  with the simulated subtypes at k clusters;
- ``km`` — Kaplan–Meier from the secure sum of per-interval count tables + noise (sup distance
  to the pooled lifelines curve, lower is better);
- ``survival`` — D6.2's Weights Averaging (DeepCox) with central DP-FedAvg (blind-test C-index);
- ``heart`` — seed 004's FL (weighted FedAvg of the Keras-shaped MLP) with central DP-FedAvg
  (test AUC over the hospitals' test sets);
- ``dec`` — seed 000's federated TSAE with central DP-FedAvg, then each centre's k-means
  centroids released with its own noise and aggregated by double k-means (Hungarian accuracy;
  the KM log-rank statistic of OS between the clusters beside it); stages A–B (the DEC
  refinement of stage C is not run here);
- ``known_io`` — the seed-001 known input–output attack on orthogonal perturbation, each row
  released with Gaussian noise (its own ε): the attack's median relative reconstruction error
  and breach rate (error ≤ 0.2) over ε;
- ``admm`` — consensus ADMM (seed 003 ch. 3) with each centre's iterate clipped and noised at
  the centre, summed under secure aggregation (:mod:`.admm`): the relative objective gap to
  the pooled optimum (lower is better);
- ``boosting`` — federated gradient boosting (histogram protocol, seed 003 §9.2) with Gaussian
  noise on each centre's gradient/hessian sums and counts (:mod:`.boosting`): test AUC;
- ``generative`` — SAVAE's FedAvg arm (seed 003, D6.2's good node / poor node test) with central
  DP-FedAvg (:mod:`.generative`): the clean-test C-index of the Weibull time decoder;
- ``fedprep`` — federated RNA-seq preprocessing (size factors, moments, VST, top-N) with noisy
  clipped sums at each centre (:mod:`.fedprep`): FMI of ward HAC on the private top-N VST with
  that on the non-private federated one (top-N overlap beside it);
- ``fedcref`` — FedCRef (seed 002) with its group FedAvg under central DP-FedAvg (member
  updates clipped at the member, noise once on the sum; the local models and the
  association messages are not privatised, :mod:`.fedcref`): mean Hungarian accuracy of the
  refined clusters;
- ``bayes`` — PVI (seed 003 ch. 4) with each centre's Δη clipped and noised at the centre
  (:mod:`.bayes`), or (``mechanisms: dp_sgd``, arm ``federated_local``) DP-SGD inside its local
  ELBO fit (:mod:`.bayes_dpsgd`): test accuracy of the global posterior;
- ``property_inference`` / ``reconstruction`` — the seed-001 sex inference and MMD
  reconstruction attacks on projected rows released like ``known_io``'s (:mod:`.inference`):
  the attacker's test accuracy (chance: majority share) and median relative error (chance: the
  attacker's mean row) over ε.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError
from fedclust.federation import Ledger, PrivacySettings, federate
from fedclust.federation import privacy as PV
from fedclust.federation.dp import clip_rows
from fedclust.seeds import derive_seed, rng

from . import pooled as R
from . import server as S
from .centre import Centre
from .records import (
    budget_rows,
    curve_row,
    epsilons,
    frames,
    noise_multiplier,
    settings_for,
    spent,
)
from .workflow import check_known_rows

log = logging.getLogger(__name__)

METHODS = ("dp_lloyd", "hac", "km", "survival", "heart", "dec", "known_io", "admm", "boosting",
           "generative", "fedprep")  # fmt: skip
METHODS += ("fedcref", "bayes", "property_inference", "reconstruction")
#: per method: headline metric, whether higher is better, the "within 5 %" rule
HEADLINE_METRICS = {
    "dp_lloyd": ("fmi", True),
    "hac": ("fmi", True),
    "km": ("sup_distance", False),
    "survival": ("c_index", True),
    "heart": ("auc", True),
    "dec": ("accuracy", True),
    "known_io": ("median_rel_error", True),
    "admm": ("objective_gap", False),
    "boosting": ("auc", True),
    "generative": ("recon_error", False),
    "fedprep": ("hac_fmi", True),
    "fedcref": ("accuracy", True),
    "bayes": ("test_accuracy", True),
    "property_inference": ("pi_accuracy", True),
    "reconstruction": ("recon_rel_error", False),
}
#: the seed-001 attacks over ε (arms attack / chance; no federated headline line)
ATTACK_METHODS = ("known_io", "property_inference", "reconstruction")


def secure(cfg: dict[str, Any]) -> PrivacySettings:
    """The summing protocols' transport settings: secure aggregation (config), no DP (the
    stage's own methods add their noise themselves)."""
    return PrivacySettings(secure_aggregation=bool(cfg.get("secure_aggregation", True)))


def _fed(centres, server, cfg: dict[str, Any]):
    """``federate`` with secure aggregation as configured (the centres require the same)."""
    with PV.using(secure(cfg)):
        return federate(centres, server, ledger=Ledger())


def _spent(z: float, releases: int, delta: float) -> float:
    return spent(z, releases, delta)


def _fmi(a, b) -> float:
    from sklearn.metrics import fowlkes_mallows_score

    return float(fowlkes_mallows_score(np.asarray(a).astype(str), np.asarray(b).astype(str)))


# ---------------------------------------------------------------- DP-Lloyd
def run_dp_lloyd(
    x: np.ndarray, centre: np.ndarray, labels: np.ndarray, cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Federated DP-Lloyd (2 Gaussian releases per iteration: counts Δ₂ = 1, sums Δ₂ = bound)
    from a data-independent start (uniform in [0, 1]^d, the features' public range). FMI with
    scikit-learn's pooled k-means (seed 001's agreement with pooled); ``labels`` (the reference
    classes) give the ``fmi_reference`` rows beside it."""
    from sklearn.cluster import KMeans

    m, delta = cfg["dp_lloyd"], float(cfg["delta"])
    k, iters, bound = int(m["k"]), int(m["iterations"]), float(m["bound"])
    x = np.asarray(x, np.float64)
    ids = sorted(set(centre.tolist()))
    curve, budget = [], []
    for s in range(int(cfg["seeds"])):
        km_seed = derive_seed(seed, "pu", "kmeans", s)
        ref = KMeans(k, n_init=10, random_state=km_seed).fit(x).labels_
        init = rng(seed, "privacy_utility", "lloyd", "init", s).uniform(0.0, 1.0, (k, x.shape[1]))
        init = clip_rows(init, bound)
        for eps in epsilons(cfg["epsilons"]):
            z = noise_multiplier(eps, delta, 2 * iters)
            noise = S.lloyd_noise(
                k,
                x.shape[1],
                iters,
                z,
                bound,
                rng(seed, "privacy_utility", "lloyd", "noise", eps, s),
            )
            cs = [
                Centre(f"centre_{c}", x[centre == c], bound=bound, privacy=secure(cfg)) for c in ids
            ]
            c = _fed(cs, lambda ps, init=init, noise=noise: S.dp_lloyd(ps, init, noise, bound), cfg)
            lab = np.argmin(((x[:, None, :] - c[None]) ** 2).sum(-1), axis=1)  # evaluation
            curve.append(curve_row("dp_lloyd", "federated", eps, s, "fmi", _fmi(lab, ref)))
            curve.append(
                curve_row("dp_lloyd", "federated", eps, s, "fmi_reference", _fmi(lab, labels))
            )
            budget += budget_rows(
                "dp_lloyd",
                eps,
                s,
                [c_.cid for c_ in cs],
                "gaussian on the secure sum (counts, sums)",
                2 * iters,
                z,
                _spent(z, 2 * iters, delta),
                delta,
            )
        curve.append(curve_row("dp_lloyd", "pooled", math.inf, s, "fmi", 1.0))
        curve.append(
            curve_row("dp_lloyd", "pooled", math.inf, s, "fmi_reference", _fmi(ref, labels))
        )
        curve.append(
            curve_row(
                "dp_lloyd",
                "isolated",
                math.inf,
                s,
                "fmi",
                _isolated(
                    x,
                    centre,
                    ref,
                    lambda xc, km_seed=km_seed: (
                        KMeans(min(k, len(xc)), n_init=10, random_state=km_seed).fit(xc).labels_
                    ),
                ),
            )
        )
    return frames(curve, budget)


def _isolated(x, centre, labels, fit: Callable[[np.ndarray], np.ndarray]) -> float:
    """Each centre clusters only its own samples: the size-weighted mean FMI on them."""
    tot, acc = 0, 0.0
    for c in sorted(set(centre.tolist())):
        m = centre == c
        if m.sum() < 2:
            continue
        acc += m.sum() * _fmi(fit(x[m]), labels[m])
        tot += m.sum()
    return acc / tot


# ---------------------------------------------------------------- HAC simultaneous sharing
def run_hac(
    x: np.ndarray, centre: np.ndarray, cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simultaneous sharing with privatised centroids (3 Gaussian releases per record: the
    centring sum, its cut-cluster's sum and count). FMI at k with the pooled scipy tree's cut
    (seed 001's agreement with pooled)."""
    m, delta = cfg["hac"], float(cfg["delta"])
    k, n_min, meth = int(m["k"]), int(m["n_min"]), str(m["linkage"])
    bound, raw = float(m["bound"]), float(m["raw_bound"])
    x = np.asarray(x, np.float64)
    ids = sorted(set(centre.tolist()))
    labels = R.hac_labels(x, k, meth)
    curve, budget = [], []
    for s in range(int(cfg["seeds"])):
        for eps in epsilons(cfg["epsilons"]):
            z = noise_multiplier(eps, delta, 3)
            cs = [
                Centre(
                    f"centre_{c}",
                    x[centre == c],
                    bound=bound,
                    raw_bound=raw,
                    noise=z,
                    seed=derive_seed(seed, "pu", "hac", eps, s),
                    linkage_method=meth,
                    privacy=secure(cfg),
                )
                for c in ids
            ]
            noise_rng = rng(seed, "privacy_utility", "hac", "mean", eps, s)

            def server(ps, z=z, noise_rng=noise_rng):
                mean = S.dp_mean(ps, raw, z, noise_rng)
                return S.labels_from_releases(S.cluster_releases(ps, mean, n_min), k, meth)

            labs = _fed(cs, server, cfg)
            got, ref = [], []
            for c, cl, lab in zip(ids, cs, labs, strict=True):
                if lab is not None:  # evaluation only: the centres label their own samples
                    got.append(cl.sample_labels(lab))
                    ref.append(labels[centre == c])
            curve.append(
                curve_row(
                    "hac",
                    "federated",
                    eps,
                    s,
                    "fmi",
                    _fmi(np.concatenate(got), np.concatenate(ref)),
                )
            )
            budget += budget_rows(
                "hac",
                eps,
                s,
                [c_.cid for c_ in cs],
                "gaussian: centring sum (server), cluster sums and counts (centre)",
                3,
                z,
                _spent(z, 3, delta),
                delta,
            )
        curve.append(curve_row("hac", "pooled", math.inf, s, "fmi", 1.0))
        curve.append(
            curve_row(
                "hac",
                "isolated",
                math.inf,
                s,
                "fmi",
                _isolated(x, centre, labels, lambda xc: R.hac_labels(xc, min(k, len(xc)), meth)),
            )
        )
    return frames(curve, budget)


# ---------------------------------------------------------------- Kaplan–Meier counts
def run_km(
    t: np.ndarray, e: np.ndarray, centre: np.ndarray, cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """KM from the secure sum of count tables on the public grid + one Gaussian draw per cell
    (one release, Δ₂ = 1); sup distance to lifelines' pooled KM at the interval ends."""
    m, delta = cfg["km"], float(cfg["delta"])
    edges = np.arange(0.0, float(m["max"]), float(m["step"]))
    ends = np.append(edges[1:], float(m["max"]))
    ref = R.km_pooled(t, e, ends)
    ids = sorted(set(centre.tolist()))
    curve, budget = [], []
    for s in range(int(cfg["seeds"])):
        for eps in epsilons(cfg["epsilons"]):
            z = noise_multiplier(eps, delta, 1)
            cs = [
                Centre(f"centre_{c}", t=t[centre == c], e=e[centre == c], privacy=secure(cfg))
                for c in ids
            ]
            r = rng(seed, "privacy_utility", "km", eps, s)
            surv = _fed(cs, lambda ps, z=z, r=r: S.dp_km(ps, edges, z, r), cfg)
            curve.append(
                curve_row("km", "federated", eps, s, "sup_distance", np.abs(surv - ref).max())
            )
            budget += budget_rows(
                "km",
                eps,
                s,
                [c_.cid for c_ in cs],
                "gaussian on the secure sum (count table)",
                1,
                z,
                _spent(z, 1, delta),
                delta,
            )
        curve.append(curve_row("km", "pooled", math.inf, s, "sup_distance", 0.0))
        each = [np.abs(R.km_pooled(t[centre == c], e[centre == c], ends) - ref).max() for c in ids]
        w = np.array([(centre == c).sum() for c in ids], float)
        curve.append(
            curve_row(
                "km", "isolated", math.inf, s, "sup_distance", float(np.dot(w, each) / w.sum())
            )
        )
    return frames(curve, budget)


# ---------------------------------------------------------------- the known input-output attack
def run_known_io(
    x: np.ndarray, cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Orthogonal perturbation Y = X Q (seed 001 §3.3.4.2), each row clipped to ``bound`` and
    released with N(0, (z·2·bound)²) per entry (its own ε, one release; Δ₂ = 2·bound: replacing
    the patient moves its clipped row anywhere in the ball, as :mod:`.inference`'s releases).
    The attacker knows a fraction of (x, y) pairs, fits Q̂ by orthogonal Procrustes and
    reconstructs the rest (x̂ = y Q̂ᵀ): the median relative error and the share of rows
    within 0.2 over ε."""
    m, delta = cfg["known_io"], float(cfg["delta"])
    bound, frac = float(m["bound"]), float(m["fraction"])
    x = clip_rows(np.asarray(x, np.float64), bound)
    n, d = x.shape
    check_known_rows(n, d, frac, "the RNA-seq matrix")
    curve, budget = [], []
    for s in range(int(cfg["seeds"])):
        g = rng(seed, "privacy_utility", "known_io", s)
        q, r_ = np.linalg.qr(g.standard_normal((d, d)))
        q = q * np.sign(np.diag(r_))
        perm = g.permutation(n)
        known, unknown = perm[: int(round(frac * n))], perm[int(round(frac * n)) :]
        for eps in epsilons(cfg["epsilons"]):
            z = noise_multiplier(eps, delta, 1)
            y = x @ q + rng(seed, "privacy_utility", "known_io", "noise", eps, s).normal(
                0.0, z * 2.0 * bound, (n, d)
            )
            u, _, vt = np.linalg.svd(x[known].T @ y[known])
            xh = y[unknown] @ (u @ vt).T
            err = np.linalg.norm(xh - x[unknown], axis=1) / np.linalg.norm(x[unknown], axis=1)
            curve.append(
                curve_row("known_io", "attack", eps, s, "median_rel_error", np.median(err))
            )
            curve.append(
                curve_row("known_io", "attack", eps, s, "breach_rate", np.mean(err <= 0.2))
            )
            budget += budget_rows(
                "known_io",
                eps,
                s,
                ["each row"],
                "gaussian per released row (Δ₂ = 2·bound)",
                1,
                z,
                _spent(z, 1, delta),
                delta,
            )
    return frames(curve, budget)


# ---------------------------------------------------------------- survival Weights Averaging
def run_survival(
    x: pd.DataFrame, obs: pd.DataFrame, scfg: dict[str, Any], cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """D6.2's Weights Averaging (first grid point, no CV) under secure aggregation and central
    DP-FedAvg; centralized and isolated once per seed."""
    from fedclust.survival import experiment as SE
    from fedclust.survival.strategies import Federation, SurvivalClient, blind_c_index

    m, delta = cfg["survival"], float(cfg["delta"])
    endpoint, scenario = str(m["endpoint"]), str(m["scenario"])
    mc = SE.model_config(scfg)
    hp = SE.grid(scfg)[0]
    fed = Federation.from_config(scfg)
    curve, budget = [], []
    for s in range(int(cfg["seeds"])):
        d = SE.prepare(x, obs, endpoint, scenario, s, scfg, seed)
        init = SE.init_parameters(
            mc, d["x_train"].shape[1], derive_seed(seed, "survival", endpoint, s, "init")
        )

        def clients(d=d, s=s):
            out = []
            for k in range(int(scfg["n_centres"])):
                w = d["centre"] == k
                bs = derive_seed(seed, "survival", endpoint, s, scenario, "batches", k)
                out.append(
                    SurvivalClient(
                        f"centre{k}",
                        d["x_train"][w],
                        d["t_train"][w],
                        d["e_train"][w],
                        mc,
                        bs,
                        fed.min_samples,
                    )
                )
            return out

        def score(strategy: str, model, d=d) -> float:
            net = clients()[0].model
            ci, _ = blind_c_index(net, model, strategy, d["x_test"], d["t_test"], d["e_test"])
            return float(ci)

        for eps in epsilons(cfg["epsilons"]):
            st = settings_for(eps, cfg, derive_seed(seed, "pu", "survival", s), m["clip"])
            PV.budget_rows(reset=True)
            with PV.using(st):
                model = _train_survival("weights_averaging", clients(), init, hp, mc, fed)
            curve.append(
                curve_row(
                    "survival", "federated", eps, s, "c_index", score("weights_averaging", model)
                )
            )
            budget += _from_spend("survival", eps, s, delta, hp.fe)
        for arm, strategy in (("pooled", "centralized"), ("isolated", "isolated")):
            model = _train_survival(strategy, clients(), init, hp, mc, fed)
            curve.append(curve_row("survival", arm, math.inf, s, "c_index", score(strategy, model)))
    return frames(curve, budget)


def _train_survival(strategy, clients, init, hp, mc, fed):
    from fedclust.survival.strategies import train_strategy

    return train_strategy(strategy, clients, init, hp, mc, Ledger(), None, fed)


def _from_spend(method: str, eps: float, s: int, delta: float, rounds: int) -> list[dict]:
    """Budget rows from the round loop's record (:func:`fedclust.federation.privacy.spend`)."""
    rows = PV.budget_rows(reset=True)
    if math.isinf(eps) or not rows:
        return []
    r = rows[-1]
    return budget_rows(
        method,
        eps,
        s,
        r["centres"],
        "central DP-FedAvg (gaussian on the secure sum)",
        r["releases"],
        r["noise_multiplier"],
        r["epsilon"],
        delta,
    )


# ---------------------------------------------------------------- heart FL
def _heart_strategy():
    """The core's FedAvg; the aggregate's BatchNorm moving variances (Keras order: every
    sixth array from index 5) kept ≥ 1e-3 — noise can make them negative (post-processing)."""
    from fedclust.federation import FedAvg

    class PositiveVarianceFedAvg(FedAvg):
        def aggregate_fit(self, server_round, results, current=None):
            w = super().aggregate_fit(server_round, results, current)
            for i in range(5, len(w) - 2, 6):
                w[i] = np.maximum(w[i], np.float32(1e-3))
            return w

    return PositiveVarianceFedAvg()


def run_heart(
    features: pd.DataFrame, obs: pd.DataFrame, dcfg: dict[str, Any], cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seed 004's FL (weighted FedAvg over the five hospitals, per-client Adam) on the core's
    round loop, under secure aggregation and central DP-FedAvg; AUC on the hospitals' pooled
    test rows (an evaluation). Pooled: one trainer on every training row for the same number
    of epochs; isolated: each hospital alone (mean AUC over hospitals, on the same test rows)."""
    import torch

    from fedclust.decentral.clients import HeartClient, make_client_data
    from fedclust.decentral.server import HEART_TRAIN
    from fedclust.decentral.simulate import initial_weights
    from fedclust.decentral.training import Trainer
    from fedclust.federation import run_rounds

    m, delta = cfg["heart"], float(cfg["delta"])
    rounds, epochs, bs = int(m["rounds"]), int(m["epochs"]), int(dcfg["batch_size"])
    lr = float(dcfg["learning_rate"])
    data = make_client_data(
        features,
        obs["HeartDisease"].to_numpy(),
        obs["hospital"].to_numpy(),
        float(dcfg["test_size"]),
        int(dcfg["split_random_state"]),
    )
    xt = torch.from_numpy(np.concatenate([c.X_test for c in data]))
    yt = torch.from_numpy(np.concatenate([c.y_test for c in data]))
    n_feat = data[0].X_train.shape[1]
    cfg_fit = {"epochs": epochs, "batch_size": bs, "validation_split": 0.0}
    curve, budget = [], []
    for s in range(int(cfg["seeds"])):
        sd = derive_seed(seed, "pu", "heart", s)
        w0 = initial_weights(n_feat, sd)
        drop = derive_seed(sd, "dropout")  # each copy's own dropout stream: no global torch RNG

        def auc(w, trainer) -> float:
            return float(trainer.evaluate(w, xt, yt).auc)

        for eps in epsilons(cfg["epsilons"]):
            trainer = Trainer(n_feat, lr, "per_client", derive_seed(sd, "shuffle"), drop)
            cl = [HeartClient(c, trainer) for c in data]
            PV.budget_rows(reset=True)
            with PV.using(settings_for(eps, cfg, sd, m["clip"])):
                w = federate(
                    cl,
                    lambda ps, w0=w0: run_rounds(
                        ps, _heart_strategy(), w0, rounds, cfg_fit, HEART_TRAIN, label="heart FL"
                    ),
                    ledger=Ledger(),
                )
            curve.append(curve_row("heart", "federated", eps, s, "auc", auc(w, trainer)))
            budget += _from_spend("heart", eps, s, delta, rounds)
        trainer = Trainer(n_feat, lr, "per_client", derive_seed(sd, "shuffle"), drop)
        xs = torch.from_numpy(np.concatenate([c.X_train for c in data]))
        ys = torch.from_numpy(np.concatenate([c.y_train for c in data]))
        w, _ = trainer.fit(w0, xs, ys, rounds * epochs, bs, owner="pooled")
        curve.append(curve_row("heart", "pooled", math.inf, s, "auc", auc(w, trainer)))
        each = []
        for c in data:
            trainer = Trainer(n_feat, lr, "per_client", derive_seed(sd, "shuffle"), drop)
            w, _ = trainer.fit(
                w0,
                torch.from_numpy(c.X_train),
                torch.from_numpy(c.y_train),
                rounds * epochs,
                bs,
                owner=c.name,
            )
            each.append(auc(w, trainer))
        curve.append(curve_row("heart", "isolated", math.inf, s, "auc", float(np.mean(each))))
    return frames(curve, budget)


# ---------------------------------------------------------------- DEC stages A-B
def run_dec(
    x: np.ndarray,
    centre: np.ndarray,
    labels: np.ndarray,
    obs: pd.DataFrame,
    dec_cfg: dict[str, Any],
    cfg: dict[str, Any],
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Federated TSAE (FedAvg, Adam at the centres) under secure aggregation and central DP,
    then every centre's k-means centroids with its own noise (:class:`.dec.DPKMeansClient`),
    aggregated by double k-means; Hungarian accuracy of the pooled embedding's nearest
    centroid (an evaluation) and the OS log-rank statistic between those clusters."""
    from .dec import run_dec as _run

    return _run(x, centre, labels, obs, dec_cfg, cfg, seed)


def run_admm(acfg: dict[str, Any], cfg: dict[str, Any], seed: int):
    """Consensus ADMM with the centres' iterates privatised at the centre (:mod:`.admm`)."""
    from .admm import run_admm as _run

    return _run(acfg, cfg, seed)


def run_boosting(bcfg: dict[str, Any], cfg: dict[str, Any], seed: int):
    """Federated boosting with the centres' statistics noised at the centre (:mod:`.boosting`)."""
    from .boosting import run_boosting as _run

    return _run(bcfg, cfg, seed)


def run_generative(gcfg: dict[str, Any], cfg: dict[str, Any], seed: int):
    """SAVAE FedAvg with central DP-FedAvg (:mod:`.generative`)."""
    from .generative import run_generative as _run

    return _run(gcfg, cfg, seed)


def run_fedprep(counts: pd.DataFrame, centre: pd.Series, cfg: dict[str, Any], seed: int):
    """Federated RNA-seq preprocessing with noisy clipped sums (:mod:`.fedprep`)."""
    from .fedprep import run_fedprep as _run

    return _run(counts, centre, cfg, seed)


def run_fedcref(fcfg: dict[str, Any], cfg: dict[str, Any], seed: int):
    """FedCRef with central DP-FedAvg on its group models (:mod:`.fedcref`)."""
    from .fedcref import run_fedcref as _run

    return _run(fcfg, cfg, seed)


def run_bayes(bcfg: dict[str, Any], cfg: dict[str, Any], seed: int):
    """PVI with each centre's Δη clipped and noised at the centre, or DP-SGD in its local ELBO
    fit (:mod:`.bayes`, :mod:`.bayes_dpsgd`)."""
    from .bayes import run_bayes as _run

    return _run(bcfg, cfg, seed)


RUNNERS = {
    "dp_lloyd": run_dp_lloyd,
    "hac": run_hac,
    "km": run_km,
    "known_io": run_known_io,
    "survival": run_survival,
    "heart": run_heart,
    "dec": run_dec,
    "admm": run_admm,
    "boosting": run_boosting,
    "generative": run_generative,
    "fedprep": run_fedprep,
    "fedcref": run_fedcref,
    "bayes": run_bayes,
    "property_inference": lambda counts, obs, cfg, seed: _inference(
        "run_property_inference", counts, obs, cfg, seed
    ),
    "reconstruction": lambda counts, obs, cfg, seed: _inference(
        "run_reconstruction", counts, obs, cfg, seed
    ),
}


def _inference(name: str, counts, obs, cfg, seed):
    """The seed-001 attacks on privatised releases (:mod:`.inference`)."""
    from . import inference

    return getattr(inference, name)(counts, obs, cfg, seed)


def check_method(method: str) -> None:
    if method not in METHODS:
        raise ConfigError(
            f"unknown privacy–utility method {method!r}",
            where="privacy_utility.methods",
            fix=f"one of {METHODS}",
        )


def run_unit(
    method: str,
    features: pd.DataFrame,
    obs: pd.DataFrame,
    split: pd.DataFrame | None,
    cfg: dict[str, Any],
    config: dict[str, Any],
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One method's job from its input tables (:func:`.workflow.inputs`); ``config`` is the
    whole workflow config (the stages' own sections: survival, decentral, dec, admm, boosting,
    fedcref, bayes)."""
    check_method(method)
    m = cfg[method]
    if method == "admm":  # the ADMM stage's bundled data: no input files
        return run_admm(config["admm"], cfg, seed)
    if method == "boosting":  # the bundled breast-cancer data: no input files
        return run_boosting(config["boosting"], cfg, seed)
    if method == "generative":  # the simulated MDS cohort: no input files
        return run_generative(config["generative"], cfg, seed)
    if method == "fedprep":  # features: the raw counts; split: sample → centre
        ctr = split.set_axis(split.index.astype(str))["center"].astype(str)
        return run_fedprep(features.set_axis(features.index.astype(str)), ctr, cfg, seed)
    if method in ("fedcref", "bayes"):  # bundled glyph / digit images: no input files
        return RUNNERS[method](config.get(method) or {}, cfg, seed)
    if method in ("property_inference", "reconstruction"):  # raw counts, obs with sex
        counts = features.set_axis(features.index.astype(str))
        obs = obs.set_axis(obs.index.astype(str)).loc[counts.index]
        return RUNNERS[method](counts, obs, cfg, seed)
    if method in ("dp_lloyd", "km", "dec"):
        ids = features.index.astype(str)
        obs = obs.set_axis(obs.index.astype(str)).loc[ids]
        centre = split.set_axis(split.index.astype(str)).loc[ids, "center"].astype(str).to_numpy()
        if method == "km":
            t = obs[f"{m['endpoint']}_YEARS"].to_numpy(float)
            e = obs[f"{m['endpoint']}_STATUS"].to_numpy(float)
            known = np.isfinite(t) & np.isfinite(e)  # the real IPSS-M lacks some outcomes
            if not known.all():
                log.info("KM: %d patients without %s time or status left out",
                         int((~known).sum()), m["endpoint"])  # fmt: skip
            return run_km(t[known], e[known], centre[known], cfg, seed)
        labels = obs["label"].astype(str).to_numpy()
        if method == "dp_lloyd":
            return run_dp_lloyd(features.to_numpy(np.float64), centre, labels, cfg, seed)
        return run_dec(features.to_numpy(np.float32), centre, labels, obs, config["dec"], cfg, seed)
    if method in ("hac", "known_io"):
        x = features.to_numpy(np.float64)
        if m.get("genes"):
            x = x[:, : int(m["genes"])]
        if method == "known_io":
            return run_known_io(x, cfg, seed)
        obs = obs.set_axis(obs.index.astype(str)).loc[features.index.astype(str)]
        return run_hac(x, obs["center"].astype(str).to_numpy(), cfg, seed)
    if method == "survival":
        return run_survival(features, obs, config["survival"], cfg, seed)
    return run_heart(features, obs, config["decentral"], cfg, seed)
