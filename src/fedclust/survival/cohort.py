"""The survival cohort of the `survival` stage (seed 003 §7.5; D6.2 used 2043 private MDS patients,
70 covariates, OS with 28.9 % events).

Real data: the IPSS-M cohort (the data stage's public stand-in for EUROMDS), read from the same
three files as :func:`fedclust.data.mds.load_ipssm`: clinical covariates of ``df_clinical.tsv``
(config ``survival.clinical``, incl. BM_BLAST; ``SEX`` → 1 = male, ``CYTO_IPSSR`` → ordinal 0–4,
``complex`` → 1 = complex karyotype) plus the data stage's binary mutation / cytogenetic features
(:func:`fedclust.data.mds.ipssm_features`). Patients whose endpoint time or status is missing are
left out (counted); missing covariates stay NaN here and are imputed per repetition from the
training part (:func:`fit_preprocess`): binary columns by their frequency of ones (as the data
stage does), continuous ones by their median; then min-max scaling fitted on the training part.

Fallback: :func:`simulate_cohort` — the data stage's simulated MDS binaries plus simulated clinical
covariates and Cox–Weibull times (labelled "simulated" everywhere).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedclust.data.mds import clinical_covariate, ipssm_features, read_ipssm
from fedclust.data.simulate import simulate_mds
from fedclust.errors import ConfigError, InputDataError
from fedclust.seeds import rng as make_rng

from .names import SIMULATED_COVARIATES

ENDPOINTS = ("OS", "LFS")


def load_ipssm_survival(
    clinical_path: str, mut_path: str, cna_path: str, clinical: list[str], min_carriers: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Covariates (NaN kept) and outcomes (OS/LFS years + status) of the IPSS-M patients, read
    with the data stage's checks (:func:`fedclust.data.mds.read_ipssm`).

    Binary covariates with fewer than ``min_carriers`` ones are dropped (they would be constant
    in a training split).
    """
    ends = [f"{e}_{k}" for e in ENDPOINTS for k in ("YEARS", "STATUS")]
    clin, mut, cna = read_ipssm(clinical_path, mut_path, cna_path, clinical=list(clinical))
    binary = ipssm_features(mut, cna, mut_path, cna_path)
    binary = binary.loc[:, binary.sum(axis=0, skipna=True) >= min_carriers]
    x = pd.DataFrame({c: clinical_covariate(clin, c) for c in clinical})
    x = pd.concat([x, binary], axis=1)
    x.index = x.index.astype(str)
    x.index.name = "sample_id"
    obs = clin[ends].copy()
    obs.index = x.index
    return x, obs


