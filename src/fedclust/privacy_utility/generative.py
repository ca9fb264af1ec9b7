"""SAVAE's FedAvg arm (seed 003, D6.2 §6.6) with central DP-FedAvg (issue 24).

The generative stage's own federated training, unchanged: :func:`fedclust.generative.server.
savae_fedavg` (the federated standardisation, then ``rounds`` FedAvg rounds on the core's one
round loop) over the good and the poor node of D6.2's good node / poor node test
(:func:`fedclust.generative.experiment.savae_split`, :func:`~fedclust.generative.experiment.
savae_centre`). At a finite ε the round loop runs under :func:`fedclust.federation.privacy.using`
with central DP (:class:`fedclust.federation.privacy.PrivateRounds`): every centre clips its
update (model after its local epochs − the broadcast model) to L2 norm C (``clip``) before the
message leaves, the server receives the secure sum Σ_k clip(Δ_k) and adds N(0, (z C)²) to it
**once**, divided by the cohort size (DP-FedAvg, McMahan et al. 2018). Sensitivity: one
centre's clipped update, C (the unit of privacy is a centre; a record lies in one centre, so
the bound holds for records too). The accountant composes the ``rounds`` Gaussian releases and
z is calibrated so that the run spends exactly ε at δ (``records.noise_multiplier``; the
round loop's own calibration, reported back through :func:`fedclust.federation.privacy.spend`).

Headline: the reconstruction error of the global model on the clean held-out rows
(``recon_error``, lower is better), evaluated on the poor node's copy of the global model (an
evaluation, never sent). The C-index of the Weibull time decoder (D6.2's survival metric, the
generative section's headline for SAVAE) is recorded beside it, but on the simulated cohort at
reduced size every arm's C-index is near 0.5 (pooled included), so it cannot show what the noise
costs; the reconstruction error does. A diverged run has NaN reconstruction error (left out of
the mean over seeds; ``diverged`` = 1 beside it counts it).
Pooled: the stage's pooled SAVAE on the good and the poor node's rows; isolated: the poor node
alone (D6.2's lower bound), same number of epochs.

Not privatised (stated in the report): the federated standardisation's moments (round 0) and
the node sizes. Data: the generative stage's MDS cohort in its simulated stand-in
(``generative.mds``; the IPSS-M files are not wired into this job), reduced sizes.

Divergence: with two centres the noise on the mean update (z·C/2 per coordinate) is large; a
centre whose local training from a noised model goes non-finite cannot encode its update for
secure aggregation and abstains, and the run stops (:class:`fedclust.federation.engine.
EveryCentreAbstained`). Such a run is recorded with C-index 0.5 (a model that ranks no pair:
constant risk) and ``diverged`` = 1 beside it (0 for a run that finished); a small ``clip``
keeps the noise, and the divergence, down.

ε = ∞: the generative stage's own run (no secure aggregation, no clipping, no noise): the
federated arm of :func:`fedclust.generative.experiment.run_savae` bit for bit (tested).

Not here: the DGD (its representations are per-sample parameters trained at each centre, so a
central-DP analysis of its FedAvg of decoder and mixture alone does not cover what a centre
keeps learning from its rows, and its run costs several SAVAE runs); RadialGAN: its messages are
per-centre latent codes and code gradients relayed between centres (no sum, no FedAvg step), so
neither secure aggregation nor central DP-FedAvg applies — it would need local DP on every
code, a different method.
"""

from __future__ import annotations

import copy
import functools
import logging
import math
from typing import Any

import numpy as np
import pandas as pd

from fedclust.federation import Ledger, PrivacySettings, federate
from fedclust.federation import privacy as PV
from fedclust.federation.engine import EveryCentreAbstained
from fedclust.seeds import derive_seed

from .records import budget_rows, curve_row, epsilons, frames, settings_for

log = logging.getLogger(__name__)
DATASET = "mds"
NO_PRIVACY = PrivacySettings()  # the generative stage's own run: nothing masked, no noise


def savae_config(gcfg: dict[str, Any], m: dict[str, Any]) -> dict[str, Any]:
    """The generative section with ``generative.savae`` reduced to this method's sizes
    (``privacy_utility.generative``: n_good, n_poor, n_test, rounds, local_epochs)."""
    out = copy.deepcopy(gcfg)
    sv = out["savae"]
    sizes = {k: int(m[k]) for k in ("n_good", "n_poor", "n_test")}
    sv["datasets"] = {DATASET: {**sizes, "rates": [float(m["rate"])]}}
    sv["train"] = {
        **sv["train"],
        "rounds": int(m["rounds"]),
        "local_epochs": int(m["local_epochs"]),
    }
    return out


def load_table(gcfg: dict[str, Any], seed: int):
    """The MDS cohort of the generative stage (simulated stand-in, module docstring)."""
    from fedclust.generative import data as D

    return D.load_mds(gcfg["mds"], seed, None, "SIMULATED MDS-like cohort")


def c_index(node, test) -> float:
    """C-index of the node's Weibull time decoder on ``test`` (its rows scaled by the node's
    scaler), as :func:`fedclust.generative.experiment.evaluate_savae` computes it."""
    from fedclust.generative.experiment import _survival_metrics

    return float(_survival_metrics(node.model, node.scaler.transform(test.x), test.t, test.d)[
        "c_index"])  # fmt: skip


