"""KM curves of predicted risk groups on the blind test set (D6.2 shows none; seed 003 §11.2).

The blind test set is one site; its KM and log-rank are that site's own exact analysis
(:func:`.km.km_table`, equal to lifelines, tested): nothing crosses a boundary."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .km import km_table
from .tables import ROW_NAMES, SCEN_NAMES, risk_groups


def km_risk_groups(
    preds: dict[tuple[str, str], pd.DataFrame],
    scenarios: list[str],
    strategies: list[str],
    title: str,
    n_groups: int = 3,
):
    """Grid of panels (rows: scenarios, columns: strategies); returns (figure, log-rank table)."""
    fig, axes = plt.subplots(
        len(scenarios),
        len(strategies),
        squeeze=False,
        figsize=(2.9 * len(strategies), 2.4 * len(scenarios)),
        sharex=True,
        sharey=True,
    )
    rows = []
    for i, sc in enumerate(scenarios):
        for j, st in enumerate(strategies):
            ax = axes[i][j]
            p = preds.get((sc, st))
            if p is None:
                ax.axis("off")
                continue
            grp = risk_groups(p["risk"].to_numpy(), n_groups)
            km, (chi2, pv, dof) = km_table(p["time"].to_numpy(), p["event"].to_numpy(), grp)
            for g in ("low", "intermediate", "high"):
                sub = km[km.group == g]
                if len(sub):
                    ax.step(np.r_[0, sub["time"]], np.r_[1, sub["survival"]], where="post", label=g)
            ax.set_title(
                f"{SCEN_NAMES.get(sc, sc)} / {ROW_NAMES[st].split(' (')[0]}\nlog-rank p = {pv:.1g}",
                fontsize=7,
            )
            ax.tick_params(labelsize=6)
            rows.append(
                {
                    "scenario": sc,
                    "strategy": st,
                    "logrank_chi2": chi2,
                    "p": pv,
                    "df": dof,
                    "n_test": len(p),
                }
            )
    axes[0][0].legend(fontsize=6, title="predicted risk", title_fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.supxlabel("years", fontsize=8)
    fig.supylabel("survival probability", fontsize=8)
    fig.tight_layout()
    return fig, pd.DataFrame(rows)
