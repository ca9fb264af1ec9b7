"""The federated references on the real training centres (seed 003 §7.2, §11.2): the
stratified Cox-PH on ``survival.coxph_covariates`` fitted from per-centre sums (exact: equal to
lifelines on the pooled data) and
the KM / log-rank of BM_BLAST groups from per-centre counts on the public time grid
(``survival.km_grid``, cells below the centres' floor merged; issue 22), with its distance to
lifelines' exact pooled KM and log-rank."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from lifelines import CoxPHFitter
from lifelines.statistics import multivariate_logrank_test

from fedclust.errors import ConfigError
from fedclust.federation import Ledger

from .coxph import fit_federated_coxph
from .km import distance_to_exact, federated_km, grid_edges
from .prepare import prepare

# IPSS-R marrow blast categories (%): ≤2, >2–<5, 5–10, >10.
BM_BINS = [
    (-np.inf, 2, "BM_BLAST<=2"),
    (2, 4.999, "2<BM_BLAST<5"),
    (4.999, 10, "5<=BM_BLAST<=10"),
    (10, np.inf, "BM_BLAST>10"),
]


def bm_groups(bm: np.ndarray) -> np.ndarray:
    out = np.empty(len(bm), dtype=object)
    for lo, hi, name in BM_BINS:
        out[(bm > lo) & (bm <= hi)] = name
    return out.astype(str)


def cox_covariates(covariates: list[str], cfg: dict[str, Any]) -> tuple[list[str], list[int]]:
    """(names, column indices) of the Cox-PH check: ``survival.coxph_covariates`` = clinical
    (the configured clinical list present in the cohort) or all."""
    if cfg.get("coxph_covariates", "clinical") == "all":
        return list(covariates), list(range(len(covariates)))
    clinical = set(cfg.get("clinical") or [])
    cols = [j for j, c in enumerate(covariates) if c in clinical]
    if not cols:
        raise ConfigError(
            "no clinical covariate in the survival cohort for the Cox-PH check",
            where="survival.coxph_covariates",
            fix="set survival.clinical, or survival.coxph_covariates: all",
        )
    return [covariates[j] for j in cols], cols


def reference_checks(
    x: pd.DataFrame, obs: pd.DataFrame, endpoint: str, scenario: str, cfg: dict[str, Any], seed: int
):
    """(Cox coefficients table, KM table, check dict, KM figure) for repetition 0."""
    d = prepare(x, obs, endpoint, scenario, 0, cfg, seed)
    K = int(cfg["n_centres"])
    cen = d["centre"]
    X, t, e = d["x_train"].astype(float), d["t_train"], d["e_train"]
    names, cols = cox_covariates(d["covariates"], cfg)
    Xc = X[:, cols]
    ledger = Ledger()
    beta, se, path = fit_federated_coxph(
        [(Xc[cen == k], t[cen == k], e[cen == k]) for k in range(K)], ledger
    )
    df = pd.DataFrame(Xc, columns=names).assign(T=t, E=e, centre=cen)
    cph = CoxPHFitter().fit(
        df, "T", "E", strata=["centre"], fit_options={"precision": 1e-12, "max_steps": 200}
    )
    ref = cph.params_.reindex(names).to_numpy()
    coef = pd.DataFrame(
        {
            "covariate": names,
            "beta_federated": beta,
            "se_federated": se,
            "beta_lifelines": ref,
            "abs_diff": np.abs(beta - ref),
            "HR_min_to_max": np.exp(beta),
        }
    ).sort_values("beta_federated", key=np.abs, ascending=False)
    check: dict[str, Any] = {
        "endpoint": endpoint,
        "scenario": scenario,
        "centres": K,
        "coxph_covariates": len(names),
        "coxph_max_abs_diff": float(np.abs(beta - ref).max()),
        "coxph_loglik_federated": float(path[-1]),
        "coxph_loglik_lifelines": float(cph.log_likelihood_),
        "coxph_newton_steps": len(path) - 1,
        "coxph_messages": ledger.n_messages,
        "coxph_abstentions": ledger.n_abstentions,
        "coxph_floats": ledger.n_floats,
    }
    km_check = None
    if d["bm_blast_train"] is not None:
        grp = bm_groups(d["bm_blast_train"])
        led2 = Ledger()
        edges = grid_edges(cfg.get("km_grid"))
        labels = [name for _, _, name in BM_BINS]
        km, (chi2, p, dof) = federated_km(
            [(t[cen == k], e[cen == k], grp[cen == k]) for k in range(K)], edges, labels, led2
        )
        mv = multivariate_logrank_test(t, grp, e)
        check.update(
            {
                # max_j |S_grid - S_KM| at the grid times (exact pooled KM = lifelines)
                "km_max_abs_diff": distance_to_exact(km, edges, t, e, grp),
                "km_max_abs_diff_20_at_risk": distance_to_exact(km, edges, t, e, grp, 20),
                "km_grid_step": float(edges[1] - edges[0]),
                "km_abstentions": led2.n_abstentions,
                "logrank_chi2_federated": chi2,
                "logrank_chi2_lifelines": float(mv.test_statistic),
                "logrank_p": p,
                "logrank_df": dof,
                "km_messages": led2.n_messages,
                "km_floats": led2.n_floats,
            }
        )
        km_check = (km, chi2, p)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    if km_check is not None:
        km, chi2, p = km_check
        for g, sub in km.groupby("group", sort=False):
            ax.step(np.r_[0, sub["time"]], np.r_[1, sub["survival"]], where="post", label=g)
        ax.set_title(
            f"{endpoint}, {scenario}: federated KM over {K} training centres "
            f"(grid {edges[1] - edges[0]:g} y)\n"
            f"log-rank chi2 = {chi2:.1f}, p = {p:.2g}",
            fontsize=9,
        )
        ax.legend(fontsize=7)
    ax.set_xlabel("years")
    ax.set_ylabel("survival probability")
    return coef, (km_check[0] if km_check else pd.DataFrame()), check, fig
