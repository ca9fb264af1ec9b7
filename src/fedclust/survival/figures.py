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


def centre_distributions(parts: dict[str, dict], endpoint: str):
    """D6.2 Fig. 8.7: distributions of survival time and marrow blasts per centre (boxes), one
    row per scenario. ``parts``: scenario → :func:`.prepare.prepare` output of one repetition
    (training part: ``t_train``, ``e_train``, ``bm_blast_train`` (raw %, imputed), ``centre``).
    Returns (figure, table of per-centre n, events, time and BM_BLAST quartiles)."""
    scen = list(parts)
    fig, axes = plt.subplots(
        len(scen), 2, squeeze=False, figsize=(8.0, 1.9 * len(scen) + 0.6), sharex=True
    )
    rows = []
    for i, sc in enumerate(scen):
        d = parts[sc]
        centre = np.asarray(d["centre"])
        ks = np.unique(centre)
        bm = d.get("bm_blast_train")
        for j, (name, v) in enumerate(
            ((f"{endpoint} time, years", d["t_train"]), ("marrow blasts (BM_BLAST), %", bm))
        ):
            ax = axes[i][j]
            if v is None:
                ax.axis("off")
                continue
            v = np.asarray(v, float)
            ax.boxplot(
                [v[centre == k] for k in ks], positions=ks + 1, widths=0.6, showfliers=False,
                medianprops={"color": "C3"},
            )  # fmt: skip
            ax.set_title(f"{SCEN_NAMES.get(sc, sc)}: {name}", fontsize=8)
            ax.tick_params(labelsize=6)
        for k in ks:
            m = centre == k
            q = np.percentile(d["t_train"][m], [25, 50, 75])
            qb = np.percentile(bm[m], [0, 50, 100]) if bm is not None else [np.nan] * 3
            rows.append(
                {
                    "scenario": sc,
                    "centre": int(k),
                    "n": int(m.sum()),
                    "events": int(np.asarray(d["e_train"])[m].sum()),
                    "time_q25": q[0],
                    "time_median": q[1],
                    "time_q75": q[2],
                    "time_min": float(d["t_train"][m].min()),
                    "time_max": float(d["t_train"][m].max()),
                    "bm_blast_min": qb[0],
                    "bm_blast_median": qb[1],
                    "bm_blast_max": qb[2],
                }
            )
    fig.supxlabel("centre", fontsize=8)
    fig.suptitle(
        f"{endpoint}: training centres of repetition 0 per scenario (D6.2 Fig. 8.7)", fontsize=9
    )
    fig.tight_layout()
    return fig, pd.DataFrame(rows)