def recon_error(node, test) -> float:
    """Reconstruction error of the node's model on the clean held-out rows (every observed
    entry; |error| in units of the rows' SD for Gaussian columns, as ``recon_error`` of
    :func:`fedclust.generative.experiment.evaluate_savae`)."""
    from fedclust.generative import evaluate as E
    from fedclust.generative import savae
    from fedclust.generative.experiment import _cat, _eval_scale

    xs = node.scaler.transform(test.x)
    est = node.scaler.inverse(savae.decode_mean(node.model, xs))
    known = ~np.isnan(test.x)
    return float(E.masked_error(est, np.nan_to_num(test.x), known,
                                _eval_scale(test.x, test.spec), _cat(test.spec)))  # fmt: skip


def metrics(node, test) -> dict[str, float]:
    return {"c_index": c_index(node, test), "recon_error": recon_error(node, test)}


class Unit:
    """One seed's good node / poor node test (the generative stage's builders and split)."""

    def __init__(self, table, gcfg: dict[str, Any], rate: float, seed: int) -> None:
        from fedclust.generative import data as D
        from fedclust.generative import experiment as GE
        from fedclust.generative import savae
        from fedclust.generative.nets import device

        sv = gcfg["savae"]
        self.ms = int(gcfg["min_samples"])
        self.train, self.rounds, self.local = GE.savae_training(sv, table.t is not None)
        self.unit = GE.savae_unit(DATASET, rate)
        _, (good, poor, self.test), (poor_c, pm) = GE.savae_split(table, sv, DATASET, rate, seed)
        self.good, self.poor, self.poor_c, self.pm, self.table = good, poor, poor_c, pm, table
        arch = savae.Arch.from_config(sv["model"])
        dev = device(str(gcfg.get("device", "auto")))
        self.build = functools.partial(GE.build_savae, table.spec, arch, table.t is not None,
                                       seed, self.unit, dev)  # fmt: skip
        self.seed = seed
        self._observed = D.observed

    def node(self, cid: str, tab, mask):
        from fedclust.generative.experiment import savae_centre

        return savae_centre(cid, tab, mask, self.build, self.train, self.seed, self.unit, self.ms)

    def federated(self, settings: PrivacySettings):
        """The FedAvg arm under ``settings``: (the poor node, its copy of the global model)."""
        from fedclust.generative import server as S
        from fedclust.generative.nets import get_parameters

        fg = self.node("good", self.good, self._observed(self.good.x))
        fp = self.node("poor", self.poor_c, self.pm)
        init = get_parameters(self.build())
        spec, r, loc, ms = self.table.spec, self.rounds, self.local, self.ms
        with PV.using(settings):
            federate([fg, fp], lambda ps: S.savae_fedavg(ps, spec, init, r, loc, ms),
                     ledger=Ledger())  # fmt: skip
        return fp

    def isolated(self):
        p = self.node("poor", self.poor_c, self.pm)
        p.standardise_locally()
        p.train_local(self.rounds * self.local)
        return p

    def pooled(self):
        from fedclust.generative import data as D
        from fedclust.generative import pooled

        g, p, t = self.good, self.poor, self.table
        tab = D.Tabular(np.concatenate([g.x, self.poor_c.x]), g.names, t.spec,
                        np.concatenate([g.y, p.y]), np.concatenate([g.t, p.t]),
                        np.concatenate([g.d, p.d]))  # fmt: skip
        mask = np.concatenate([self._observed(g.x), self.pm])
        node, _ = pooled.savae(tab, mask, self.build, self.train,
                               derive_seed(self.seed, "savae", *self.unit, "pooled"),
                               self.rounds * self.local)  # fmt: skip
        return node


def run_generative(
    gcfg: dict[str, Any], cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, ...]:
    """SAVAE FedAvg over ε × seeds (``gcfg``: the generative stage's section, for its model,
    training and MDS settings; ``cfg``: ``privacy_utility``). Headline: C-index (clean test)."""
    m, delta = cfg["generative"], float(cfg["delta"])
    g = savae_config(gcfg, m)
    rate = float(m["rate"])
    table = load_table(g, seed)
    curve, budget = [], []
    for sd in range(int(cfg["seeds"])):
        u = Unit(table, g, rate, derive_seed(seed, "pu", "generative", sd))
        for eps in epsilons(cfg["epsilons"]):
            if math.isinf(eps):
                st = NO_PRIVACY
            else:
                st = settings_for(eps, cfg, derive_seed(seed, "pu", "generative", "dp", sd),
                                  m["clip"])  # fmt: skip
            PV.budget_rows(reset=True)
            try:
                got, diverged = metrics(u.federated(st), u.test), 0.0
            except EveryCentreAbstained as err:  # a centre's model went non-finite (noise)
                log.warning("generative ε=%s seed %d: %s; C-index 0.5 recorded", eps, sd, err)
                got, diverged = {"c_index": 0.5, "recon_error": math.nan}, 1.0
            for k, v in {**got, "diverged": diverged}.items():
                curve.append(curve_row("generative", "federated", eps, sd, k, v))
            if not math.isinf(eps):
                r = PV.budget_rows(reset=True)[-1]  # the round loop's calibration (tested)
                budget += budget_rows(
                    "generative", eps, sd, r["centres"],
                    "central DP-FedAvg (gaussian on the secure sum)",
                    r["releases"], r["noise_multiplier"], r["epsilon"], delta,
                )  # fmt: skip
        for arm, node in (("pooled", u.pooled()), ("isolated", u.isolated())):
            for k, v in metrics(node, u.test).items():
                curve.append(curve_row("generative", arm, math.inf, sd, k, v))
    return frames(curve, budget)
