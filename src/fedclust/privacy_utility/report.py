"""Tables, figures and the section of the privacy–utility stage (issue 24)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .experiment import HEADLINE

#: what each method's headline metric is, for captions
METRIC_NAMES = {
    "fmi": "FMI with the pooled clustering (k clusters)",
    "fmi_reference": "FMI with the reference labels",
    "sup_distance": "sup |S(t) − S_pooled(t)| on the grid",
    "c_index": "blind-test C-index",
    "auc": "test AUC (all hospitals' test rows)",
    "accuracy": "Hungarian accuracy (reference labels)",
    "logrank": "OS log-rank statistic between the clusters",
    "median_rel_error": "attack: median relative reconstruction error",
    "breach_rate": "attack: share of rows reconstructed within 20 %",
}
TITLES = {
    "dp_lloyd": "Federated DP-Lloyd k-means (MDS features, secure sum + central noise)",
    "hac": "HAC simultaneous sharing (seed 001) with privatised centroids",
    "km": "Kaplan–Meier from noisy secure sums of count tables",
    "survival": "Survival Weights Averaging (D6.2) with central DP-FedAvg",
    "heart": "Heart FL (seed 004) with central DP-FedAvg",
    "dec": "DEC TSAE + centroid release (seed 000) with DP",
    "known_io": "Known input–output attack (seed 001) on privatised perturbation",
}


def summary(curves: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and number of seeds per (method, arm, metric, ε)."""
    g = curves.groupby(["method", "arm", "metric", "epsilon"], sort=True)["value"]
    out = g.agg(["mean", "std", "count"]).reset_index()
    return out.rename(columns={"count": "seeds"})


def thresholds(summ: pd.DataFrame, budget: pd.DataFrame, within: float = 0.05) -> pd.DataFrame:
    """Per method and private arm: the non-private value (ε = ∞), the value at the largest
    finite ε, and the smallest ε of the grid from which on the mean headline metric stays
    within ``within`` of the non-private one (relative for higher-is-better metrics, absolute
    for the KM distance; for the attack: from which on its median reconstruction error is
    ≤ ``within``, i.e. it succeeds) — ``rule`` says which. ``epsilon_spent``: the mean ε each
    centre spent at that grid point (the accountant's)."""
    rows = []
    for method, (metric, higher) in HEADLINE.items():
        sm = summ[(summ["method"] == method) & (summ["metric"] == metric)]
        if sm.empty:
            continue
        arms = [a for a in ("federated", "federated_local", "attack") if a in set(sm["arm"])]
        for arm in arms:
            a = sm[sm["arm"] == arm].set_index("epsilon")["mean"].sort_index()
            ref_arm = "federated" if arm == "federated_local" else arm
            ref_s = sm[(sm["arm"] == ref_arm) & np.isinf(sm["epsilon"])]["mean"]
            if ref_s.empty:
                continue
            ref = float(ref_s.iloc[0])
            finite = a[np.isfinite(a.index)]
            if method == "known_io":
                ok = finite <= within  # the attack succeeds (error ≤ 5 %) from this ε on
                rule = f"median reconstruction error ≤ {within:g} (the attack succeeds)"
            elif higher:
                ok = finite >= (1 - within) * ref
                rule = f"≥ (1 − {within:g}) × non-private"
            else:
                ok = finite <= ref + within
                rule = f"≤ non-private + {within:g}"
            eps_ok = math.nan
            for e in sorted(finite.index, reverse=True):  # the smallest ε from which on all hold
                if not ok[e]:
                    break
                eps_ok = float(e)
            spent = budget[(budget["method"] == method) & (budget["epsilon"] == eps_ok)]
            top = float(finite.index.max()) if len(finite) else math.nan
            rows.append(
                {
                    "method": method,
                    "arm": arm,
                    "metric": metric,
                    "rule": rule,
                    "nonprivate": ref,
                    "epsilon_max": top,
                    "at_epsilon_max": float(finite[top]) if len(finite) else math.nan,
                    "epsilon_within": eps_ok,
                    "epsilon_spent": float(spent["epsilon_spent"].mean())
                    if len(spent)
                    else math.nan,
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "method",
            "arm",
            "metric",
            "rule",
            "nonprivate",
            "epsilon_max",
            "at_epsilon_max",
            "epsilon_within",
            "epsilon_spent",
        ],
    )


