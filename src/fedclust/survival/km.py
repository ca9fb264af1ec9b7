"""Federated Kaplan–Meier and log-rank test on a public time grid (seed 003 §11.2; issue 22).

The exact protocol this replaces sent each centre's distinct follow-up times and, per group and
time, its events and censorings: the server rebuilt every centre's (time, status, group) table
(:func:`fedclust.privacy.attacks.km_records`). Now:

- the time grid is **public and the centre's own** (``survival.km_grid``: edges 0, step, 2·step,
  …, ``max``), never derived from data; a request with another grid is refused (two grids would
  difference each other's cells);
- each centre counts, per group and grid interval [τ_j, τ_{j+1}), its events and censorings, and
  **merges small cells** (:func:`merge_cells`): a non-empty cell below the centre's
  ``nfilter_tab`` is carried into the next interval (the last one back into the previous released
  cell), so every released cell is 0 or ≥ the floor; a group whose events, censorings or size
  cannot reach the floor is suppressed (sent as 0 patients);
- the message (protocol ``survival_km_counts``) is three count tables — events, censorings, and
  the group sizes — all 0 or ≥ the floor. The server adds them; at risk at the start of interval j
  is ``N − Σ_{i<j} (d_i + c_i)``, the survival after interval j ``Π_{i≤j} (1 − d_i / n_i)`` is
  drawn from τ_j, and the (multivariate) log-rank statistic is the grouped-time one.

With edges at every distinct time and a floor of 1 the result is the exact pooled KM and
log-rank (tested against lifelines); the default grid's distance to the exact pooled KM is
reported with the reference checks. :func:`km_table` is the exact KM of *one* site's own data
(the blind-test site's figure): a local analysis, no message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import INPROCESS, Abstain, Ledger, Protocol, Transport, federate

from .cohort import check_survival

KM_REQUEST = Protocol("survival_km_request", {"parameters": "parameters", "labels": "metadata"})
KM_COUNTS = Protocol(
    "survival_km_counts", {"events": "table", "censored": "table", "n": "table"}, min_samples=1
)
PROTOCOLS = (KM_REQUEST, KM_COUNTS)


def grid_edges(cfg: Mapping[str, Any] | None) -> np.ndarray:
    """The public grid ``0, step, …, ≤ max`` of ``survival.km_grid`` ({step, max}, years)."""
    cfg = cfg or {}
    step, top = float(cfg.get("step", 0.25)), float(cfg.get("max", 20.0))
    if not (np.isfinite(step) and step > 0 and top > step):
        raise ConfigError(
            f"km_grid step = {step}, max = {top}: need 0 < step < max",
            where="survival.km_grid",
            fix="e.g. {step: 0.25, max: 20} (years)",
        )
    return np.arange(0.0, top + step / 2, step)


def interval_counts(t, e, groups, edges: np.ndarray, labels: Sequence[str]):
    """Per (group, interval [τ_j, τ_{j+1})): events and censorings; per group its size. Times
    before τ_0 fall into the first interval, times ≥ the last edge into the last one."""
    t, e, g = np.asarray(t, float), np.asarray(e).astype(bool), np.asarray(groups).astype(str)
    pos = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, len(edges) - 1)
    events = np.zeros((len(labels), len(edges)))
    censored = np.zeros_like(events)
    sizes = np.zeros(len(labels))
    for i, lab in enumerate(labels):
        m = g == lab
        sizes[i] = m.sum()
        np.add.at(events[i], pos[m & e], 1)
        np.add.at(censored[i], pos[m & ~e], 1)
    return events, censored, sizes


def merge_cells(x: np.ndarray, floor: int) -> np.ndarray | None:
    """Cells of ``x`` (counts along time) made 0 or ≥ ``floor``: consecutive cells are pooled
    until they hold ``floor``, and the pool is released in the cell of its median member (what
    is left at the end joins the last pool). None when the total is below the floor (nothing can
    be released). ``floor = 1`` returns ``x``."""
    x = np.asarray(x, dtype=float)
    out = np.zeros_like(x)
    pools: list[list[int]] = []
    cur: list[int] = []
    for j, v in enumerate(x):
        cur += [j] * int(round(v))
        if len(cur) >= floor:
            pools.append(cur)
            cur = []
    if cur:
        if not pools:
            return None
        pools[-1] += cur
    for p in pools:
        out[p[(len(p) - 1) // 2]] += len(p)
    return out


def safe_counts(t, e, groups, edges, labels, floor: int) -> dict[str, np.ndarray]:
    """The centre's message: events / censorings / sizes with every non-empty cell ≥ ``floor``
    (module docstring); ``floor = 1`` leaves the counts as they are."""
    events, censored, sizes = interval_counts(t, e, groups, edges, labels)
    for i in range(len(labels)):
        d, c = merge_cells(events[i], floor), merge_cells(censored[i], floor)
        ok = sizes[i] >= floor and (d is not None or not events[i].any())
        ok = ok and (c is not None or not censored[i].any())
        if ok:
            events[i] = d if d is not None else 0.0
            censored[i] = c if c is not None else 0.0
        else:  # the group cannot be released at this floor: suppressed
            events[i], censored[i], sizes[i] = 0.0, 0.0, 0.0
    return {"events": events, "censored": censored, "n": sizes}


class KMCentre:
    """One centre's side of the KM protocol: its own patients, its own grid and floor."""

    protocols = {"km_counts": KM_COUNTS}

    def __init__(self, cid: str, t, e, groups, edges: np.ndarray, disclosure=None):
        check_survival(t, e, f"federated Kaplan–Meier, centre {cid}")
        self.cid, self.edges, self.disclosure = cid, np.asarray(edges, float), disclosure
        self.t, self.e = np.asarray(t, float), np.asarray(e).astype(bool)
        self.g = np.full(len(self.t), "all") if groups is None else np.asarray(groups).astype(str)
        self.n_samples = len(self.t)
        where = f"federated Kaplan–Meier, centre {cid}"
        if self.g.shape != self.t.shape:
            raise InputDataError(f"{self.g.size} group labels for {self.t.size} patients",
                                 where=where, fix="one group label per patient")  # fmt: skip
        ed = self.edges
        if ed.ndim != 1 or ed.size < 2 or not np.isfinite(ed).all() or (np.diff(ed) <= 0).any():
            raise InputDataError(
                "the centre's time grid is not finite and increasing",
                where=where,
                fix="edges 0 < step < … < max (km.grid_edges)",
            )

    @property
    def floor(self) -> int:
        from fedclust.federation.guard import centre_policy

        return int(centre_policy(self).nfilter_tab)

    def km_counts(self, parameters, config: Mapping[str, Any]) -> dict[str, np.ndarray] | Abstain:
        grid = np.asarray(parameters, float)
        if grid.shape != self.edges.shape or not np.array_equal(grid, self.edges):
            return Abstain("refused: the requested time grid is not the centre's own")
        labels = [str(v) for v in config["labels"]]
        return safe_counts(self.t, self.e, self.g, self.edges, labels, self.floor)


