"""Federated gradient boosting (seed 003 §9.2, D6.2 ch. 10) with differential privacy (issue 24).

Each centre is the boosting stage's :class:`fedclust.boosting.centre.Centre`; the private one
(:class:`PrivateBoostingCentre`) adds Gaussian noise **at the centre** to every statistic it
sends in a tree round, before the message leaves; the server is the stage's own histogram
protocol (:func:`fedclust.boosting.server.boost`, scheme ``histogram``), unchanged.

Sensitivity (add/remove one patient; logistic loss): g = p − y ∈ (−1, 1) and
h = p(1 − p) ∈ (0, 1/4], so |g| ≤ 1 and h ≤ 1/4 hold without clipping. Per message:

- ``totals`` (the root of a tree): Σg (Δ₂ = 1), Σh (Δ₂ = 1/4); n is the centre's size (public
  in this simulation, as the stage's other methods assume);
- ``histograms`` (one tree level): a patient lies in one node and, per feature, in one bin, so
  the level's per-bin vectors over the d features have Δ₂ = √d (counts, Σg) and √d/4 (Σh);
- ``split_sums`` (the same level's chosen splits): one node, one side: Δ₂ = 1 (n, Σg), 1/4 (Σh).

Each field is a Gaussian mechanism N(0, (z·Δ₂)²) with the same multiplier z, so one tree of
depth D releases 2 + 6·D times; the accountant composes trees × (2 + 6·D) releases (an upper
bound: a tree that stops early releases less) and z is calibrated to spend exactly ε. Every
centre adds the full noise (its messages are (ε, δ)-DP on their own; the boosting protocol's
messages are per-centre, not secure sums). Post-processing at the centre: noisy Σh clamped at
0, counts rounded and kept ≥ 1. Not privatised (stated in the report): round 0 (the grid's
moments and sketch counts), and which bins of a node are non-empty at a centre (the histogram
message lists its non-empty bins, the stage's merged-run format at floor 1) and which side of
a chosen split is empty.

ε = ∞: the stage's own centres (floor 1: no merged bins), no noise — the histogram protocol,
which equals XGBoost on the pooled binned rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from fedclust.boosting import data as BD
from fedclust.boosting import grid as GR
from fedclust.boosting import pooled as BP
from fedclust.boosting import server as BS
from fedclust.boosting import tree as T
from fedclust.boosting.centre import Centre, without_floor
from fedclust.boosting.experiment import grid_cfg, params_of, scores
from fedclust.boosting.protocols import protocols
from fedclust.federation import Abstain, Ledger, federate
from fedclust.federation.disclosure import configured_policy
from fedclust.privacy.recorder import RecordingLedger
from fedclust.seeds import derive_seed, rng

from . import attacks as AT
from .records import budget_rows, curve_row, epsilons, frames, noise_multiplier, spent

#: Δ₂ of Σg and Σh of one patient (logistic loss: |g| ≤ 1, h ≤ 1/4)
G_BOUND, H_BOUND = 1.0, 0.25


def releases_per_tree(max_depth: int) -> int:
    """Gaussian releases of one tree: totals (Σg, Σh) + per level histogram (n, Σg, Σh) and
    split sums (n, Σg, Σh)."""
    return 2 + 6 * int(max_depth)


class PrivateBoostingCentre(Centre):
    """A boosting centre whose tree-round statistics leave with Gaussian noise (module
    docstring); ``noise``: the multiplier z (0: none); ``seed``: its own noise generator."""

    def __init__(self, *args: Any, noise: float = 0.0, seed: int = 0, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.noise = float(noise)
        self._rng = rng(seed, "privacy_utility", "boosting", self.cid)

    def _draw(self, a: Any, sensitivity: float) -> np.ndarray:
        a = np.asarray(a, dtype=np.float64)
        return a + self._rng.normal(0.0, self.noise * sensitivity, a.shape)

    def _count(self, a: Any, sensitivity: float) -> np.ndarray:
        """A noisy count, rounded and kept ≥ 1 (post-processing: a reported run or side is
        non-empty, and the centre's guard refuses a count below its floor of 1)."""
        return np.maximum(np.rint(self._draw(a, sensitivity)), 1).astype(np.int64)

    def totals(self, parameters: Any, config: dict) -> dict | Abstain:
        out = super().totals(parameters, config)
        if isinstance(out, Abstain) or self.noise == 0:
            return out
        return {**out, "g": float(self._draw(out["g"], G_BOUND)),
                "h": max(float(self._draw(out["h"], H_BOUND)), 0.0)}  # fmt: skip

    def histograms(self, parameters: Any, config: dict) -> dict | Abstain:
        out = super().histograms(parameters, config)
        if isinstance(out, Abstain) or self.noise == 0:
            return out
        root_d = math.sqrt(self.X.shape[1])
        return {
            **out,
            "bin_n": [self._count(a, root_d) for a in out["bin_n"]],
            "bin_g": [self._draw(a, root_d * G_BOUND) for a in out["bin_g"]],
            "bin_h": [np.maximum(self._draw(a, root_d * H_BOUND), 0.0) for a in out["bin_h"]],
        }

    def split_sums(self, parameters: Any, config: dict) -> dict | Abstain:
        out = super().split_sums(parameters, config)
        if isinstance(out, Abstain) or self.noise == 0:
            return out
        return {**out, "n": self._count(out["n"], 1.0), "g": self._draw(out["g"], G_BOUND),
                "h": np.maximum(self._draw(out["h"], H_BOUND), 0.0)}  # fmt: skip


def attack_hits(kept: Any, centres: list[Centre], params: T.Params) -> tuple[np.ndarray, ...]:
    """The curious server's differencing attack on one run's kept messages
    (:func:`.attacks.boosting_bins`, :func:`.attacks.boosting_label`), every training patient
    of every centre as the target, its centre's other rows known (the DP adversary): per
    patient the share of features whose bin is recovered and whether the label is."""
    p0 = float(T.sigmoid32(np.float32(params.base_margin)))
    bins, labels = [], []
    for c in centres:
        n_bins, width = np.asarray(c.n_bins), int(c.width)
        roots = [AT.dense_counts(r, n_bins) for r in AT.root_histograms(kept, c.cid)]
        g_with = [
            float(m["g"])
            for r, m in kept
            if r["kind"] == "totals" and r["sender"] == c.cid and int(r["round"]) == 1
        ]
        if not g_with:  # the centre abstained from the first tree: nothing to attack
            continue
        g0, _ = T.gradients(np.full(c.n_samples, params.base_margin, np.float32), c.y)
        every = T.histogram(c.codes, g0, g0, width)[2][:, : int(n_bins.max())]
        feat = np.arange(c.codes.shape[1])
        for i in range(c.n_samples):
            rest = every.copy()
            rest[feat, c.codes[i]] -= 1.0
            bins.append(np.mean(AT.boosting_bins(roots, rest, n_bins) == c.codes[i]))
            g_rest = float(np.sum(g0, dtype=np.float64) - g0[i])
            labels.append(AT.boosting_label(g_with[0], g_rest, p0) == int(c.y[i]))
    return np.asarray(bins), np.asarray(labels, float)


def bin_chance(codes: np.ndarray, n_bins: np.ndarray) -> float:
    """Chance level of the bin attack: the best constant guess, per feature the share of its
    most frequent bin (mean over features)."""
    return float(np.mean([np.bincount(codes[:, j], minlength=int(n_bins[j])).max() / len(codes)
                          for j in range(codes.shape[1])]))  # fmt: skip


def run_boosting(bcfg: dict[str, Any], cfg: dict[str, Any], seed: int) -> tuple[pd.DataFrame, ...]:
    """Federated boosting (histogram protocol) over ε × seeds on the bundled breast-cancer
    data (``bcfg``: the boosting stage's section, for its tree parameters and grid; ``cfg``:
    ``privacy_utility``). Headline: AUC on the pooled held-out rows (an evaluation). Pooled:
    ``xgboost.train`` on the pooled binned training rows; isolated: each centre's own
    ``xgboost.train``, mean AUC."""
    m, delta = cfg["boosting"], float(cfg["delta"])
    params = params_of({"params": {**bcfg.get("params", {}), "max_depth": m["max_depth"]}})
    gcfg, n_trees = grid_cfg(bcfg), int(m["trees"])
    releases = n_trees * releases_per_tree(params.max_depth)
    ds = BD.load_breast_cancer()
    spec = {"kind": "equal", "n_centres": int(m["n_centres"])}
    attack = bool(m["attack"])
    curve, budget = [], []
    for sd in range(int(cfg["seeds"])):
        centre = BD.centres(ds, "iid", spec, derive_seed(seed, "pu", "boosting"), sd)
        test = BD.test_rows(ds.y, centre, float(bcfg.get("test_fraction", 0.25)), seed,
                            ds.name, "pu", sd)  # fmt: skip
        Xtr, ytr, ctr, Xte, yte = ds.X[~test], ds.y[~test], centre[~test], ds.X[test], ds.y[test]
        names = sorted(set(ctr.tolist()))
        for eps in epsilons(cfg["epsilons"]):
            z = noise_multiplier(eps, delta, releases)
            cs = [
                PrivateBoostingCentre(
                    c,
                    Xtr[ctr == c],
                    ytr[ctr == c],
                    params,
                    1,
                    without_floor(configured_policy(c)),
                    noise=z,
                    seed=derive_seed(seed, "pu", "boosting", eps, sd),
                )  # fmt: skip
                for c in names
            ]
            led = RecordingLedger() if attack else Ledger()
            model = federate(cs, lambda ps: BS.boost(ps, protocols(1), params, n_trees,
                                                     grid_cfg=gcfg), ledger=led)  # fmt: skip
            auc = scores(yte, model.margin(GR.encode(Xte, model.grid)))[0]
            curve.append(curve_row("boosting", "federated", eps, sd, "auc", auc))
            if attack:
                bins, labels = attack_hits(led.kept, cs, params)
                curve += [
                    curve_row("boosting", "attack", eps, sd, "attack_bin_accuracy", bins.mean()),
                    curve_row("boosting", "attack", eps, sd, "attack_label_accuracy",
                              labels.mean()),
                ]  # fmt: skip
            budget += budget_rows(
                "boosting",
                eps,
                sd,
                names,
                "gaussian at the centre on Σg, Σh and counts (|g| ≤ 1, h ≤ 1/4)",
                releases,
                z,
                spent(z, releases, delta),
                delta,
            )
        pgrid = GR.pooled_grid(Xtr, **gcfg)
        ref, _ = BP.xgboost_fit(GR.encode(Xtr, pgrid), ytr, params, n_trees, gcfg["max_bin"])
        auc = scores(yte, BP.xgboost_margin(ref, GR.encode(Xte, pgrid)))[0]
        curve.append(curve_row("boosting", "pooled", math.inf, sd, "auc", auc))
        each = []
        for c in names:
            w = ctr == c
            bst, _ = BP.xgboost_fit(Xtr[w], ytr[w], params, n_trees, gcfg["max_bin"])
            each.append(scores(yte, BP.xgboost_margin(bst, Xte))[0])
        curve.append(curve_row("boosting", "isolated", math.inf, sd, "auc", float(np.mean(each))))
        if attack:  # chance: the best constant guess (most frequent bin, majority label)
            curve += [
                curve_row("boosting", "chance", math.inf, sd, "attack_bin_accuracy",
                          bin_chance(GR.encode(Xtr, model.grid), model.grid.n_bins)),
                curve_row("boosting", "chance", math.inf, sd, "attack_label_accuracy",
                          max(ytr.mean(), 1 - ytr.mean())),
            ]  # fmt: skip
    return frames(curve, budget)
