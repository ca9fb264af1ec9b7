"""Centre side of federated preprocessing: each object holds one centre's rows only.

Methods answer the server's requests, ``method(parameters, config) -> message | Abstain``; the
floor (``min_samples``) is the centre's own setting. A centre below its floor abstains from
every message but still takes the broadcasts (log geometric means, trend, fill values) and
preprocesses its own rows with them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import digamma, gammaln

from fedclust.federation import Abstain
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.federation.guard import centre_policy

from ..preprocess import vst_closed_form
from .protocols import MIN_SAMPLES, Protocols, as_row


def moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and centred sum of squares, two passes (numpy's ``mean`` / ``var``
    arithmetic, so one centre's moments equal the pooled ones bit for bit)."""
    mean = x.mean(axis=0)
    return mean, ((x - mean) ** 2).sum(axis=0)


class RnaseqCentre:
    """One centre's raw counts (samples × genes, the cohort's gene order).

    Keeps between requests what it computed from its own rows: size factors, normalised counts,
    the negative-binomial means of the fitted genes, the VST values.
    """

    def __init__(
        self,
        cid: str,
        counts: np.ndarray,
        min_samples: int = MIN_SAMPLES,
        disclosure: DisclosurePolicy | None = None,
    ):
        self.cid = str(cid)
        # column-major, as pydeseq2's AnnData matrix: per-gene sums run over contiguous
        # samples (numpy's pairwise summation), so one centre's sums are pooled pydeseq2's
        self.counts = np.asfortranarray(counts)
        self.n_samples = int(self.counts.shape[0])
        self.min_samples = int(min_samples)
        self.protocols = Protocols(self.min_samples).rnaseq_methods()
        self.disclosure = disclosure  # None: the job's configured policy for this centre
        self.size_factors: np.ndarray | None = None
        self.normed: np.ndarray | None = None
        self.vst: np.ndarray | None = None
        self.selected: np.ndarray | None = None

    @property
    def floor(self) -> int:
        """The protocol's floor raised to the centre's own (``nfilter_subset``)."""
        return centre_policy(self).floor(self.min_samples)

    def _abstain(self) -> Abstain | None:
        if self.n_samples < self.floor:
            return Abstain(f"{self.n_samples} sample(s) < floor {self.floor}")
        return None

    # ---- size factors (pydeseq2 deseq2_norm_fit / deseq2_norm_transform)
    def logsum(self, parameters: Any, config: dict) -> dict | Abstain:
        """Per-gene Σ log count (−inf where a count is 0) and n."""
        if (a := self._abstain()) is not None:
            return a
        with np.errstate(divide="ignore"):
            return {"sum_log": as_row(np.log(self.counts).sum(axis=0)), "n": self.n_samples}

    def normed_moments(self, parameters: np.ndarray, config: dict) -> dict | Abstain:
        """Take the pooled log geometric means, compute the local median-of-ratios size factors
        and normalised counts, answer their per-gene moments and Σ 1/s_i."""
        logmeans = np.asarray(parameters, dtype=float)
        keep = np.isfinite(logmeans)
        with np.errstate(divide="ignore"):
            log_ratios = np.log(self.counts)[:, keep] - logmeans[keep]
        self.size_factors = np.exp(np.median(log_ratios, axis=1))
        self.normed = self.counts / self.size_factors[:, None]
        if (a := self._abstain()) is not None:
            return a
        mean, m2 = moments(self.normed)
        inv = float((1 / self.size_factors).sum())
        return {"mean": as_row(mean), "m2": as_row(m2), "sum_inv_sf": inv, "n": self.n_samples}

    # ---- genewise dispersions (pydeseq2 fit_alpha_mle terms, intercept design)
    def nb_terms(self, parameters: np.ndarray, config: dict) -> dict | Abstain:
        """The centre's share of pydeseq2's loss at the requested log α: per gene the
        negative-binomial log-likelihood and its derivative sum, and Σ W, Σ dW of the
        Cox–Reid term. ``parameters``: log α, (genes,) or (genes, grid points) (then no
        derivative). The first request carries the fitted genes and their mean (``beta``)."""
        if "fit_genes" in config:
            genes = np.asarray(config["fit_genes"], dtype=np.int64)
            y = np.ascontiguousarray(self.counts[:, genes].T, dtype=np.float64)  # genes × n
            mu = np.maximum(self.size_factors * np.asarray(config["beta"])[:, None],
                            float(config["min_mu"]))  # fmt: skip
            self._y, self._mu = y, mu
            self._lg1 = gammaln(y + 1)
            self._ylogmu = y * np.log(mu)
        if (a := self._abstain()) is not None:
            return a
        active = np.asarray(config["active"], dtype=np.int64)
        log_alpha = np.asarray(parameters, dtype=np.float64)
        y, mu = self._y[active], self._mu[active]
        n = self.n_samples
        if log_alpha.ndim == 2:  # grid search: loss only, one (genes × points) block
            return self._grid_terms(active, log_alpha)
        alpha = np.exp(log_alpha)
        a_inv = 1 / alpha
        ai = a_inv[:, None]
        logbinom = gammaln(y + ai) - self._lg1[active] - gammaln(ai)
        nll = n * a_inv * np.log(alpha) + (
            -logbinom + (y + ai) * np.log(ai + mu) - self._ylogmu[active]
        ).sum(axis=1)
        dnll = (
            digamma(ai) - digamma(y + ai) + np.log(1 + mu * alpha[:, None]) + (y - mu) / (mu + ai)
        ).sum(axis=1)
        w = mu / (1 + mu * alpha[:, None])
        return {"nll": as_row(nll), "dnll": as_row(dnll), "w": as_row(w.sum(axis=1)),
                "dw": as_row((-(w**2)).sum(axis=1)), "n": n}  # fmt: skip

    def _grid_terms(self, active: np.ndarray, log_alpha: np.ndarray) -> dict:
        n = self.n_samples
        nll = np.empty_like(log_alpha)
        w = np.empty_like(log_alpha)
        for r, g in enumerate(active):  # pydeseq2 vec_nb_nll, one gene at a time
            y, mu = self._y[g][:, None], self._mu[g][:, None]
            alpha = np.exp(log_alpha[r])
            a_inv = 1 / alpha
            logbinom = gammaln(y + a_inv) - self._lg1[g][:, None] - gammaln(a_inv)
            nll[r] = n * a_inv * np.log(alpha) + (
                -logbinom + (y + a_inv) * np.log(mu + a_inv) - self._ylogmu[g][:, None]
            ).sum(axis=0)
            w[r] = (mu / (1 + mu * alpha)).sum(axis=0)
        zero = np.zeros_like(nll)
        return {"nll": as_row(nll), "dnll": as_row(zero), "w": as_row(w), "dw": as_row(zero),
                "n": n}  # fmt: skip

    # ---- VST and gene selection
    def apply_vst(self, parameters: Any, config: dict) -> dict | Abstain:
        """Take the trend (a0, a1) or the mean dispersion, transform the own normalised counts
        (pydeseq2 ``vst_transform``) and answer the VST moments of the ``genes`` asked for."""
        coeffs = config.get("coeffs")
        mean_disp = config.get("mean_disp")
        self.vst = vst_closed_form(
            self.normed,
            None if coeffs is None else np.asarray(coeffs, dtype=float),
            None if mean_disp is None else float(mean_disp),
        )
        if (a := self._abstain()) is not None:
            return a
        mean, m2 = moments(self.vst[:, np.asarray(config["genes"], dtype=np.int64)])
        return {"mean": as_row(mean), "m2": as_row(m2), "n": self.n_samples}

    def select(self, parameters: Any, config: dict) -> dict:
        """Keep the genes the server selected (positions); nothing is sent back."""
        self.selected = np.asarray(config["genes"], dtype=np.int64)
        return {}

    def outputs(self) -> tuple[np.ndarray, np.ndarray]:
        """Local, never sent: (size-factor normalised, VST) of the selected genes."""
        return self.normed[:, self.selected], self.vst[:, self.selected]
