"""Kaplan–Meier curves per group with a multivariate log-rank test and medians (lifelines;
seed 000 §3.9; the log-rank p is an extension, labelled as such in the report)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from lifelines import KaplanMeierFitter
from lifelines.statistics import multivariate_logrank_test

from fedclust.errors import InputDataError


def _clean(times, events, groups, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.asarray(times, dtype=float)
    e = np.asarray(events, dtype=float)
    g = np.asarray(groups).astype(str)
    if not (len(t) == len(e) == len(g)):
        raise InputDataError("times, events and groups differ in length", where=where)
    ok = np.isfinite(t) & np.isfinite(e) & (t >= 0)
    if ok.sum() == 0:
        raise InputDataError(
            "no sample has a finite, non-negative time and an event flag",
            where=where,
            fix="check the survival columns (time in years, status 1 = event, 0 = censored)",
        )
    bad = set(np.unique(e[ok])) - {0.0, 1.0}
    if bad:
        raise InputDataError(
            f"event flags must be 0 (censored) or 1 (event), found {sorted(bad)}", where=where
        )
    return t[ok], e[ok].astype(int), g[ok]


def km_by_group(times, events, groups, where: str = "survival") -> dict[str, KaplanMeierFitter]:
    """One fitted ``KaplanMeierFitter`` per group (censoring: event 0 = censored)."""
    t, e, g = _clean(times, events, groups, where)
    fits = {}
    for lab in sorted(np.unique(g)):
        m = g == lab
        fits[lab] = KaplanMeierFitter().fit(t[m], e[m], label=str(lab))
    return fits


def survival_summary(times, events, groups, where: str = "survival") -> tuple[pd.DataFrame, float]:
    """Per-group n, events and KM median survival, and the multivariate log-rank p-value."""
    t, e, g = _clean(times, events, groups, where)
    fits = km_by_group(t, e, g, where)
    rows = [
        {
            "group": lab,
            "n": int((g == lab).sum()),
            "events": int(e[g == lab].sum()),
            "median": float(f.median_survival_time_),
        }
        for lab, f in fits.items()
    ]
    p = float(multivariate_logrank_test(t, g, e).p_value) if len(fits) > 1 else float("nan")
    return pd.DataFrame(rows), p


def plot_km(
    ax,
    fits: dict[str, KaplanMeierFitter],
    title: str,
    p: float,
    colors: dict | None = None,
) -> None:
    """Draw the KM curves (with CIs) of ``fits`` on ``ax`` (in ``fits`` order; ``colors``:
    optional group → colour, e.g. to give matched groups of two panels the same colour)."""
    for lab, f in fits.items():
        kw = {"color": colors[lab]} if colors and lab in colors else {}
        f.plot_survival_function(ax=ax, ci_show=True, **kw)
    ax.set_title(f"{title}\nlog-rank p = {p:.2g}", fontsize=9)
    ax.set_xlabel("time (years)")
    ax.set_ylabel("survival probability")
    ax.legend(fontsize=6)
