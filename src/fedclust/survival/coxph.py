"""Exact federated Cox-PH stratified by centre (seed 003 §7.2; an exact reference for DeepCox).

With one stratum per centre the partial likelihood is a sum of per-centre terms, so Newton's
method needs only per-centre sums: each centre returns its stratum's log-likelihood, gradient and
Hessian at the broadcast β (:func:`centre_sums`, Efron or Breslow ties); the server adds them and
takes a Newton step with step halving (:func:`fit_federated_coxph`). The result equals lifelines'
``CoxPHFitter().fit(pooled, strata=["centre"])`` (Efron ties) to 1e-6 (tested).

Messages (issue 22): the request ``survival_coxph_request`` {β, ties}; the reply
``survival_coxph_sums`` {loglik, gradient, hessian, n, events}, from :class:`CoxCentre`. The
centre answers only with at least its floor of patients *and* of events (a stratum of two
patients discloses x_event − x_other, :func:`fedclust.privacy.attacks.cox_pair_difference`) and
with at most ``nfilter_glm · n`` covariates (DataSHIELD's rule for a fitted model); otherwise it
abstains and its stratum is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedclust.errors import FedclustError, InputDataError
from fedclust.federation import INPROCESS, Abstain, Ledger, Protocol, Transport, federate

from .cohort import check_covariates, check_survival

TIES = ("efron", "breslow")
COX_REQUEST = Protocol("survival_coxph_request", {"parameters": "parameters", "ties": "metadata"})
COX_SUMS = Protocol(
    "survival_coxph_sums",
    {"loglik": "aggregate", "gradient": "aggregate", "hessian": "aggregate", "n": "count",
     "events": "count"},
)  # fmt: skip
PROTOCOLS = (COX_REQUEST, COX_SUMS)


def centre_sums(
    x: np.ndarray, t: np.ndarray, e: np.ndarray, beta: np.ndarray, ties: str = "efron"
) -> dict[str, np.ndarray | float]:
    """Centre side: log partial likelihood of the centre's stratum, its gradient and Hessian."""
    if ties not in TIES:
        raise InputDataError(f"unknown ties method {ties!r}", where="coxph", fix=f"one of {TIES}")
    x, t, e = np.asarray(x, float), np.asarray(t, float), np.asarray(e).astype(bool)
    p = x.shape[1]
    eta = x @ beta
    shift = eta.max() if len(eta) else 0.0
    w = np.exp(eta - shift)
    ll, g, h = 0.0, np.zeros(p), np.zeros((p, p))
    s0, s1, s2 = 0.0, np.zeros(p), np.zeros((p, p))
    order = np.argsort(-t, kind="stable")
    ts = t[order]
    bounds = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        idx = order[a:b]
        xi, wi = x[idx], w[idx]
        s0 += wi.sum()
        s1 += wi @ xi
        s2 += (xi * wi[:, None]).T @ xi
        dead = idx[e[idx]]
        d = len(dead)
        if d == 0:
            continue
        xd, wd = x[dead], w[dead]
        t0, t1, t2 = wd.sum(), wd @ xd, (xd * wd[:, None]).T @ xd
        ll += eta[dead].sum()
        g += xd.sum(axis=0)
        phis = np.arange(d) / d if ties == "efron" else np.zeros(d)
        for phi in phis:
            a0, a1, a2 = s0 - phi * t0, s1 - phi * t1, s2 - phi * t2
            ll -= np.log(a0) + shift
            g -= a1 / a0
            h -= a2 / a0 - np.outer(a1, a1) / a0**2
    return {
        "loglik": float(ll),
        "gradient": g,
        "hessian": h,
        "n": int(len(t)),
        "events": int(e.sum()),
    }


