"""The stage's inputs as arrays: loaders (the data stage's MNIST, heart and RNA-seq tables; the
MDS cohort through :mod:`fedclust.survival.cohort`), federated-ready standardisation and the
poor node's corruption (D6.2 §6.6.2: a fraction r of the entries replaced by binary noise)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError, InputDataError

from .likelihoods import FeatureSpec, infer_spec


@dataclass
class Tabular:
    """Samples × features in the data's own units (NaN = missing), labels, optional survival."""

    x: np.ndarray
    names: list[str]
    spec: FeatureSpec
    y: np.ndarray | None = None
    t: np.ndarray | None = None
    d: np.ndarray | None = None
    groups: np.ndarray | None = None
    source: str = ""
    ids: list[str] = field(default_factory=list)

    def rows(self, idx: np.ndarray) -> Tabular:
        def take(a):
            return None if a is None else a[idx]

        return Tabular(
            self.x[idx],
            self.names,
            self.spec,
            take(self.y),
            take(self.t),
            take(self.d),
            take(self.groups),
            self.source,
            [self.ids[i] for i in idx] if self.ids else [],
        )

    def columns(self, cols: Sequence[int]) -> Tabular:
        cols = list(cols)
        return Tabular(
            self.x[:, cols],
            [self.names[c] for c in cols],
            self.spec.subset(cols),
            self.y,
            self.t,
            self.d,
            self.groups,
            self.source,
            self.ids,
        )

    @property
    def n(self) -> int:
        return int(self.x.shape[0])


