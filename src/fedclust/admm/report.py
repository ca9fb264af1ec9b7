"""Tables and convergence figures of the ADMM stage (seed 003 §2; D6.2 gives no numbers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

SUMMARY_COLUMNS = [
    "task",
    "problem",
    "dataset",
    "mode",
    "n",
    "d",
    "centers",
    "lam",
    "rho",
    "iterations",
    "converged",
    "objective",
    "reference_objective",
    "relative_gap",
    "max_abs_coef_diff",
    "metric_name",
    "metric",
    "nonzero_coefs",
    "messages",
    "floats",
    "seconds",
]


def summary_table(infos: Mapping[tuple[str, str], dict[str, Any]]) -> pd.DataFrame:
    """One row per (task, mode) job."""
    rows = [
        {"task": t, **{k: v for k, v in info.items() if k in SUMMARY_COLUMNS}}
        for (t, _), info in infos.items()
    ]
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def convergence_figure(
    task: str, histories: Mapping[str, pd.DataFrame], f_ref: float, title: str = ""
):
    """Three panels vs iteration: relative suboptimality (f(z_k) − f*)/|f*|, primal and dual
    residual; one line per mode (centralized / distributed)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    styles = {"centralized": ("C0", "-"), "distributed": ("C3", "--")}
    for mode, h in histories.items():
        c, ls = styles.get(mode, ("k", ":"))
        gap = np.maximum(np.abs(h["objective"].to_numpy() - f_ref) / abs(f_ref), 1e-16)
        axes[0].semilogy(h["iteration"], gap, color=c, ls=ls, label=mode)
        axes[1].semilogy(
            h["iteration"], np.maximum(h["primal_residual"], 1e-16), color=c, ls=ls, label=mode
        )
        axes[2].semilogy(
            h["iteration"], np.maximum(h["dual_residual"], 1e-16), color=c, ls=ls, label=mode
        )
        for ax, col in ((axes[1], "eps_pri"), (axes[2], "eps_dual")):
            if h[col].notna().any():
                ax.semilogy(
                    h["iteration"], h[col], color=c, ls=":", lw=0.8, label=f"{mode} tolerance"
                )
    names = ["|f(z_k) − f*| / |f*|", "primal residual r_k", "dual residual s_k"]
    for ax, name in zip(axes, names, strict=True):
        ax.set_xlabel("iteration k")
        ax.set_title(name, fontsize=10)
    axes[0].legend(fontsize=8)
    axes[2].legend(fontsize=7)
    fig.suptitle(title or task, fontsize=11)
    fig.tight_layout()
    return fig


def message_table(ledgers: Mapping[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Messages and floats per (task, kind, direction) of the distributed jobs."""
    cols = ["task", "mode", "kind", "direction", "fields", "messages", "floats"]
    rows = []
    for (task, mode), t in ledgers.items():
        if t.empty:
            continue
        t = t.assign(
            direction=np.where(t["sender"] == "server", "server->center", "center->server")
        )
        for (kind, direction), g in t.groupby(["kind", "direction"], sort=False):
            rows.append(
                {
                    "task": task,
                    "mode": mode,
                    "kind": kind,
                    "direction": direction,
                    "fields": g["fields"].iloc[0],
                    "messages": len(g),
                    "floats": int(g["floats"].sum()),
                }
            )
    return pd.DataFrame(rows, columns=cols)
