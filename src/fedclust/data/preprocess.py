"""RNA-seq preprocessing through pydeseq2 (seed 001 §2) and binary NaN imputation (seed 000 §2.3).

* :func:`size_factors` / :func:`size_factor_normalise`: DESeq2 median of ratios
  (``DeseqDataSet.fit_size_factors``): s_i = median_j X_ij / (geometric mean of gene j), genes
  with a zero count excluded; normalised counts X_ij / s_i.
* :func:`vst`: pydeseq2's variance-stabilising transform (log2 scale, dispersion-mean trend fitted).
  ``fit_genes=N`` reproduces DESeq2's ``vst(nsub=N)``: genewise dispersions and the parametric
  trend are fitted (pydeseq2) on a seeded random subset of N genes with mean normalised count
  > 5, and the closed-form transform (pydeseq2 ``vst_transform``) is applied to every gene with
  the size factors of all genes — TCGA-size cohorts in seconds instead of minutes.
* :func:`top_variable_genes`: the N genes with the largest VST variance (a fedclust option).
* :func:`impute_binary_frequency`: NaN → frequency of ones in the column (NaNs excluded).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputDataError
from ..seeds import rng

log = logging.getLogger(__name__)


def check_counts(counts: pd.DataFrame, where: str = "counts") -> pd.DataFrame:
    """Samples × genes non-negative integer counts, at least two samples; clear errors otherwise."""
    if not isinstance(counts, pd.DataFrame):
        raise InputDataError("counts must be a pandas DataFrame (samples × genes)", where=where)
    if counts.shape[0] < 2 or counts.shape[1] < 1:
        raise InputDataError(
            f"counts have shape {counts.shape}; need at least 2 samples and 1 gene",
            where=where,
            fix="check the input matrix orientation (rows = samples, columns = genes)",
        )
    values = counts.to_numpy()
    if values.dtype.kind in "iu":  # integer columns: finite and whole by type (fast path)
        if values.dtype.kind == "i" and (values < 0).any():
            raise InputDataError(
                f"counts hold {int((values < 0).sum())} negative values",
                where=where,
                fix="use raw, non-negative integer counts",
            )
        _check_some_gene_positive(values, where)
        return counts.astype(np.int64, copy=False)
    values = values.astype(float)
    if not np.isfinite(values).all():
        raise InputDataError(
            "counts hold NaN or infinite values", where=where, fix="raw counts have no NaN"
        )
    if (values < 0).any():
        raise InputDataError(
            f"counts hold {int((values < 0).sum())} negative values",
            where=where,
            fix="use raw, non-negative integer counts",
        )
    if not np.array_equal(values, np.round(values)):
        raise InputDataError(
            "counts hold non-integer values",
            where=where,
            fix="use raw integer counts (not TPM/FPKM or already normalised data)",
        )
    _check_some_gene_positive(values, where)
    return counts.astype(np.int64)


def _check_some_gene_positive(values: np.ndarray, where: str) -> None:
    if not (values > 0).all(axis=0).any():
        raise InputDataError(
            "every gene has a zero count in some sample: median-of-ratios size factors are "
            "undefined",
            where=where,
            fix="check the input (too few genes or samples?)",
        )


def _dds(counts: pd.DataFrame, n_cpus: int = 1):
    from pydeseq2.dds import DeseqDataSet

    counts = check_counts(counts)
    meta = pd.DataFrame({"condition": ["A"] * len(counts)}, index=counts.index)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DeseqDataSet(counts=counts, metadata=meta, design="~1", quiet=True, n_cpus=n_cpus)


def size_factors(counts: pd.DataFrame) -> pd.Series:
    """Median-of-ratios size factors per sample (pydeseq2 ``fit_size_factors``)."""
    dds = _dds(counts)
    dds.fit_size_factors()
    return pd.Series(np.asarray(dds.obs["size_factors"]), index=counts.index, name="size_factor")


def size_factor_normalise(counts: pd.DataFrame) -> pd.DataFrame:
    """Size-factor normalised counts X_ij / s_i (pydeseq2 median of ratios), same shape."""
    sf = size_factors(counts)
    return counts.astype(float).div(sf, axis=0)


VST_MIN_MEAN = 5.0  # DESeq2 vst(): subset genes are drawn among those with baseMean > 5


VST_FIT_POOLS = ("mean5", "nonzero")


@dataclass
class VstFit:
    """What pydeseq2's (blind) VST fit computed: the pooled reference of every federated step
    (:mod:`fedclust.data.fedpreprocess`). Gene positions refer to the columns of the counts."""

    size_factors: np.ndarray  # (n,) median of ratios
    logmeans: np.ndarray  # (G,) per-gene mean log count (−inf: a zero count)
    normed_means: np.ndarray  # (G,) mean size-factor normalised count
    fit_idx: np.ndarray  # genes the dispersions and the trend were fitted on
    dispersions: np.ndarray  # genewise VST dispersions of fit_idx (NaN: all-zero gene)
    converged: np.ndarray  # per fit gene: L-BFGS-B converged (else pydeseq2's grid search)
    coeffs: np.ndarray | None  # (a0, a1) of the parametric trend, None: mean fallback
    mean_disp: float | None  # the mean-dispersion fallback (pydeseq2 ``fit_type="mean"``)
    values: np.ndarray  # (n, G) VST of every gene


def vst_fit(dds, fit_genes: int | None, seed: int, fit_pool: str = "mean5") -> VstFit:
    """pydeseq2's VST of every gene of ``dds`` with its internals (:class:`VstFit`); dispersion
    trend fitted on ``fit_genes`` genes drawn from ``fit_pool``: ``mean5`` (DESeq2 vst(nsub):
    mean normalised count > 5) or ``nonzero`` (every gene with a nonzero count: the genes full
    pydeseq2 fits its trend on, so the subset trend is an unbiased estimate of pydeseq2's)."""
    if fit_pool not in VST_FIT_POOLS:
        raise ValueError(f"vst fit_pool must be one of {VST_FIT_POOLS}, got {fit_pool!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dds.fit_size_factors()
        normed = np.asarray(dds.layers["normed_counts"])
        means = normed.mean(axis=0)
        sf = np.asarray(dds.obs["size_factors"], dtype=float)
        logmeans = np.asarray(dds.logmeans, dtype=float)
        candidates = vst_fit_candidates(means, fit_pool)
        if fit_genes is None or len(candidates) <= fit_genes:
            if fit_genes is not None:
                log.info(
                    "vst fit_genes=%d: only %d genes with mean > %g, fitting on all genes",
                    fit_genes,
                    len(candidates),
                    VST_MIN_MEAN,
                )
            dds.vst(use_design=False)
            parametric = dds.vst_fit_type == "parametric"
            return VstFit(
                sf,
                logmeans,
                means,
                np.arange(dds.n_vars),
                np.asarray(dds.var["vst_genewise_dispersions"], dtype=float),
                np.asarray(dds.var["_genewise_converged"].fillna(True), dtype=bool),
                np.asarray(dds.uns["vst_trend_coeffs"], dtype=float) if parametric else None,
                None if parametric else float(dds.uns["mean_disp"]),
                np.asarray(dds.layers["vst_counts"]),
            )
        idx = vst_fit_subset(candidates, fit_genes, seed)
        sub = _dds(
            pd.DataFrame(dds.X[:, idx], index=dds.obs_names, columns=dds.var_names[idx]),
            n_cpus=1,  # 1000 genes: worker start-up costs more than it saves (measured)
        )
        sub.obs["size_factors"] = sf  # size factors of all genes, as DESeq2 vst(nsub)
        sub.layers["normed_counts"] = normed[:, idx]
        sub.var["_normed_means"] = normed[:, idx].mean(axis=0)
        sub.logmeans = dds.logmeans[idx]
        sub.filtered_genes = dds.filtered_genes[idx]
        sub.fit_genewise_dispersions(vst=True)
        sub._fit_parametric_dispersion_trend(vst=True)
        disp = np.asarray(sub.var["vst_genewise_dispersions"], dtype=float)
        conv = np.asarray(sub.var["_genewise_converged"].fillna(True), dtype=bool)
        if "vst_trend_coeffs" in sub.uns:
            dds.uns["vst_trend_coeffs"] = sub.uns["vst_trend_coeffs"]
            dds.vst_fit_type = "parametric"
            coeffs = np.asarray(sub.uns["vst_trend_coeffs"], dtype=float)
            return VstFit(sf, logmeans, means, idx, disp, conv, coeffs, None,
                          np.asarray(dds.vst_transform()))  # fmt: skip
        # pydeseq2 fell back to a mean dispersion: its closed form with the subset's mean
        log.warning("VST trend did not converge on the subset: mean-dispersion VST")
        from scipy.stats import trim_mean

        mean_disp = float(trim_mean(disp[disp > 10 * sub.min_disp], proportiontocut=0.001))
        return VstFit(sf, logmeans, means, idx, disp, conv, None, mean_disp,
                      vst_closed_form(normed, None, mean_disp))  # fmt: skip


def vst_fit_candidates(normed_means: np.ndarray, fit_pool: str) -> np.ndarray:
    """Genes the VST trend subset is drawn from (positions): mean normalised count > 5
    (``mean5``, DESeq2 vst(nsub)) or > 0 (``nonzero``)."""
    if fit_pool not in VST_FIT_POOLS:
        raise ValueError(f"vst fit_pool must be one of {VST_FIT_POOLS}, got {fit_pool!r}")
    return np.flatnonzero(normed_means > (VST_MIN_MEAN if fit_pool == "mean5" else 0.0))


def vst_fit_subset(candidates: np.ndarray, fit_genes: int, seed: int) -> np.ndarray:
    """The seeded subset of ``fit_genes`` candidates (sorted positions)."""
    return np.sort(rng(seed, "vst subset").choice(candidates, fit_genes, replace=False))


def vst_closed_form(
    normed: np.ndarray, coeffs: np.ndarray | None, mean_disp: float | None = None
) -> np.ndarray:
    """pydeseq2 ``vst_transform`` of normalised counts: the parametric trend (a0, a1) or, when
    ``coeffs`` is None, the mean-dispersion closed form (same expressions as pydeseq2 0.5)."""
    if coeffs is not None:
        a0, a1 = coeffs
        return np.log2(
            (1 + a1 + 2 * a0 * normed + 2 * np.sqrt(a0 * normed * (1 + a1 + a0 * normed)))
            / (4 * a0)
        )
    asinh = 2 * np.arcsinh(np.sqrt(mean_disp * normed))
    return (asinh - np.log(mean_disp) - np.log(4)) / np.log(2)


def _vst_fit_transform(
    dds, fit_genes: int | None, seed: int, fit_pool: str = "mean5"
) -> np.ndarray:
    """VST values of every gene of ``dds`` (:func:`vst_fit`)."""
    return vst_fit(dds, fit_genes, seed, fit_pool).values


def vst(
    counts: pd.DataFrame, fit_genes: int | None = None, seed: int = 0, fit_pool: str = "mean5"
) -> pd.DataFrame:
    """pydeseq2 variance-stabilising transform (blind to design), samples × genes, log2 scale.

    ``fit_genes``: fit the dispersion trend on that many random genes (DESeq2 ``vst(nsub)``,
    seeded by ``seed``); ``None`` = pydeseq2 on all genes.
    """
    dds = _dds(counts)
    values = _vst_fit_transform(dds, fit_genes, seed, fit_pool)
    return pd.DataFrame(values, index=counts.index, columns=counts.columns)


def top_variable_genes(vst_values: pd.DataFrame, n: int | None) -> list[str]:
    """The ``n`` genes with the largest VST variance (ties by name; ``None`` = all genes),
    in their column order."""
    if n is None or n >= vst_values.shape[1]:
        return list(vst_values.columns)
    var = vst_values.var(axis=0, ddof=1).to_numpy()
    names = np.asarray(vst_values.columns.astype(str))
    order = np.lexsort((names, -var))  # by variance descending, then name
    return list(vst_values.columns[np.sort(order[:n])])


def preprocess_rnaseq(
    counts: pd.DataFrame,
    top_genes: int | None,
    n_cpus: int = 1,
    vst_fit_genes: int | None = None,
    seed: int = 0,
    vst_fit_pool: str = "mean5",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(size-factor normalised, VST) restricted to the top-N genes by VST variance.

    One size-factor fit serves both outputs; ``vst_fit_genes`` as in :func:`vst`.
    """
    dds = _dds(counts, n_cpus=n_cpus)
    v = pd.DataFrame(
        _vst_fit_transform(dds, vst_fit_genes, seed, vst_fit_pool),
        index=counts.index,
        columns=counts.columns,
    )
    s = np.asarray(dds.obs["size_factors"])
    genes = top_variable_genes(v, top_genes)
    sf = counts.astype(float).div(s, axis=0)
    return sf[genes], v[genes]


def impute_binary_frequency(
    x: pd.DataFrame, where: str = "features"
) -> tuple[pd.DataFrame, pd.Series]:
    """Replace NaN by the column's frequency of ones among its 0/1 entries (seed 000 §2.3).

    Returns the imputed frame and the number of NaNs imputed per column. A column that is all
    NaN has no frequency and is an error; values other than 0/1/NaN are an error.
    """
    values = x.to_numpy(dtype=float)
    ok = np.isnan(values) | (values == 0) | (values == 1)
    if not ok.all():
        col = x.columns[np.argwhere(~ok)[0][1]]
        raise InputDataError(
            f"column '{col}' holds values other than 0, 1 or NaN",
            where=where,
            fix="binary features must be coded 0 = absent, 1 = present, NaN = not measured",
        )
    n_nan = x.isna().sum()
    all_nan = list(n_nan.index[n_nan == len(x)])
    if all_nan:
        raise InputDataError(
            f"column(s) {', '.join(map(str, all_nan))} are entirely NaN: no frequency to impute",
            where=where,
            fix="drop those columns from the feature list",
        )
    freq = x.mean(axis=0, skipna=True)
    return x.fillna(freq).astype(float), n_nan
