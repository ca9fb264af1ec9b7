"""Kaplan–Meier panels of found clusters next to reference groups (seed 000 §3.9, Figs
5.11–5.13).

The found clusters are matched one-to-one to the reference groups by the Hungarian method
(scipy ``linear_sum_assignment`` on the contingency table of the patients with a reference
category) before plotting, so a cluster and its matched group share a colour and a position in
both panels ("our labels have been synchronized with HDP labels by solving the linear sum
assignment problem"). Patients without a reference category are left out of the reference
panel and its log-rank test (their number is reported); they stay in the cluster panel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedclust.errors import InputDataError
from fedclust.metrics.assignment import hungarian_mapping

from .io import MISSING_LABELS


@dataclass
class Matching:
    """Found cluster → display name and a shared order/colour index per name."""

    cluster_names: dict[str, str]  # cluster id → "c<id> ≙ <group>" or "c<id> (unmatched)"
    order: dict[str, int]  # display name or reference group → colour/order index
    n_unknown: int


def match_clusters(pred: np.ndarray, ref: np.ndarray) -> Matching:
    """Hungarian matching of clusters to reference groups over the patients with a category.

    Reference groups get indices 0..G-1 in sorted order; a matched cluster takes its group's
    index, unmatched clusters (k > G) the next ones, in cluster order.
    """
    pred = np.asarray(pred).astype(str)
    ref = np.asarray(ref).astype(str)
    known = ~np.isin(ref, MISSING_LABELS)
    groups = sorted(np.unique(ref[known]))
    mapping = hungarian_mapping(pred[known], ref[known]) if known.any() else {}
    order = {g: i for i, g in enumerate(groups)}
    names: dict[str, str] = {}
    nxt = len(groups)
    clusters = sorted(np.unique(pred), key=lambda c: (len(c), c))
    for c in clusters:
        if c in mapping:
            names[c] = f"c{c} ≙ {mapping[c]}"
            order[names[c]] = order[mapping[c]]
    for c in clusters:
        if c not in mapping:
            names[c] = f"c{c} (unmatched)"
            order[names[c]] = nxt
            nxt += 1
    return Matching(names, order, int((~known).sum()))


def km_panels(
    obs: pd.DataFrame,
    pred: np.ndarray,
    ref: np.ndarray,
    outcomes: list[str],
    title: str,
):
    """KM per found cluster (left) and per reference group (right), one row per outcome.

    Returns the figure and a table per (outcome, grouping, group): n, events, KM median, the
    matched reference group, the multivariate log-rank p (an extension: the thesis reports
    none) and ``n_unknown_excluded`` (patients without a reference category, left out of the
    reference panel and test).
    """

    import matplotlib.pyplot as plt

    from fedclust.metrics.survival import km_by_group, plot_km, survival_summary

    missing = [c for o in outcomes for c in (f"{o}_YEARS", f"{o}_STATUS") if c not in obs]
    if missing:
        raise InputDataError(
            f"obs.tsv has no column(s) {missing}",
            where="results/data/mds/obs.tsv",
            fix="drop the outcome from dec.evaluate.survival or re-run the data stage",
        )
    pred = np.asarray(pred).astype(str)
    ref = np.asarray(ref).astype(str)
    match = match_clusters(pred, ref)
    known = ~np.isin(ref, MISSING_LABELS)
    shown = np.array([match.cluster_names[c] for c in pred])
    fig, axes = plt.subplots(len(outcomes), 2, figsize=(10, 3.6 * len(outcomes)), squeeze=False)
    rows = []
    for r, out in enumerate(outcomes):
        t = obs[f"{out}_YEARS"].to_numpy(dtype=float, na_value=np.nan)
        e = obs[f"{out}_STATUS"].to_numpy(dtype=float, na_value=np.nan)
        where = f"results/data/mds/obs.tsv {out}_YEARS/{out}_STATUS"
        panels = (
            ("DEC clusters", shown, np.ones(len(pred), bool)),
            ("reference groups", ref, known),
        )
        for c, (name, grp, keep) in enumerate(panels):
            summary, p = survival_summary(t[keep], e[keep], grp[keep], where)
            fits = km_by_group(t[keep], e[keep], grp[keep], where)
            fits = dict(sorted(fits.items(), key=lambda kv: (match.order.get(kv[0], 99), kv[0])))
            colors = {g: plt.cm.tab10(match.order.get(g, 9) % 10) for g in fits}
            sub = f"{out}: {name}"
            if c == 1 and match.n_unknown:
                sub += f" ({match.n_unknown} without a category left out)"
            plot_km(axes[r, c], fits, sub, p, colors)
            summary["order"] = [match.order.get(g, 99) for g in summary["group"]]
            summary = summary.sort_values(["order", "group"]).drop(columns="order")
            summary.insert(0, "grouping", name)
            summary.insert(0, "outcome", out)
            summary["logrank_p"] = p
            summary["n_unknown_excluded"] = match.n_unknown if c == 1 else 0
            rows.append(summary)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig, pd.concat(rows, ignore_index=True)
