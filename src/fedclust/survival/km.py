"""Exact federated Kaplan–Meier and log-rank test from per-centre counts (seed 003 §11.2; used in
the report wherever data sit in centres).

Round 1: each centre sends the set of its distinct follow-up times (a KM curve discloses them
anyway); the server broadcasts their union. Round 2: each centre sends, per grid time and group,
its number at risk, events and censorings; the server only adds them. Survival
S(τ) = Π_{τ_j ≤ τ} (1 − d_j / n_j) and the (multivariate) log-rank statistic follow from the sums
and equal lifelines on the pooled data (tested).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from fedclust.errors import InputDataError
from fedclust.federation import Ledger

from .cohort import check_survival


def centre_times(t: np.ndarray) -> dict[str, np.ndarray]:
    return {"times": np.unique(np.asarray(t, float))}


def centre_counts(t, e, groups, grid: np.ndarray, labels: Sequence[str]) -> dict[str, np.ndarray]:
    """Per (group, grid time): at risk (t ≥ τ), events and censorings at τ."""
    t, e, g = np.asarray(t, float), np.asarray(e).astype(bool), np.asarray(groups).astype(str)
    at_risk = np.zeros((len(labels), len(grid)))
    events, censored = np.zeros_like(at_risk), np.zeros_like(at_risk)
    for i, lab in enumerate(labels):
        tg, eg = t[g == lab], e[g == lab]
        at_risk[i] = (tg[None, :] >= grid[:, None]).sum(axis=1)
        pos = np.searchsorted(grid, tg)
        np.add.at(events[i], pos[eg], 1)
        np.add.at(censored[i], pos[~eg], 1)
    return {"at_risk": at_risk, "events": events, "censored": censored}


def federated_counts(
    centres, ledger: Ledger | None = None, labels=None
) -> tuple[np.ndarray, list[str], dict]:
    """``centres``: list of (t, e, groups) (groups None = one group "all"). Returns the grid,
    group labels and the summed counts."""
    ledger = ledger or Ledger()
    cents = []
    for k, (t, e, g) in enumerate(centres):
        check_survival(t, e, f"federated Kaplan–Meier, centre {k}")
        cents.append((t, e, np.full(len(t), "all") if g is None else np.asarray(g).astype(str)))
    if labels is None:
        labels = sorted(set().union(*[set(np.unique(g)) for _, _, g in cents]))
    msgs = [
        ledger.send(f"centre{k}", "server", centre_times(t), 1, "km_times")
        for k, (t, _, _) in enumerate(cents)
    ]
    grid = np.unique(np.concatenate([m["times"] for m in msgs]))
    total = None
    for k, (t, e, g) in enumerate(cents):
        ledger.send("server", f"centre{k}", {"grid": grid}, 2, "broadcast")
        m = ledger.send(
            f"centre{k}", "server", centre_counts(t, e, g, grid, labels), 2, "km_counts"
        )
        total = m if total is None else {key: total[key] + m[key] for key in total}
    return grid, list(labels), total


def km_from_counts(grid: np.ndarray, labels: list[str], counts: dict) -> pd.DataFrame:
    """Long table (group, time, at_risk, events, survival) at every grid time with n > 0."""
    rows = []
    for i, lab in enumerate(labels):
        n, d = counts["at_risk"][i], counts["events"][i]
        ok = n > 0
        surv = np.cumprod(np.where(ok, 1 - d / np.where(ok, n, 1), 1.0))
        rows.append(
            pd.DataFrame(
                {
                    "group": lab,
                    "time": grid[ok],
                    "at_risk": n[ok],
                    "events": d[ok],
                    "survival": surv[ok],
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def logrank_from_counts(counts: dict) -> tuple[float, float, int]:
    """Multivariate log-rank (chi², p, df) from summed counts (G groups ≥ 2)."""
    n_g, d_g = counts["at_risk"], counts["events"]
    G = n_g.shape[0]
    if G < 2:
        raise InputDataError("the log-rank test needs at least two groups", where="log-rank")
    n, d = n_g.sum(axis=0), d_g.sum(axis=0)
    ok = n > 0
    n_g, d_g, n, d = n_g[:, ok], d_g[:, ok], n[ok], d[ok]
    z = (d_g - d * n_g / n).sum(axis=1)
    f = np.where(n > 1, d * (n - d) / np.maximum(n - 1, 1) / n, 0.0)
    v = np.einsum("t,gt->g", f, n_g)
    V = np.diag(v) - np.einsum("t,gt,ht->gh", f / n, n_g, n_g)
    zz, VV = z[: G - 1], V[: G - 1, : G - 1]
    chi2 = float(zz @ np.linalg.solve(VV, zz))
    return chi2, float(stats.chi2.sf(chi2, G - 1)), G - 1


def federated_km(
    centres, ledger: Ledger | None = None, labels=None
) -> tuple[pd.DataFrame, tuple[float, float, int] | None]:
    """KM table per group and the log-rank test (None with one group) from the centres."""
    grid, labels, counts = federated_counts(centres, ledger, labels)
    lr = logrank_from_counts(counts) if len(labels) > 1 else None
    return km_from_counts(grid, labels, counts), lr