class CoxCentre:
    """One stratum: the centre's own (x, t, e); answers :func:`centre_sums` at a broadcast β."""

    protocols = {"coxph_sums": COX_SUMS}

    def __init__(self, cid: str, x, t, e, disclosure=None):
        check_survival(t, e, f"federated Cox-PH, centre {cid}")
        self.cid, self.disclosure = cid, disclosure
        self.x, self.t = np.asarray(x, float), np.asarray(t, float)
        self.e = np.asarray(e).astype(bool)
        self.n_samples = len(self.t)
        check_covariates(self.x, len(self.t), f"federated Cox-PH, centre {cid}")

    def coxph_sums(self, parameters, config: Mapping[str, Any]) -> dict[str, Any] | Abstain:
        from fedclust.federation.guard import centre_policy

        pol = centre_policy(self)
        floor = int(pol.nfilter_subset)
        if self.n_samples < floor or int(self.e.sum()) < floor:
            return Abstain("refused: fewer patients or events than the centre's floor")
        beta = np.asarray(parameters, float)
        if len(beta) > float(pol.nfilter_glm) * self.n_samples:
            return Abstain("refused: more covariates than nfilter_glm allows for the centre")
        return centre_sums(self.x, self.t, self.e, beta, str(config.get("ties", "efron")))


def coxph_server(proxies, p: int, ties: str = "efron", tol: float = 1e-10, max_iter: int = 100):
    """Server side over client proxies: Newton steps with step halving from the summed
    per-centre sums (what :func:`fit_federated_coxph` federates in-process and the deployed
    stage ``survival_coxph`` serves). Returns (β, standard errors, log-likelihood path)."""

    def round_(beta: np.ndarray, it: int) -> tuple[float, np.ndarray, np.ndarray]:
        msgs = [m for m in (px.call("coxph_sums", {"parameters": beta, "ties": ties}, it,
                                    "coxph_sums", COX_SUMS, COX_REQUEST) for px in proxies)
                if m is not None]  # fmt: skip
        if not msgs:
            raise InputDataError("every centre refused the Cox-PH sums", where="federated Cox-PH",
                                 fix="fewer, larger centres (or fewer covariates)")  # fmt: skip
        return (
            sum(m["loglik"] for m in msgs),
            sum(m["gradient"] for m in msgs),
            sum(m["hessian"] for m in msgs),
        )

    beta = np.zeros(p)
    ll, g, h = round_(beta, 0)
    path = [ll]
    for it in range(1, max_iter + 1):
        try:
            step = np.linalg.solve(-h, g)
        except np.linalg.LinAlgError:
            raise FedclustError(
                "the summed Hessian is singular (a covariate is constant or "
                "collinear within every centre)",
                where="federated Cox-PH",
                fix="drop constant / collinear covariates",
            ) from None
        scale = 1.0
        while True:
            cand = beta + scale * step
            ll_c, g_c, h_c = round_(cand, it)
            if ll_c >= ll - 1e-12 or scale < 1e-8:
                break
            scale /= 2
        delta = np.abs(cand - beta).max()
        beta, ll, g, h = cand, ll_c, g_c, h_c
        path.append(ll)
        if delta < tol:
            break
    else:
        raise FedclustError(
            f"federated Cox-PH did not converge in {max_iter} Newton steps",
            where="federated Cox-PH",
            fix="the MLE may not exist (separation)",
        )
    se = np.sqrt(np.diag(np.linalg.inv(-h)))
    return beta, se, path


def fit_federated_coxph(
    centres: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
    ledger: Ledger | None = None,
    ties: str = "efron",
    tol: float = 1e-10,
    max_iter: int = 100,
    policies: Sequence[Any] | None = None,
    transport: Transport = INPROCESS,
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Server side: Newton steps from summed per-centre (loglik, gradient, Hessian).

    ``centres``: (x, t, e) per stratum; ``policies``: each centre's disclosure policy (None:
    the configured ones). A centre below its floor abstains (recorded) and its stratum is left
    out. Returns β, its standard errors (inverse observed information) and the log-likelihood
    path.
    """
    if ties not in TIES:
        raise InputDataError(f"unknown ties method {ties!r}", where="coxph", fix=f"one of {TIES}")
    pols = list(policies) if policies is not None else [None] * len(centres)
    objs = []
    for k, ((x, t, e), pol) in enumerate(zip(centres, pols, strict=True)):
        c = CoxCentre(f"centre{k}", x, t, e, pol)
        if not c.e.any():
            raise InputDataError(
                f"centre {k} has no event: its stratum adds nothing",
                where="federated Cox-PH",
                fix="drop the centre or merge it",
            )
        objs.append(c)
    p = np.asarray(centres[0][0]).shape[1]
    return federate(objs, lambda ps: coxph_server(ps, p, ties, tol, max_iter), ledger=ledger,
                    transport=transport)  # fmt: skip
