"""Consensus ADMM (seed 003 ch. 3, D6.2 Algorithm 2) with differential privacy (issue 24).

Each centre is the ADMM stage's :class:`fedclust.admm.AdmmCentre` with one more method,
``private_update``: the x-update as usual, then the only thing the z-update needs,
v_i = x_{i,k+1} + w_{i,k}, clipped to the L2 ball of radius C (``bound``) and released with
N(0, (z·Δ₂)²) per coordinate, **added at the centre** before the message leaves. v_i is an
arbitrary function of the centre's rows (and of the public z's), so after clipping one record
added or removed moves it anywhere in the ball: Δ₂ = 2C. Every centre adds the full noise (its
release is (ε, δ)-DP on its own, secure aggregation or not); the server sees only the secure
sum Σ v_i (:func:`fedclust.admm.consensus_server` with ``private=True``). Composition over the
``iterations`` releases of the run (the accountant, RDP): z is calibrated so that the run
spends exactly ε. The centre's loss at z (the stage's objective history) is not released.

Not privatised (stated in the report): round 0, the counts and the standardisation moments
(Σv, Σv² per column) the ADMM stage exchanges before the iterations.

ε = ∞: the ADMM stage's own centres and server, no clipping, no noise (the method as its stage
runs it, :func:`fedclust.admm.admm_federated`), for the same number of iterations.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from fedclust.admm import data as AD
from fedclust.admm import problems as AP
from fedclust.admm.admm import AdmmCentre, AdmmSettings, admm_federated, centres_from_rows
from fedclust.admm.pipeline import load_task, settings_for
from fedclust.admm.protocols import CONSENSUS_ACK, PRIVATE_UPDATE
from fedclust.admm.reference import reference_solution
from fedclust.federation import Ledger, PrivacySettings
from fedclust.federation import privacy as PV
from fedclust.federation.dp import clip_rows
from fedclust.privacy.recorder import RecordingLedger
from fedclust.seeds import derive_seed, rng

from . import attacks as AT
from .centre import SECURE_ONLY
from .records import budget_rows, curve_row, epsilons, frames, noise_multiplier, spent


class PrivateAdmmCentre(AdmmCentre):
    """An ADMM centre that releases its iterate privatised (module docstring). ``bound``: C;
    ``noise``: the noise multiplier z (0: none); ``seed``: its own noise generator."""

    def __init__(
        self,
        centre: AdmmCentre,
        bound: float,
        noise: float,
        seed: int,
        privacy: PrivacySettings = SECURE_ONLY,
    ) -> None:
        self.__dict__.update(centre.__dict__)  # the ADMM centre's rows and settings
        self.bound, self.noise, self.privacy = float(bound), float(noise), privacy
        self._rng = rng(seed, "privacy_utility", "admm", self.cid)
        m = self.min_samples
        self.protocols = {
            **centre.protocols,
            "private_update": replace(PRIVATE_UPDATE, min_samples=m),
            "consensus": replace(CONSENSUS_ACK, min_samples=m),
        }
        self.clean: np.ndarray | None = None  # the last v_i before noise (tests only)

    @property
    def sensitivity(self) -> float:
        """Δ₂ of one release: the diameter 2C of the clipping ball."""
        return 2.0 * self.bound

    def private_update(self, parameters: Any, config: dict[str, Any]) -> dict:
        """x_{i,k+1} as :meth:`local_update`; message v = clip(x_{i,k+1} + w_{i,k}, C) +
        N(0, (z·2C)²) per coordinate."""
        self.x = self.solve(self.z - self.w)
        v = clip_rows((self.x + self.w)[None, :], self.bound)[0]
        self.clean = v.copy()
        if self.noise > 0:
            v = v + self._rng.normal(0.0, self.noise * self.sensitivity, v.shape)
        return {"v": v, "n": self.n_samples}

    def consensus(self, parameters: Any, config: dict[str, Any]) -> dict:
        """z_{k+1} received, w updated (:meth:`AdmmCentre.consensus`); only n acknowledged."""
        super().consensus(parameters, config)
        return {"n": self.n_samples}


#: a reconstruction within this relative error counts as a success (as ``known_io``'s breach)
ATTACK_TOL = 0.2
#: secure aggregation off: the counterfactual the attack needs (per-centre releases in clear)
CLEAR = PrivacySettings(secure_aggregation=False)


def attack_errors(
    data: Any, s: AdmmSettings, std: bool, bound: float, z: float, noise_seed: int,
    privacy: PrivacySettings = CLEAR,
) -> np.ndarray:  # fmt: skip
    """The curious server's reconstruction of every patient from one private run's kept
    messages (:func:`.attacks.admm_record`, ridge/lasso): the relative error per patient, the
    target's centre's other rows known (the DP adversary). The run is the privacy–utility run
    at the same ε with the same noise draws (``noise_seed``), its transport's secure
    aggregation as ``privacy`` says (default off: the per-centre releases the attack needs);
    z = 0: no noise and no clipping."""
    cs = centres_from_rows(data.X, data.y, data.centers, data.names, s, std)
    cs = [PrivateAdmmCentre(c, math.inf if z == 0 else bound, z, noise_seed, privacy=privacy)
          for c in cs]  # fmt: skip
    led = RecordingLedger()
    with PV.using(privacy):
        admm_federated(cs, s, led, private=True)
    errs = []
    for c in cs:
        X, G = AT.admm_iterates(*AT.admm_releases(led.kept, c.cid), s.rho)
        for i in range(c.n_samples):
            rest = np.arange(c.n_samples) != i
            rec = AT.admm_record(X, G, c.weight, c.A[rest], c.b[rest])
            errs.append(AT.relative_error(rec, np.append(c.A[i, :-1], c.b[i])))
    return np.asarray(errs)


def _attack_rows(errs: np.ndarray, eps: float, sd: int) -> list[dict]:
    return [
        curve_row("admm", "attack", eps, sd, "attack_record_error", np.median(errs)),
        curve_row("admm", "attack", eps, sd, "attack_success", np.mean(errs <= ATTACK_TOL)),
    ]


def _settings(acfg: dict[str, Any], m: dict[str, Any]) -> AdmmSettings:
    task = {"problem": m["problem"], "lam": m["lam"], "rho": m["rho"]}
    return replace(settings_for(acfg, task), max_iter=int(m["iterations"]), eps_abs=None)


def run_admm(acfg: dict[str, Any], cfg: dict[str, Any], seed: int) -> tuple[pd.DataFrame, ...]:
    """Consensus ADMM over ε × seeds (``acfg``: the ADMM stage's section, for its solver
    settings; ``cfg``: ``privacy_utility``). Headline: the relative objective gap
    (f(z) − f*)/|f*| on the pooled standardised problem (an evaluation; f* from the ADMM
    stage's library reference). Isolated: each centre's own optimum on its rows (same
    standardisation) scored on the pooled objective, size-weighted."""
    m, delta = cfg["admm"], float(cfg["delta"])
    s = _settings(acfg, m)
    iters, bound, std = s.max_iter, float(m["bound"]), bool(acfg["standardize"])
    task = {"problem": s.problem, "dataset": m["dataset"], "n_blocks": int(m["n_blocks"])}
    attack = bool(m["attack"]) and s.problem in ("ridge", "lasso")  # the x-update is linear
    curve, budget = [], []
    for sd in range(int(cfg["seeds"])):
        data = load_task(acfg, task, derive_seed(seed, "pu", "admm", sd), "privacy_utility.admm")
        A, b = AD.pooled_blocks(data.X, data.y, s.problem, std)
        x_ref = reference_solution(s.problem, A, b, s.lam, s.penalize_bias)

        def gap(x, A=A, b=b, x_ref=x_ref) -> float:
            f_ref = AP.objective(s.problem, A, b, x_ref, s.lam, s.penalize_bias)
            return (AP.objective(s.problem, A, b, x, s.lam, s.penalize_bias) - f_ref) / abs(f_ref)

        for eps in epsilons(cfg["epsilons"]):
            z = noise_multiplier(eps, delta, iters)
            cs = centres_from_rows(data.X, data.y, data.centers, data.names, s, std)
            if math.isinf(eps):
                res = admm_federated(cs, s, Ledger())
            else:
                cs = [
                    PrivateAdmmCentre(c, bound, z, derive_seed(seed, "pu", "admm", eps, sd))
                    for c in cs
                ]
                with PV.using(PrivacySettings(bool(cfg.get("secure_aggregation", True)))):
                    res = admm_federated(cs, s, Ledger(), private=True)
            curve.append(curve_row("admm", "federated", eps, sd, "objective_gap", gap(res.z)))
            if attack:
                noise_seed = derive_seed(seed, "pu", "admm", eps, sd)
                curve += _attack_rows(attack_errors(data, s, std, bound, z, noise_seed), eps, sd)
            budget += budget_rows(
                "admm",
                eps,
                sd,
                [c.cid for c in cs],
                "gaussian at the centre on the clipped iterate (Δ₂ = 2·bound), secure sum",
                iters,
                z,
                spent(z, iters, delta),
                delta,
            )
        curve.append(curve_row("admm", "pooled", math.inf, sd, "objective_gap", 0.0))
        own = [
            (int((data.centers == c).sum()), gap(reference_solution(
                s.problem, A[data.centers == c], b[data.centers == c], s.lam, s.penalize_bias
            )))
            for c in data.names
        ]  # fmt: skip
        w = np.array([n for n, _ in own], float)
        iso = float(np.dot(w, [g for _, g in own]) / w.sum())
        curve.append(curve_row("admm", "isolated", math.inf, sd, "objective_gap", iso))
        if attack:  # chance: the best fixed guess of a standardised [row; target]
            W = np.column_stack([A[:, :-1], b])
            kappa = AT.prior_success(W, ATTACK_TOL)
            curve.append(curve_row("admm", "chance", math.inf, sd, "attack_success", kappa))
    return frames(curve, budget)
