"""Server side of federated RNA-seq preprocessing: pydeseq2's blind VST from centre summaries.

Steps (each a request to every centre through its proxy, the replies checked by the ledger):

1. ``logsum`` → the pooled log geometric means Σ_k Σ_i log x_ij / N (−inf where a count is 0);
   broadcast, every centre takes its own median of ratios (pydeseq2 ``deseq2_norm_transform``):
   the size factors equal pooled pydeseq2's.
2. ``normed_moments`` → per-gene mean and variance of the normalised counts (parallel-variance
   merge of the centres' moments) and mean 1/s: pydeseq2's normalised means, its rough and
   moments dispersions (``fit_rough_dispersions``, ``fit_moments_dispersions``) and their
   minimum, the start point of every gene's dispersion fit.
3. ``nb_terms`` rounds: pydeseq2 fits log α per gene with scipy's L-BFGS-B
   (``fit_alpha_mle``: NB log-likelihood + Cox–Reid term, bounds [log min_disp, log max_disp]).
   The loss and its derivative are sums over samples (the Cox–Reid term a function of Σ W), so
   the centres answer their shares for every gene still iterating, and the server runs scipy's
   own solver on all genes in lockstep (:mod:`.lbfgsb`): the same iterates as pooled pydeseq2
   up to summation order. Genes where L-BFGS-B does not converge get pydeseq2's grid search
   (``grid_fit_alpha``), two more rounds.
4. The parametric trend (or pydeseq2's mean-dispersion fallback) is fitted here with pydeseq2's
   own code (``DeseqDataSet._fit_parametric_dispersion_trend``) and broadcast; each centre
   applies pydeseq2's VST closed form to its rows and answers the VST moments.
5. Top-N genes by VST variance (merged moments, ddof 1; ties by gene name), broadcast.

The fast VST (``vst_fit_genes``: DESeq2 ``vst(nsub)``) runs steps 3–4 on the seeded subset
drawn from the federated normalised means, with the size factors of all genes.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import InputDataError
from fedclust.federation import call_all

from ...stats import combine_moments
from ..preprocess import VST_MIN_MEAN, vst_fit_candidates, vst_fit_subset
from . import protocols as P
from .lbfgsb import minimize_lockstep

log = logging.getLogger(__name__)
GRID_LENGTH = 100  # pydeseq2 grid_fit_alpha


@dataclass(frozen=True)
class RnaseqSettings:
    """The pooled pipeline's settings (``data.rnaseq``) plus pydeseq2's DeseqDataSet defaults."""

    top_genes: int | None = None
    vst_fit_genes: int | None = None
    vst_fit_pool: str = "mean5"
    seed: int = 0
    min_mu: float = 0.5
    min_disp: float = 1e-8
    max_disp: float = 10.0
    #: ``mle``: step 3 (pydeseq2's genewise fit); ``moments``: its start points (the MoM
    #: dispersions of step 2) without step 3's rounds (the privacy–utility stage's private run)
    dispersions: str = "mle"


@dataclass
class RnaseqFit:
    """What the server learnt (all aggregates) and decided."""

    n: int
    logmeans: np.ndarray
    normed_means: np.ndarray
    normed_var: np.ndarray
    expressed: np.ndarray  # positions of genes with a nonzero count
    fit_idx: np.ndarray  # genes the dispersions and the trend are fitted on
    alpha_hat: np.ndarray  # start points (pydeseq2's MoM dispersions)
    dispersions: np.ndarray  # genewise VST dispersions of fit_idx
    converged: np.ndarray
    coeffs: np.ndarray | None
    mean_disp: float | None
    vst_var: np.ndarray  # VST variance of the expressed genes
    selected: np.ndarray  # positions of the top-N genes (column order)
    nb_rounds: int = 0
    participants: list[str] = field(default_factory=list)


class Rounds:
    """Round counter and the one request helper (every proxy, abstentions dropped)."""

    def __init__(self, proxies: Sequence[Any]):
        self.proxies, self.round = list(proxies), 0

    def ask(self, method, request, kind, up, down, proxies=None) -> list[tuple[Any, dict]]:
        """``request`` to every centre (or ``proxies``), sent all at once where the transport
        can (a deployment's centres answer in parallel): (proxy, reply) of those that answered."""
        self.round += 1
        ps = list(self.proxies if proxies is None else proxies)
        replies = call_all(ps, method, request, self.round, kind, up, down)
        return [(p, m) for p, m in zip(ps, replies, strict=True) if m is not None]


def merge_moments(msgs: Sequence[dict]) -> tuple[int, np.ndarray, np.ndarray]:
    """(n, mean, centred sum of squares) of the union: the parallel-variance merge (Chan et
    al.) of :mod:`fedclust.hac.genewise`."""
    n, mean, m2 = int(msgs[0]["n"]), P.from_row(msgs[0]["mean"]), P.from_row(msgs[0]["m2"])
    for m in msgs[1:]:
        n, mean, m2 = combine_moments(n, mean, m2, int(m["n"]), P.from_row(m["mean"]),
                                      P.from_row(m["m2"]))  # fmt: skip
    return int(n), np.asarray(mean, float), np.asarray(m2, float)


def top_genes(var: np.ndarray, names: np.ndarray, n: int | None) -> np.ndarray:
    """Positions (sorted) of the ``n`` largest variances, ties by name (as
    :func:`fedclust.data.preprocess.top_variable_genes`)."""
    if n is None or n >= len(var):
        return np.arange(len(var))
    order = np.lexsort((names, -var))
    return np.sort(order[:n])


def _none_left(step: str) -> InputDataError:
    return InputDataError(
        f"every centre abstained from {step}: no centre holds as many samples as its floor",
        where="federated preprocessing (data.federated.min_samples)",
        fix="lower data.federated.min_samples or use preprocess: pooled",
    )


def fit_trend(names: np.ndarray, dispersions: np.ndarray, normed_means: np.ndarray,
              min_disp: float) -> tuple[np.ndarray | None, float | None]:  # fmt: skip
    """pydeseq2's VST trend with its own code: ``_fit_parametric_dispersion_trend(vst=True)``
    (gamma GLM, outlier filter, mean-dispersion fallback) on a stand-in holding only the
    aggregates it reads. Returns (a0, a1) or the mean dispersion."""
    from pydeseq2.dds import DeseqDataSet
    from pydeseq2.default_inference import DefaultInference

    class Stand:  # the attributes the two pydeseq2 methods read and write
        pass

    s = Stand()
    idx = pd.Index(names.astype(str))
    s.var = pd.DataFrame(
        {"vst_genewise_dispersions": dispersions, "_normed_means": normed_means}, index=idx
    )
    s.non_zero_genes = idx[normed_means > 0]
    s.inference = DefaultInference(n_cpus=1)
    s.uns, s.min_disp, s.n_vars, s.vst_fit_type = {}, min_disp, len(idx), "parametric"
    s._fit_mean_dispersion_trend = lambda vst: DeseqDataSet._fit_mean_dispersion_trend(s, vst)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        DeseqDataSet._fit_parametric_dispersion_trend(s, vst=True)
    if "vst_trend_coeffs" in s.uns:
        return np.asarray(s.uns["vst_trend_coeffs"], dtype=float), None
    log.warning("federated VST: the trend did not converge, pydeseq2's mean-dispersion fallback")
    return None, float(s.uns["mean_disp"])


def rnaseq_server(
    proxies: Sequence[Any],
    genes: Sequence[str],
    settings: RnaseqSettings | None = None,
    protocols: P.Protocols = P.DEFAULT,
) -> RnaseqFit:
    """Run steps 1–5 (module docstring) through ``proxies``; ``genes``: the cohort's gene names
    (public: every centre holds the same columns)."""
    settings = settings if settings is not None else RnaseqSettings()
    names = np.asarray(genes).astype(str)
    r = Rounds(proxies)
    # 1. log geometric means
    msgs = r.ask("logsum", {"step": "logsum"}, "logsum", protocols.logsum, P.REQUEST)
    if not msgs:
        raise _none_left("the size factors")
    n = sum(int(m["n"]) for _, m in msgs)
    total = P.from_row(msgs[0][1]["sum_log"])
    for _, m in msgs[1:]:
        total = total + P.from_row(m["sum_log"])
    logmeans = total / n
    if not np.isfinite(logmeans).any():
        raise InputDataError(
            "every gene has a zero count in some sample of the reporting centres: "
            "median-of-ratios size factors are undefined",
            where="federated preprocessing (size factors)",
            fix="check the input (too few genes or samples?)",
        )
    # 2. normalised-count moments (every centre takes the broadcast and its size factors)
    msgs = r.ask("normed_moments", {"parameters": logmeans}, "normed_moments",
                 protocols.normed_moments, P.LOGMEANS)  # fmt: skip
    if not msgs:
        raise _none_left("the normalised-count moments")
    senders = [p for p, _ in msgs]
    n2, means, m2 = merge_moments([m for _, m in msgs])
    sum_inv = 0.0
    for _, m in msgs:
        sum_inv = sum_inv + m["sum_inv_sf"]
    s_mean_inv = sum_inv / n2
    var = m2 / (n2 - 1)
    expressed = np.flatnonzero(means > 0)
    fit = _fit_genes(means, expressed, settings)
    # MoM start points (pydeseq2 _fit_MoM_dispersions, intercept design)
    mu, v = means[fit], var[fit]
    y_hat = np.maximum(mu, 1)
    rde = np.maximum((m2[fit] + n2 * (mu - y_hat) ** 2 - n2 * y_hat) / ((n2 - 1) * y_hat**2), 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mde = np.nan_to_num((v - s_mean_inv * mu) / mu**2)
    max_disp = max(settings.max_disp, n2)
    alpha_hat = np.clip(np.minimum(rde, mde), settings.min_disp, max_disp)
    # 3. genewise dispersions: scipy's L-BFGS-B on log α, all genes in lockstep
    first = {"fit_genes": fit, "beta": mu, "min_mu": settings.min_mu}

    def terms(active: np.ndarray, log_alpha: np.ndarray) -> dict:
        req = {"parameters": log_alpha, "active": active, **first}
        first.clear()
        out = r.ask("nb_terms", req, "nb_terms", protocols.nb_terms, P.NB_REQUEST, senders)
        if not out:
            raise _none_left("the dispersion fit")
        keys = ("nll", "dnll", "w", "dw")
        tot = {k: P.from_row(out[0][1][k]) for k in keys}
        for _, m in out[1:]:
            for k in keys:
                tot[k] = tot[k] + P.from_row(m[k])
        return tot

    def evaluate(idx: np.ndarray, x: np.ndarray):
        t = terms(idx, x[:, 0])
        alpha = np.exp(x[:, 0])
        a_inv = 1 / alpha
        loss = t["nll"] + 0.5 * np.log(t["w"])
        grad = alpha * -(a_inv**2 * t["dnll"]) + (0.5 * ((1 / t["w"]) * t["dw"])) * alpha
        return loss, grad[:, None]

    lo, hi = np.log(settings.min_disp), np.log(max_disp)
    if settings.dispersions == "moments":  # no step 3: the MoM start points
        disp, converged, rounds, failed = alpha_hat, np.ones(len(fit), bool), 0, []
    else:
        res = minimize_lockstep(evaluate, np.log(alpha_hat)[:, None], lo, hi)
        log_alpha = res.x[:, 0].copy()
        failed = np.flatnonzero(~res.success)
        if len(failed):
            log.info("federated dispersions: %d gene(s) by grid search", len(failed))
            log_alpha[failed] = _grid_or_last(terms, failed, log_alpha[failed], lo, hi)
        disp = np.clip(np.exp(log_alpha), settings.min_disp, max_disp)
        converged, rounds = res.success, res.rounds
    # 4. trend (pydeseq2's code), broadcast; the centres transform and answer VST moments
    coeffs, mean_disp = fit_trend(names[fit], disp, means[fit], settings.min_disp)
    msgs = r.ask("apply_vst", {"coeffs": coeffs, "mean_disp": mean_disp, "genes": expressed},
                 "vst", protocols.vst_moments, P.TREND)  # fmt: skip
    if not msgs:
        raise _none_left("the VST moments")
    n3, _, vm2 = merge_moments([m for _, m in msgs])
    vst_var = vm2 / (n3 - 1)
    # 5. top-N genes by VST variance
    selected = expressed[top_genes(vst_var, names[expressed], settings.top_genes)]
    r.ask("select", {"genes": selected}, "select", P.ACK, P.SELECTION)
    return RnaseqFit(
        n=n2, logmeans=logmeans, normed_means=means, normed_var=var, expressed=expressed,
        fit_idx=fit, alpha_hat=alpha_hat, dispersions=disp, converged=converged,
        coeffs=coeffs, mean_disp=mean_disp, vst_var=vst_var, selected=selected,
        nb_rounds=rounds + (2 if len(failed) else 0),
        participants=[p.cid for p in senders],
    )  # fmt: skip


def _grid_or_last(terms, failed: np.ndarray, last: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Genes where L-BFGS-B stopped without convergence: pydeseq2's ``grid_fit_alpha`` (100
    points on [lo, hi], then 100 around the best) — or L-BFGS-B's last point when its loss is
    lower (evaluated in the fine grid's round). pydeseq2 always takes the grid; its stopping
    test flips on rounding for a few genes (a line search that cannot decrease f below its
    rounding noise near the optimum), and the grid's step (0.5 % in α) would then make a
    federated gene differ from a pooled one that converged. Never a worse likelihood."""
    grid = np.linspace(lo, hi, GRID_LENGTH)
    t = terms(failed, np.tile(grid, (len(failed), 1)))
    best = np.argmin(t["nll"] + 0.5 * np.log(t["w"]), axis=1)
    delta = grid[1] - grid[0]
    fine = np.array([np.linspace(grid[b] - delta, grid[b] + delta, GRID_LENGTH) for b in best])
    pts = np.column_stack([fine, last])
    t = terms(failed, pts)
    return pts[np.arange(len(failed)), np.argmin(t["nll"] + 0.5 * np.log(t["w"]), axis=1)]


def _fit_genes(means: np.ndarray, expressed: np.ndarray, s: RnaseqSettings) -> np.ndarray:
    """The genes the dispersion trend is fitted on: every expressed gene, or DESeq2's
    ``vst(nsub)`` subset drawn from the federated normalised means (preprocess.vst_fit)."""
    if s.vst_fit_genes is None:
        return expressed
    cand = vst_fit_candidates(means, s.vst_fit_pool)
    if len(cand) <= s.vst_fit_genes:
        log.info("vst fit_genes=%d: only %d genes with mean > %g, fitting on all genes",
                 s.vst_fit_genes, len(cand), VST_MIN_MEAN)  # fmt: skip
        return expressed
    return vst_fit_subset(cand, s.vst_fit_genes, s.seed)