def simulate_cohort(
    seed: int, n: int = 2043, min_carriers: int = 0, clinical: list[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulated stand-in: MDS binaries (data stage simulator) + clinical covariates, OS/LFS from a
    Cox model with Weibull baseline (linear in BM_BLAST, AGE, HB, PLT, CYTO_IPSSR and 6 genes),
    about 30 % OS events. Same column names as the IPSS-M cohort; ``clinical`` (config
    ``survival.clinical``; None = all of :data:`~.names.SIMULATED_COVARIATES`) selects the
    covariates, as for IPSS-M (issue 30 item 2); the outcomes do not depend on it."""
    feats, _ = simulate_mds(seed=seed, n_samples=n, nan_rate=0.02)
    g = make_rng(seed, "survival", "simulate_cohort")
    clin = pd.DataFrame(
        {
            "AGE": np.clip(g.normal(72, 10, n), 20, 95),
            "SEX": (g.random(n) < 0.6).astype(float),
            "BM_BLAST": np.round(np.clip(g.gamma(1.2, 4.0, n), 0, 19), 0),
            "HB": np.clip(g.normal(10, 1.8, n), 4, 16),
            "PLT": np.clip(g.lognormal(4.8, 0.8, n), 5, 900),
            "ANC": np.clip(g.lognormal(0.6, 0.8, n), 0.05, 20),
            "CYTO_IPSSR": g.choice(5, n, p=[0.05, 0.68, 0.12, 0.08, 0.07]).astype(float),
        },
        index=feats.index,
    )
    extra = make_rng(seed, "survival", "simulate_cohort", "extra")  # added later: own stream
    clin = clin.assign(
        PB_BLAST=np.round(np.clip(extra.gamma(0.6, 2.0, n), 0, 19), 0),
        WBC=np.clip(extra.lognormal(1.2, 0.5, n), 0.2, 13),
        MONOCYTES=np.clip(extra.lognormal(-1.2, 0.8, n), 0.0, 6.4),
        complex=(extra.random(n) < 0.09).astype(float),
    )
    b = feats.fillna(0.0)
    genes = {"TP53": 1.0, "ASXL1": 0.5, "RUNX1": 0.5, "EZH2": 0.4, "SF3B1": -0.5, "SRSF2": 0.3}
    lp = (
        0.09 * clin["BM_BLAST"]
        + 0.03 * (clin["AGE"] - 72)
        - 0.15 * (clin["HB"] - 10)
        - 0.3 * np.log(clin["PLT"] / 120)
        + 0.35 * clin["CYTO_IPSSR"]
        + sum(w * b[k] for k, w in genes.items() if k in b)
    ).to_numpy()
    shape = 1.2
    t_death = 9.0 * np.exp(-lp / shape) * g.weibull(shape, n)
    t_aml = 12.0 * np.exp(-lp / shape) * g.weibull(shape, n)
    censor = g.uniform(0.2, 6.0, n)
    lfs = np.minimum(t_death, t_aml)
    obs = pd.DataFrame(
        {
            "OS_YEARS": np.round(np.minimum(t_death, censor), 4),
            "OS_STATUS": (t_death <= censor).astype(int),
            "LFS_YEARS": np.round(np.minimum(lfs, censor), 4),
            "LFS_STATUS": (lfs <= censor).astype(int),
        },
        index=feats.index,
    )
    feats = feats.loc[:, feats.sum(axis=0, skipna=True) >= min_carriers]
    wanted = list(SIMULATED_COVARIATES if clinical is None else clinical)
    unknown = [c for c in wanted if c not in clin.columns]
    if unknown:
        raise ConfigError(
            f"the simulated survival cohort has no covariate {', '.join(map(repr, unknown))}",
            where="survival.clinical",
            fix=f"use only: {', '.join(SIMULATED_COVARIATES)}",
        )
    x = pd.concat([clin[wanted], feats], axis=1)
    x.index.name = "sample_id"
    obs.index.name = "sample_id"
    return x, obs


def select_endpoint(x: pd.DataFrame, obs: pd.DataFrame, endpoint: str, where: str):
    """Rows with a known endpoint: (covariates, time, event, n_dropped). Negative times, status
    other than 0/1: :class:`InputDataError`."""
    if endpoint not in ENDPOINTS:
        raise InputDataError(
            f"unknown endpoint {endpoint!r}", where=where, fix=f"one of {', '.join(ENDPOINTS)}"
        )
    t = pd.to_numeric(obs[f"{endpoint}_YEARS"], errors="coerce")
    e = pd.to_numeric(obs[f"{endpoint}_STATUS"], errors="coerce")
    keep = t.notna() & e.notna()
    check_survival(t[keep].to_numpy(float), e[keep].to_numpy(float), where)
    return (
        x.loc[keep],
        t[keep].to_numpy(float),
        e[keep].to_numpy(float).astype(int),
        int((~keep).sum()),
    )


def check_covariates(x, n: int, where: str) -> np.ndarray:
    """A centre's covariates: 2-D, one row per patient, finite (else InputDataError; a NaN
    made a Cox fit 'not converge' or a model train on NaN, issue 30 C)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or len(x) != n:
        raise InputDataError(f"covariates of shape {x.shape} for {n} patients", where=where,
                             fix="one covariate row per patient (2-D)")  # fmt: skip
    if not np.isfinite(x).all():
        raise InputDataError(
            f"{int((~np.isfinite(x)).sum())} covariate value(s) missing or infinite",
            where=where, fix="impute or drop them before the survival model",
        )  # fmt: skip
    return x


def check_survival(time, event, where: str) -> None:
    """Times finite and ≥ 0, events 0/1: else :class:`InputDataError` naming ``where``."""
    t, e = np.asarray(time, dtype=float), np.asarray(event, dtype=float)
    if t.shape != e.shape:
        raise InputDataError("survival times and event flags differ in length", where=where)
    if not np.isfinite(t).all():
        raise InputDataError(
            f"{int((~np.isfinite(t)).sum())} survival time(s) are missing or infinite",
            where=where,
            fix="drop patients without a follow-up time before the survival analysis",
        )
    if (t < 0).any():
        raise InputDataError(
            f"{int((t < 0).sum())} survival time(s) are negative (min {t.min():g})",
            where=where,
            fix="times are follow-up durations (years since diagnosis) and must be ≥ 0",
        )
    bad = set(np.unique(e[np.isfinite(e)])) - {0.0, 1.0}
    if bad or not np.isfinite(e).all():
        raise InputDataError(
            "event flags must be 0 (censored) or 1 (event)"
            + (f", found {sorted(bad)}" if bad else ", found missing values"),
            where=where,
        )


@dataclass
class Preprocess:
    """Imputation values and min-max scaling fitted on the training part."""

    columns: list[str]
    fill: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def transform(self, x: pd.DataFrame) -> np.ndarray:
        v = x[self.columns].to_numpy(dtype=float)
        v = np.where(np.isnan(v), self.fill[None, :], v)
        return ((v - self.lo) / (self.hi - self.lo)).astype(np.float32)


def fit_preprocess(x_train: pd.DataFrame, where: str) -> Preprocess:
    """Binary columns (values ⊂ {0, 1}): NaN → frequency of ones; others: NaN → median. Then
    min-max to [0, 1] on the training part. A covariate constant (or all NaN) on the training
    part is an error (min-max would divide by zero)."""
    v = x_train.to_numpy(dtype=float)
    allnan = np.isnan(v).all(axis=0)
    if allnan.any():
        cols = list(x_train.columns[allnan])
        raise InputDataError(
            f"covariate(s) {', '.join(cols)} have no value in the training part",
            where=where,
            fix="drop them from survival.clinical or raise survival.min_carriers",
        )
    binary = np.array([set(np.unique(c[~np.isnan(c)])) <= {0.0, 1.0} for c in v.T])
    fill = np.where(binary, np.nanmean(v, axis=0), np.nanmedian(v, axis=0))
    filled = np.where(np.isnan(v), fill[None, :], v)
    lo, hi = filled.min(axis=0), filled.max(axis=0)
    const = hi <= lo
    if const.any():
        cols = list(x_train.columns[const])
        raise InputDataError(
            f"covariate(s) {', '.join(map(str, cols))} are constant in the training part after "
            "the split: min-max scaling is undefined",
            where=where,
            fix="drop them (survival.clinical) or raise survival.min_carriers so rare binary "
            "covariates are left out",
        )
    return Preprocess(list(x_train.columns), fill, lo, hi)


PREPROCESS_MODES = ("pooled", "federated")


def fit_preprocess_federated(
    x_train: pd.DataFrame,
    centre: np.ndarray,
    where: str,
    min_samples: int = 3,
    bins: int = 50,
    transport=None,
    ledger=None,
    disclosure=None,
) -> Preprocess:
    """:func:`fit_preprocess` from the centres' summaries (issue 23; ``survival.preprocess:
    federated``): binary columns (0/1 at every reporting centre) → frequency of ones (a ratio
    of sums, exact) and scaled by 0 → 0, 1 → 1 as pooled; other columns → the median from
    binned counts and min–max on the range of the non-empty bins of the suppressed histogram
    (:mod:`fedclust.data.fedpreprocess.tabular`: no single patient's value is disclosed, so
    the range is the outer edges of bins that ≥ floor patients of a centre share)."""
    from fedclust.data.fedpreprocess.protocols import Protocols
    from fedclust.data.fedpreprocess.server import Rounds
    from fedclust.data.fedpreprocess.tabular import TableCentre, column_stats_server, no_report
    from fedclust.federation import INPROCESS, Ledger, federate

    centre = np.asarray(centre)
    v = x_train.to_numpy(dtype=float)
    centres = [TableCentre(f"centre{k}", v[centre == k], None, min_samples, disclosure)
               for k in sorted(np.unique(centre).tolist())]  # fmt: skip
    protos = Protocols(min_samples)

    def server(proxies):
        r = Rounds(proxies)
        st = column_stats_server(proxies, v.shape[1], protocols=protos, rounds=r)
        cont = np.flatnonzero(~st.binary & (st.n_obs > 0))
        st = column_stats_server(proxies, v.shape[1], binned=cont, bins=bins, protocols=protos,
                                 rounds=r)  # fmt: skip
        return st

    st = federate(centres, server, ledger=ledger if ledger is not None else Ledger(),
                  transport=transport if transport is not None else INPROCESS)  # fmt: skip
    none = st.n_obs == 0
    if none.any():
        raise no_report(list(x_train.columns[none]), where)
    median = st.quantile(0.5)
    rlo, rhi = st.range()
    fill = np.where(st.binary, st.mean, median)
    lo = np.where(st.binary, np.where(st.mean < 1, 0.0, 1.0), np.minimum(rlo, fill))
    hi = np.where(st.binary, np.where(st.mean > 0, 1.0, 0.0), np.maximum(rhi, fill))
    const = hi <= lo
    if const.any():
        cols = list(x_train.columns[const])
        raise InputDataError(
            f"covariate(s) {', '.join(map(str, cols))} are constant in the training part (as "
            "far as the centres' summaries show): min-max scaling is undefined",
            where=where,
            fix="drop them (survival.clinical) or raise survival.min_carriers",
        )
    return Preprocess(list(x_train.columns), fill, lo, hi)


def preprocess_difference(pooled: Preprocess, fed: Preprocess, x: pd.DataFrame) -> pd.DataFrame:
    """Per covariate: pooled vs federated fill, lo, hi, and the largest difference of the
    scaled values on ``x`` (the report's 'difference to pooled')."""
    a, b = pooled.transform(x), fed.transform(x)
    return pd.DataFrame(
        {
            "covariate": pooled.columns,
            "fill_pooled": pooled.fill,
            "fill_federated": fed.fill,
            "lo_pooled": pooled.lo,
            "lo_federated": fed.lo,
            "hi_pooled": pooled.hi,
            "hi_federated": fed.hi,
            "max_abs_scaled_diff": np.abs(a.astype(float) - b.astype(float)).max(axis=0),
        }
    )
