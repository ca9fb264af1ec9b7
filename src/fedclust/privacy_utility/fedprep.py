"""Federated RNA-seq preprocessing (issue 23: size factors, moments, VST, top-N genes) with
differential privacy (issue 24).

Each centre is the data stage's :class:`fedclust.data.fedpreprocess.centre.RnaseqCentre`; the
private one (:class:`PrivateRnaseqCentre`) clips every sample's contribution entry-wise and adds
Gaussian noise N(0, (z·Δ₂)²) **at the centre** to each sum it releases, before the message
leaves (its messages are (ε, δ)-DP on their own; the data stage's server sums them in the
clear, so every centre adds the full noise). The server is the stage's own
(:func:`fedclust.data.fedpreprocess.server.rnaseq_server`) with ``dispersions: moments``: the
genewise dispersions are the method-of-moments start points pydeseq2's L-BFGS-B starts from
(step 3's tens of likelihood rounds would each be a release); trend, VST and top-N are the
stage's own post-processing of the noisy sums. Add/remove one sample; G genes (public):

1. ``logsum``: Σ_i ℓ_i with ℓ_ij = log x_ij clipped to [0, L] (log 0 counted as 0: the zero
   pattern is not released, so a gene with zeros gets a lower geometric mean; each centre's
   median of ratios runs over its own positive counts): Δ₂ = L·√G (``log_bound`` = L).
2. ``normed_moments``: with the public reference r_j = exp(logmean_j) (the noisy release of
   step 1), the relative deviations d_ij = (y_ij − r_j)/r_j of the normalised counts clipped to
   [−c, c]: T1 = Σ_i d_i (Δ₂ = c√G), T2 = Σ_i d_i² (Δ₂ = c²√G), and Σ_i min(1/s_i, b)
   (Δ₂ = b; ``rel_bound`` = c, ``inv_sf_bound`` = b). The centre sends mean = r(1 + T1/n) and
   m2 = max(r²(T2 − T1²/n), 0) (post-processing), the stage's message.
3. ``apply_vst``: with the public reference v_j = VST(r_j) (the broadcast trend), the deviations
   VST_ij − v_j clipped to [−c_v, c_v]: T1 (Δ₂ = c_v√G), T2 (Δ₂ = c_v²√G), sent as mean and m2
   as in 2 (``vst_bound`` = c_v).

Six Gaussian releases with the same multiplier z per run; the accountant composes them and z is
calibrated to spend exactly ε. Not privatised (stated in the report): the centres' sample counts
n (public in this simulation, as the other methods assume) and which samples a centre holds.

Headline: the FMI between the ward HAC clustering (k clusters) of the private run's top-N VST
and that of the non-private federated run, on the same samples — what the preprocessing feeds
(the HAC stage clusters the VST's top genes), so it weighs a swapped gene by what it changes
downstream; the overlap of the top-N genes (|private ∩ non-private| / N) beside it. Pooled:
pooled pydeseq2 (the data stage's pooled rule) on the same genes; isolated: every centre
preprocesses and clusters only its own samples (size-weighted FMI with the non-private labels
on its rows; overlap of its own top-N). Data: the first ``genes`` genes of the simulated cohort's
counts (reduced size), its split's centres.

ε = ∞: the data stage's own federated run (:func:`fedclust.data.fedpreprocess.federated_rnaseq`,
its centres, pydeseq2's genewise dispersions), bit for bit (tested).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from fedclust.data.fedpreprocess import RnaseqSettings, federated_rnaseq
from fedclust.data.fedpreprocess.centre import RnaseqCentre
from fedclust.data.fedpreprocess.protocols import MIN_SAMPLES, as_row
from fedclust.data.fedpreprocess.rnaseq import pooled_rnaseq
from fedclust.data.preprocess import vst_closed_form
from fedclust.seeds import derive_seed, rng

from .records import budget_rows, curve_row, epsilons, frames, noise_multiplier, spent

#: Gaussian releases of one run: Σ log counts; T1, T2, Σ 1/s; VST T1, T2
RELEASES = 6


class PrivateRnaseqCentre(RnaseqCentre):
    """A preprocessing centre whose sums leave clipped and noised (module docstring);
    ``noise``: the multiplier z (0: the stage's own centre); ``bounds``: L, c, b, c_v."""

    def __init__(
        self,
        cid: str,
        counts: np.ndarray,
        min_samples: int = MIN_SAMPLES,
        disclosure: Any = None,
        *,
        noise: float = 0.0,
        bounds: dict[str, float] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(cid, counts, min_samples, disclosure)
        self.noise = float(noise)
        b = bounds or {}
        self.L = float(b.get("log_bound", 12.0))
        self.c = float(b.get("rel_bound", 3.0))
        self.b = float(b.get("inv_sf_bound", 5.0))
        self.cv = float(b.get("vst_bound", 3.0))
        self._rng = rng(seed, "privacy_utility", "fedprep", self.cid)
        self._ref: np.ndarray | None = None  # r_j = exp(logmean_j), public
        self.clean: dict[str, np.ndarray] = {}  # the last sums before noise (tests only)

    def _noised(self, key: str, s: np.ndarray, sensitivity: float) -> np.ndarray:
        s = np.asarray(s, dtype=np.float64)
        self.clean[key] = s.copy()
        return s + self._rng.normal(0.0, self.noise * sensitivity, s.shape)

    def logsum(self, parameters: Any, config: dict) -> dict:
        if self.noise == 0:
            return super().logsum(parameters, config)
        if (a := self._abstain()) is not None:
            return a
        with np.errstate(divide="ignore"):
            ell = np.log(self.counts.astype(np.float64))
        ell = np.clip(np.where(np.isfinite(ell), ell, 0.0), 0.0, self.L)
        g = ell.shape[1]
        return {"sum_log": as_row(self._noised("sum_log", ell.sum(axis=0), self.L * g**0.5)),
                "n": self.n_samples}  # fmt: skip

    def normed_moments(self, parameters: np.ndarray, config: dict) -> dict:
        if self.noise == 0:
            return super().normed_moments(parameters, config)
        logmeans = np.asarray(parameters, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            lr = np.log(self.counts.astype(np.float64)) - logmeans
        lr[(self.counts <= 0) | ~np.isfinite(lr)] = np.nan
        with np.errstate(all="ignore"):
            med = np.nanmedian(np.where(np.isnan(lr).all(1, keepdims=True), 0.0, lr), axis=1)
        self.size_factors = np.exp(med)
        self.normed = self.counts / self.size_factors[:, None]
        self._ref = np.exp(np.where(np.isfinite(logmeans), logmeans, 0.0))
        if (a := self._abstain()) is not None:
            return a
        r, n, g = self._ref, self.n_samples, self.counts.shape[1]
        d = np.clip((self.normed - r) / r, -self.c, self.c)
        t1 = self._noised("t1", d.sum(axis=0), self.c * g**0.5)
        t2 = self._noised("t2", (d * d).sum(axis=0), self.c**2 * g**0.5)
        inv = float(self._noised("inv", np.minimum(1 / self.size_factors, self.b).sum(), self.b))
        mean = r * (1 + t1 / n)
        m2 = np.maximum(r * r * (t2 - t1 * t1 / n), 0.0)
        return {"mean": as_row(mean), "m2": as_row(m2), "sum_inv_sf": max(inv, 0.0), "n": n}

    def apply_vst(self, parameters: Any, config: dict) -> dict:
        out = super().apply_vst(parameters, config)  # the centre's own VST of its rows
        if self.noise == 0 or not isinstance(out, dict):
            return out
        genes = np.asarray(config["genes"], dtype=np.int64)
        coeffs, md = config.get("coeffs"), config.get("mean_disp")
        with np.errstate(all="ignore"):
            ref = vst_closed_form(self._ref[genes][None, :],
                                  None if coeffs is None else np.asarray(coeffs, float),
                                  None if md is None else float(md))[0]  # fmt: skip
            d = np.clip(np.nan_to_num(self.vst[:, genes] - ref), -self.cv, self.cv)
        ref = np.nan_to_num(ref)
        n, g = self.n_samples, len(genes)
        t1 = self._noised("vst_t1", d.sum(axis=0), self.cv * g**0.5)
        t2 = self._noised("vst_t2", (d * d).sum(axis=0), self.cv**2 * g**0.5)
        return {"mean": as_row(ref + t1 / n), "m2": as_row(np.maximum(t2 - t1 * t1 / n, 0.0)),
                "n": n}  # fmt: skip


def _labels(vst: pd.DataFrame, k: int) -> np.ndarray:
    from .pooled import hac_labels

    return hac_labels(np.nan_to_num(vst.to_numpy(np.float64)), k, "ward")


def _fmi(a, b) -> float:
    from sklearn.metrics import fowlkes_mallows_score

    return float(fowlkes_mallows_score(np.asarray(a), np.asarray(b)))


def _overlap(a, b) -> float:
    return len(set(a) & set(b)) / max(len(set(b)), 1)


def private_run(counts: pd.DataFrame, centre: pd.Series, settings: RnaseqSettings,
                ms: int, z: float, bounds: dict, seed: int):  # fmt: skip
    """One private federated run (``dispersions: moments``) with noise multiplier z."""

    def make(cid, x, min_samples, disclosure):
        return PrivateRnaseqCentre(cid, x, min_samples, disclosure, noise=z, bounds=bounds,
                                   seed=seed)  # fmt: skip

    return federated_rnaseq(counts, centre, replace(settings, dispersions="moments"), ms,
                            make_centre=make)  # fmt: skip


def run_fedprep(
    counts: pd.DataFrame, centre: pd.Series, cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The private federated preprocessing over ε × seeds (``counts``: samples × genes, raw;
    ``centre``: sample → centre; ``cfg``: ``privacy_utility``). Headline: HAC FMI with the
    non-private federated run (module docstring)."""
    m, delta = cfg["fedprep"], float(cfg["delta"])
    counts = counts.iloc[:, : int(m["genes"])]
    k, ms, top = int(m["k"]), int(m["min_samples"]), int(m["top_genes"])
    settings = RnaseqSettings(top_genes=top, seed=derive_seed(seed, "pu", "fedprep", "vst"))
    bounds = {b: float(m[b]) for b in ("log_bound", "rel_bound", "inv_sf_bound", "vst_bound")}
    ref = federated_rnaseq(counts, centre, settings, ms)  # the stage's own run
    ref_lab = pd.Series(_labels(ref.vst, k), index=ref.vst.index)
    ref_top = list(ref.vst.columns)
    z_of = {e: noise_multiplier(e, delta, RELEASES) for e in epsilons(cfg["epsilons"])}
    labels = centre.copy()
    labels.index = labels.index.astype(str)
    labels = labels.loc[counts.index.astype(str)].astype(str)
    curve, budget = [], []
    for sd in range(int(cfg["seeds"])):
        for eps, z in z_of.items():
            if math.isinf(eps):
                fed = ref  # the stage's own run (deterministic: one run serves every seed)
            else:
                fed = private_run(counts, centre, settings, ms, z, bounds,
                                  derive_seed(seed, "pu", "fedprep", eps, sd))  # fmt: skip
            lab = _labels(fed.vst.loc[ref.vst.index], k)
            curve.append(curve_row("fedprep", "federated", eps, sd, "hac_fmi",
                                   _fmi(lab, ref_lab.to_numpy())))  # fmt: skip
            curve.append(curve_row("fedprep", "federated", eps, sd, "top_overlap",
                                   _overlap(fed.vst.columns, ref_top)))  # fmt: skip
            budget += budget_rows(
                "fedprep", eps, sd, sorted(set(labels)),
                "gaussian at the centre on clipped per-sample sums (log counts, relative "
                "deviations and their squares, 1/s, VST deviations and their squares)",
                RELEASES, z, spent(z, RELEASES, delta), delta,
            )  # fmt: skip
    # non-private baselines (deterministic: the same value for every seed)
    pooled = pooled_rnaseq(counts, settings)
    p_fmi = _fmi(_labels(pooled.vst.loc[ref.vst.index], k), ref_lab.to_numpy())
    p_ov = _overlap(pooled.vst.columns, ref_top)
    tot, i_fmi, i_ov = 0, 0.0, 0.0
    for c in sorted(set(labels)):
        rows = labels.index[labels == c]
        if len(rows) <= max(k, ms):
            continue
        own = federated_rnaseq(counts.loc[rows], labels.loc[rows], settings, ms)
        i_fmi += len(rows) * _fmi(_labels(own.vst, k), ref_lab.loc[own.vst.index].to_numpy())
        i_ov += len(rows) * _overlap(own.vst.columns, ref_top)
        tot += len(rows)
    for sd in range(int(cfg["seeds"])):
        for arm, f, o in (("pooled", p_fmi, p_ov), ("isolated", i_fmi / tot, i_ov / tot)):
            curve.append(curve_row("fedprep", arm, math.inf, sd, "hac_fmi", f))
            curve.append(curve_row("fedprep", arm, math.inf, sd, "top_overlap", o))
    return frames(curve, budget)