def km_server(proxies, edges: np.ndarray, labels: Sequence[str]) -> dict[str, np.ndarray]:
    """Server side: request every centre's tables on the public grid and add them."""
    request = {"parameters": np.asarray(edges, float), "labels": list(labels)}
    total = None
    for p in proxies:
        m = p.call("km_counts", request, 1, "km_counts", KM_COUNTS, KM_REQUEST)
        if m is None:
            continue
        total = m if total is None else {k: total[k] + m[k] for k in total}
    if total is None:
        raise InputDataError("every centre refused the Kaplan–Meier request", where="federated KM")
    return total


def federated_counts(
    centres: Sequence[tuple],
    edges: np.ndarray,
    labels: Sequence[str] | None = None,
    ledger: Ledger | None = None,
    policies: Sequence[Any] | None = None,
    transport: Transport = INPROCESS,
) -> dict[str, np.ndarray]:
    """``centres``: (t, e, groups) per centre (groups None = one group "all"); ``labels``: the
    public group labels (None: ["all"]); ``policies``: each centre's disclosure policy (None:
    the configured one). Returns the summed tables."""
    labels = ["all"] if labels is None else [str(v) for v in labels]
    pols = list(policies) if policies is not None else [None] * len(centres)
    objs = [KMCentre(f"centre{k}", t, e, g, edges, pol)
            for k, ((t, e, g), pol) in enumerate(zip(centres, pols, strict=True))]  # fmt: skip
    return federate(objs, lambda ps: km_server(ps, edges, labels), ledger=ledger,
                    transport=transport)  # fmt: skip