# ------------------------------------------------------------------------------------ loaders
def _read_features(features: str, obs: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    x = pd.read_parquet(features)
    o = pd.read_csv(obs, sep="\t", index_col=0)
    x.index, o.index = x.index.astype(str), o.index.astype(str)
    if not x.index.equals(o.index):
        o = o.reindex(x.index)
    return x, o


def load_mnist(features: str, obs: str, source: str) -> Tabular:
    """The data stage's MNIST table (pixels in [0, 1]: bernoulli columns), digit labels."""
    x, o = _read_features(features, obs)
    if "label" not in o:
        raise InputDataError("no 'label' column", where=obs, fix="rebuild the data stage's mnist")
    v = x.to_numpy(np.float32)
    spec = FeatureSpec.all("bernoulli", v.shape[1], list(x.columns))
    return Tabular(
        v,
        list(x.columns),
        spec,
        o["label"].astype(int).to_numpy(),
        source=source,
        ids=list(x.index),
    )


def load_mds(cfg: dict, seed: int, files: dict | None, source: str) -> Tabular:
    """The MDS cohort (real IPSS-M when ``files`` holds df_clinical/df_mut/df_cna, else the
    survival stage's simulated stand-in): clinical covariates + binary lesions, the OS endpoint,
    and the label column (``cfg['label']``, D6.2: SF3B1) taken out of the features."""
    from fedclust.survival.cohort import load_ipssm_survival, simulate_cohort

    if files:
        x, obs = load_ipssm_survival(
            files["clinical"],
            files["mut"],
            files["cna"],
            list(cfg["clinical"]),
            int(cfg["min_carriers"]),
        )
    else:
        x, obs = simulate_cohort(seed, int(cfg["simulate_n"]), int(cfg["min_carriers"]))
        x = x[[c for c in x.columns if c in cfg["clinical"] or c not in _SIM_CLINICAL]]
    label = str(cfg["label"] if files else (cfg.get("simulated_label") or cfg["label"]))
    if label not in x.columns:
        raise ConfigError(
            f"label column {label!r} is not in the MDS cohort",
            where="generative.mds.label",
            fix=f"one of the binary lesions, e.g. {list(x.columns)[-5:]}",
        )
    t = pd.to_numeric(obs["OS_YEARS"], errors="coerce")
    e = pd.to_numeric(obs["OS_STATUS"], errors="coerce")
    keep = (t.notna() & e.notna() & x[label].notna()).to_numpy()
    x, t, e = x.loc[keep], t[keep].to_numpy(float), e[keep].to_numpy(int)
    y = x.pop(label).to_numpy(int)
    for col in cfg.get("log1p", []):
        if col in x:
            x[col] = np.log1p(x[col].astype(float))
    t = np.maximum(t, float(cfg["time_floor"]))
    v = x.to_numpy(np.float64)
    spec = infer_spec(v, list(x.columns), cfg.get("categorical", []))
    return Tabular(
        v, list(x.columns), spec, y, t, e, source=f"{source}; label {label}", ids=list(x.index)
    )


_SIM_CLINICAL = ("AGE", "SEX", "BM_BLAST", "HB", "PLT", "ANC", "CYTO_IPSSR")


def load_heart(features: str, obs: str, group: str, source: str) -> Tabular:
    """The data stage's heart table: 20 features, ``HeartDisease`` label, centre = ``group``."""
    x, o = _read_features(features, obs)
    for col in ("HeartDisease", group):
        if col not in o:
            raise InputDataError(
                f"no {col!r} column",
                where=obs,
                fix="rebuild results/data/heart with the data stage",
            )
    v = x.to_numpy(np.float64)
    spec = infer_spec(v, list(x.columns))
    return Tabular(
        v,
        list(x.columns),
        spec,
        o["HeartDisease"].astype(int).to_numpy(),
        groups=o[group].astype(str).to_numpy(),
        source=source,
        ids=list(x.index),
    )


def load_rnaseq(
    vst: Sequence[str],
    obs: Sequence[str],
    cohorts: Sequence[str],
    label: str,
    max_genes: int | None,
    group: str,
    source: str,
) -> Tabular:
    """VST matrices of one or more cohorts (gaussian columns). One cohort: ``label`` from its
    obs (simulated cohorts: ``true_cluster``); several: the genes all share, label = cohort.
    ``max_genes``: the most variable genes (pooled variance: preprocessing, as the data stage's
    top-N genes). Centres from the obs column ``group`` (the TSS region, ``center``)."""
    xs, labels, groups = [], [], []
    for path, opath, cohort in zip(vst, obs, cohorts, strict=True):
        x, o = _read_features(path, opath)
        if group not in o:
            raise InputDataError(f"no {group!r} column", where=opath)
        xs.append(x)
        groups.append(o[group].astype(str).to_numpy())
        if len(cohorts) == 1:
            if label not in o:
                raise InputDataError(
                    f"no {label!r} column for the representation's reference clusters",
                    where=opath,
                    fix="set generative.dgd.rnaseq.label to an obs column, or give "
                    "several cohorts (the cohort is then the label)",
                )
            labels.append(o[label].astype(str).to_numpy())
        else:
            labels.append(np.full(len(x), cohort))
    genes = list(xs[0].columns)
    for x in xs[1:]:
        genes = [g for g in genes if g in set(x.columns)]
    if not genes:
        raise InputDataError("the cohorts share no gene", where=", ".join(vst))
    v = np.concatenate([x[genes].to_numpy(np.float64) for x in xs])
    if max_genes is not None and v.shape[1] > int(max_genes):
        keep = np.sort(np.argsort(-np.nanvar(v, axis=0), kind="stable")[: int(max_genes)])
        v, genes = v[:, keep], [genes[i] for i in keep]
    lab = np.concatenate(labels)
    codes = pd.Categorical(lab).codes.astype(int)
    ids = [i for x in xs for i in x.index]
    return Tabular(
        v,
        genes,
        FeatureSpec.all("gaussian", v.shape[1], genes),
        codes,
        groups=np.concatenate(groups),
        source=source,
        ids=ids,
    )


# ---------------------------------------------------------------------------- standardisation
@dataclass(frozen=True)
class Scaler:
    """Gaussian columns standardised (x − mean) / sd; other columns unchanged. NaN → 0 after
    scaling (the column mean; the mask says the entry is missing)."""

    mean: np.ndarray
    sd: np.ndarray

    def transform(self, x: np.ndarray) -> np.ndarray:
        v = (np.asarray(x, float) - self.mean[None, :]) / self.sd[None, :]
        return np.nan_to_num(v, nan=0.0).astype(np.float32)

    def inverse(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(v, float) * self.sd[None, :] + self.mean[None, :]


def local_moments(x: np.ndarray, mask: np.ndarray, spec: FeatureSpec) -> dict[str, np.ndarray]:
    """Per-column sums, sums of squares and counts over the observed entries of the gaussian
    columns (zeros elsewhere): the ``generative_moments`` message."""
    g = np.array([k == "gaussian" for k in spec.kinds])
    m = (np.asarray(mask) > 0) & ~np.isnan(x) & g[None, :]
    v = np.where(m, np.nan_to_num(x), 0.0)
    return {"sum": v.sum(0), "sumsq": (v**2).sum(0), "n": m.sum(0).astype(np.int64)}


def scaler_from_moments(parts: Sequence[dict], spec: FeatureSpec) -> Scaler:
    """Mean and SD (population) of the gaussian columns from summed moments."""
    g = np.array([k == "gaussian" for k in spec.kinds])
    s = sum(np.asarray(p["sum"], float) for p in parts)
    ss = sum(np.asarray(p["sumsq"], float) for p in parts)
    n = sum(np.asarray(p["n"], float) for p in parts)
    mean = np.where(g & (n > 0), s / np.maximum(n, 1), 0.0)
    var = np.where(g & (n > 0), ss / np.maximum(n, 1) - mean**2, 1.0)
    sd = np.sqrt(np.maximum(var, 0.0))
    sd = np.where(g & (sd > 1e-8), sd, 1.0)
    return Scaler(mean, sd)


def fit_scaler(x: np.ndarray, mask: np.ndarray, spec: FeatureSpec) -> Scaler:
    """The scaler of one data set (an isolated node, the pooled baseline)."""
    return scaler_from_moments([local_moments(x, mask, spec)], spec)


# --------------------------------------------------------------------------------- corruption
def corrupt(
    x: np.ndarray,
    mask: np.ndarray,
    r: float,
    spec: FeatureSpec,
    gen: np.random.Generator,
    fill: str = "noise",
) -> tuple[np.ndarray, np.ndarray]:
    """D6.2 §6.6.2's poor node: in every row, round(r·p) entries chosen at random become
    missing (mask 0) and are replaced by noise — binary noise for bernoulli columns, a uniform
    category for categorical ones, N(mean, sd) of the column's observed values for gaussian
    ones (``fill="noise"``, D6.2) — or left empty (``fill="zero"``: NaN, the column mean after
    scaling; HI-VAE's zero fill). Returns (corrupted values, mask)."""
    if not 0.0 <= r < 1.0:
        raise ConfigError(f"corruption rate {r} must be in [0, 1)", where="generative rates")
    n, p = x.shape
    k = int(round(r * p))
    out, m = np.array(x, dtype=float, copy=True), np.array(mask, dtype=np.float32, copy=True)
    hit = np.zeros((n, p), dtype=bool)
    if k:
        keys = gen.random((n, p))
        cols = np.argpartition(keys, k - 1, axis=1)[:, :k]
        hit[np.arange(n)[:, None], cols] = True
    m[hit] = 0.0
    if fill == "zero":
        out[hit] = np.nan
        return out, m
    if fill != "noise":
        raise ConfigError(
            f"unknown fill {fill!r}", where="generative.savae.fill", fix="noise (D6.2) or zero"
        )
    noise = np.empty((n, p))
    for j, (kind, c) in enumerate(zip(spec.kinds, spec.n_cats, strict=True)):
        if kind == "bernoulli":
            noise[:, j] = gen.integers(0, 2, n)
        elif kind == "categorical":
            noise[:, j] = gen.integers(0, c, n)
        else:
            obs = x[~np.isnan(x[:, j]), j]
            mu, sd = (obs.mean(), obs.std()) if obs.size else (0.0, 1.0)
            noise[:, j] = gen.normal(mu, sd if sd > 0 else 1.0, n)
    out[hit] = noise[hit]
    return out, m


def observed(x: np.ndarray) -> np.ndarray:
    """The mask of a table's own missing values (NaN → 0)."""
    return (~np.isnan(np.asarray(x, float))).astype(np.float32)


def draw_disjoint(
    n: int, sizes: Sequence[int], gen: np.random.Generator, where: str
) -> list[np.ndarray]:
    """Disjoint random index sets of the given sizes (sorted each)."""
    if sum(sizes) > n:
        raise ConfigError(
            f"asked for {sum(sizes)} samples but the data set has {n}",
            where=where,
            fix="lower the node / test sizes",
        )
    perm = gen.permutation(n)
    out, s = [], 0
    for k in sizes:
        out.append(np.sort(perm[s : s + int(k)]))
        s += int(k)
    return out