def budget_table(budget: pd.DataFrame) -> pd.DataFrame:
    """ε spent per centre per method (mean over seeds) at each target ε."""
    if budget.empty:
        return budget
    g = budget.groupby(["method", "epsilon", "centre", "mechanism"], sort=True)
    out = g.agg(
        releases=("releases", "first"),
        noise_multiplier=("noise_multiplier", "mean"),
        epsilon_spent=("epsilon_spent", "mean"),
        delta=("delta", "first"),
    )
    return out.reset_index()


def _x(eps: Sequence[float], finite_max: float) -> np.ndarray:
    """ε on a log axis with ∞ drawn one octave right of the largest finite value."""
    return np.array([finite_max * 2 if math.isinf(e) else e for e in eps], dtype=float)


def figure(method: str, summ: pd.DataFrame):
    """The method's metric(s) over ε: mean ± sd over seeds per private arm; the pooled and
    isolated baselines as horizontal lines."""
    import matplotlib.pyplot as plt

    sm = summ[summ["method"] == method]
    metrics = [m for m in METRIC_NAMES if m in set(sm["metric"])]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.6 * len(metrics), 3.4), squeeze=False)
    finite = sm["epsilon"][np.isfinite(sm["epsilon"])]
    fmax = float(finite.max()) if len(finite) else 1.0
    for ax, metric in zip(axes[0], metrics, strict=True):
        d = sm[sm["metric"] == metric]
        for i, arm in enumerate(
            a for a in ("federated", "federated_local", "attack") if a in set(d["arm"])
        ):
            r = d[d["arm"] == arm].sort_values("epsilon")
            x = _x(r["epsilon"], fmax)
            ax.errorbar(
                x,
                r["mean"],
                yerr=r["std"].fillna(0),
                marker="o",
                capsize=3,
                color=f"C{i}",
                label=arm.replace("_", " "),
            )
        for j, arm in enumerate(("pooled", "isolated")):
            r = d[d["arm"] == arm]
            if len(r):
                ax.axhline(
                    float(r["mean"].iloc[0]),
                    color=f"C{j + 3}",
                    ls="--",
                    lw=1,
                    label=f"{arm} (non-private)",
                )
        ticks = sorted(set(_x(d["epsilon"], fmax)))
        ax.set_xscale("log")
        ax.set_xticks(ticks)
        ax.set_xticklabels(["∞" if t > fmax else f"{t:g}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("ε (δ fixed)")
        ax.set_title(METRIC_NAMES[metric], fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(TITLES.get(method, method), fontsize=10)
    fig.tight_layout()
    return fig


def caption(method: str, cfg: dict[str, Any]) -> str:
    m = cfg.get(method, {})
    seeds, eps = (
        int(cfg["seeds"]),
        ", ".join("∞" if e is None else f"{e:g}" for e in cfg["epsilons"]),
    )
    data = {
        "dp_lloyd": f"simulated/real MDS features over the {m.get('split')} centres, k = "
        f"{m.get('k')}, {m.get('iterations')} iterations, rows clipped to ‖x‖ ≤ {m.get('bound')}",
        "hac": f"cohort {m.get('cohort')} ({m.get('preprocessing')}), centres by region, "
        f"n_min = {m.get('n_min')}, {m.get('linkage')} linkage, k = {m.get('k')}; centred rows "
        f"clipped to {m.get('bound')} (raw rows to {m.get('raw_bound')} for the mean)",
        "km": f"MDS {m.get('endpoint')} over the {m.get('split')} centres, public grid of "
        f"{m.get('step')} years up to {m.get('max')}",
        "survival": f"survival cohort, endpoint {m.get('endpoint')}, scenario "
        f"{m.get('scenario')}, the stage's first grid point; updates clipped to {m.get('clip')}",
        "heart": f"heart data, five hospitals, {m.get('rounds')} rounds × {m.get('epochs')} "
        f"epoch(s); updates clipped to {m.get('clip')}",
        "dec": f"MDS over the {m.get('split')} centres, {m.get('ae_rounds')} TSAE rounds "
        f"(reduced), {m.get('release_share')} of ε for the centroid release, embeddings "
        f"clipped to {m.get('bound')}",
        "known_io": f"cohort {m.get('cohort')}, first {m.get('genes')} genes, rows clipped to "
        f"{m.get('bound')}, the attacker knows {m.get('fraction')} of the pairs",
    }[method]
    return (
        f"{TITLES[method]}: headline metric over ε ∈ {{{eps}}} at δ = {cfg['delta']:g}, mean ± "
        f"sd over {seeds} seed(s); dashed: the non-private pooled and isolated baselines. "
        f"Data: {data}. ∞ = the method without noise (secure aggregation on)."
    )


THRESHOLD_CAPTION = (
    "Per method and private arm: the headline metric without noise (ε = inf, secure aggregation "
    "on), at the largest ε of the grid, and epsilon_within: the smallest ε of the grid from which "
    "on the mean metric stays within {within} of the non-private value (rule column; NaN: at no ε "
    "of the grid). For the attack: the smallest ε from which on it succeeds (median error ≤ "
    "{within}). epsilon_spent: the ε each centre spent there (accountant)."
)


def section_text(cfg: dict[str, Any], methods: Sequence[str]) -> list[str]:
    eps = ", ".join("∞" if e is None else f"{e:g}" for e in cfg["epsilons"])
    return [
        "What secure aggregation and differential privacy cost each federated method (issue "
        f"24): the headline metric over ε ∈ {{{eps}}} at δ = {cfg['delta']:g}, "
        f"{int(cfg['seeds'])} seed(s), beside the pooled and isolated baselines (no noise). "
        "Secure aggregation (pairwise X25519 masks modulo 2^64, src/fedclust/federation/"
        "secagg.py) carries every summing exchange: the server sees uniform shares and only the "
        "sum; it changes no number (ε = ∞ is the method as its stage runs it, to fixed-point "
        "precision). Differential privacy adds Gaussian noise calibrated by Opacus' RDP "
        "accountant to spend exactly ε over all the releases of one run (composition; the "
        "budget table lists ε per centre).",
        "Mechanisms. Central DP-FedAvg (heart FL, survival Weights Averaging, DEC's TSAE): each "
        "centre clips its round update to an L2 bound, the server adds N(0, (z·C)²) once to the "
        "secure sum; the unit of privacy is a whole centre, so with five to ten centres the "
        "noise on the mean update is large (z·C/K per coordinate). Centroid and count releases "
        "(DP-Lloyd, HAC simultaneous sharing, DEC centroids, Kaplan–Meier tables): rows clipped "
        "to a public bound, per-cluster sums (Δ₂ = bound) and counts (Δ₂ = 1) noised once — "
        "after the secure sum (DP-Lloyd, KM, the HAC centring mean) or at the centre (each "
        "centre's own cut clusters). DEC's local arm trains the TSAE by DP-SGD at every centre "
        "(record-level; Opacus' accounting) when privacy_utility.dec.mechanisms lists it.",
        "Reading the curves: the threshold table gives, per method, the smallest ε of the grid "
        "from which on the metric stays within 5 % of its non-private value. The known "
        "input–output attack of seed 001 is re-run on perturbed rows released with their own "
        "Gaussian noise: its reconstruction error over ε shows what the budget buys. Sizes are "
        "the default config's reduced ones (simulated data where the stage simulates it); "
        "config/thesis.yaml runs the full grid.",
    ]