def at_risk(counts: Mapping[str, np.ndarray]) -> np.ndarray:
    """At risk at the start of each interval: N − Σ_{i<j} (d_i + c_i)."""
    gone = np.cumsum(counts["events"] + counts["censored"], axis=1)
    return counts["n"][:, None] - np.hstack([np.zeros((gone.shape[0], 1)), gone[:, :-1]])


def km_from_counts(edges: np.ndarray, labels: Sequence[str], counts: Mapping) -> pd.DataFrame:
    """Long table (group, time, at_risk, events, survival) at every interval with n > 0; the
    survival after the interval's events is drawn from its start τ_j."""
    n_all, rows = at_risk(counts), []
    for i, lab in enumerate(labels):
        n, d = n_all[i], counts["events"][i]
        ok = n > 0
        surv = np.cumprod(np.where(ok, 1 - d / np.where(ok, n, 1), 1.0))
        rows.append(pd.DataFrame({"group": lab, "time": np.asarray(edges)[ok], "at_risk": n[ok],
                                  "events": d[ok], "survival": surv[ok]}))  # fmt: skip
    return pd.concat(rows, ignore_index=True)


def logrank_from_counts(counts: Mapping) -> tuple[float, float, int]:
    """Multivariate log-rank (chi², p, df) from summed counts (G groups ≥ 2)."""
    n_g, d_g = at_risk(counts), counts["events"]
    seen = n_g.max(axis=1) > 0  # a group suppressed at every centre has no risk set
    n_g, d_g = n_g[seen], d_g[seen]
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
    centres: Sequence[tuple],
    edges: np.ndarray,
    labels: Sequence[str] | None = None,
    ledger: Ledger | None = None,
    policies: Sequence[Any] | None = None,
    transport: Transport = INPROCESS,
) -> tuple[pd.DataFrame, tuple[float, float, int] | None]:
    """KM table per group and the log-rank test (None with one group) from the centres' tables
    on the public grid ``edges``."""
    labels = ["all"] if labels is None else [str(v) for v in labels]
    counts = federated_counts(centres, edges, labels, ledger, policies, transport)
    lr = logrank_from_counts(counts) if len(labels) > 1 else None
    return km_from_counts(edges, labels, counts), lr


def km_table(t, e, groups, labels: Sequence[str] | None = None):
    """Exact KM and log-rank of *one* site's own patients (a local analysis; nothing is sent):
    the same formulas on the site's distinct times."""
    check_survival(t, e, "Kaplan–Meier")
    t = np.asarray(t, float)
    g = np.full(len(t), "all") if groups is None else np.asarray(groups).astype(str)
    labels = sorted(set(g.tolist())) if labels is None else [str(v) for v in labels]
    edges = np.unique(t)
    d, c, n = interval_counts(t, e, g, edges, labels)
    counts = {"events": d, "censored": c, "n": n}
    lr = logrank_from_counts(counts) if len(labels) > 1 else None
    return km_from_counts(edges, labels, counts), lr


def distance_to_exact(
    km: pd.DataFrame, edges: np.ndarray, t, e, groups, min_at_risk: int = 0
) -> float:
    """max over the grid times τ_j and groups of |S_grid(τ_j−) − S_KM(τ_j−)|: the grid curve is
    defined at the grid (just before τ_j it holds every event before τ_j), the exact KM from the
    pooled data (an evaluation: the reference checks compute it, the protocol never does). Zero
    for a grid at every distinct time with a floor of 1. ``min_at_risk``: only grid times where
    the federated table has at least that many of the group at risk (the tail, where the last
    few patients' cells were merged, is left out)."""
    exact, _ = km_table(t, e, groups)
    edges = np.asarray(edges, float)
    worst = 0.0
    for lab, sub in exact.groupby("group", sort=False):
        mine = km[km.group == lab]
        if mine.empty:
            continue

        def before(tab: pd.DataFrame, at: np.ndarray = edges) -> np.ndarray:
            i = np.searchsorted(tab["time"].to_numpy(), at, side="left") - 1
            s = tab["survival"].to_numpy()
            return np.where(i >= 0, s[np.maximum(i, 0)], 1.0)

        diff = np.abs(before(sub) - before(mine))
        if min_at_risk:
            i = np.searchsorted(mine["time"].to_numpy(), edges, side="right") - 1
            n = np.where(i >= 0, mine["at_risk"].to_numpy()[np.maximum(i, 0)], np.inf)
            diff = diff[n >= min_at_risk]
        worst = max(worst, float(diff.max()) if diff.size else 0.0)
    return worst
