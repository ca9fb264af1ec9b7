"""Tables 4.1–4.4 and Figs 4.1–4.3 of seed 004 for both modes and both client splits."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from . import published
from .simulate import weighted_summary
from .topologies import PEER_TO_PEER

Key = tuple[str, str, str]  # split, mode, approach
SERVER = ("FL", "FL_SMA")
ORDER = ["RAR", "GL_conditional", "GL_random", "customized", "FL", "FL_SMA"]
MODE_LABEL = {"as_published": "published", "as_described": "described"}


def summaries(metrics: Mapping[Key, pd.DataFrame]) -> dict[Key, pd.DataFrame]:
    return {k: weighted_summary(m).set_index("round") for k, m in metrics.items()}


def _columns(split: str, approaches: list[str], modes: list[str], with_thesis: bool):
    cols = []
    for a in [a for a in ORDER if a in approaches]:
        if with_thesis and split == "hospitals" and a in published.ORDER:
            cols.append((a, "thesis"))
        if a in SERVER:
            cols.append((a, "as_described"))  # FL has no exchange bug: one run serves both modes
        else:
            cols += [(a, m) for m in modes]
    return cols


def _label(a: str, m: str) -> str:
    if m == "thesis":
        return f"{a} thesis"
    return a if a in SERVER else f"{a} {MODE_LABEL[m]}"


def early_table(
    summ: Mapping[Key, pd.DataFrame], split: str, metric: str, n_rounds: int,
    approaches: list[str], modes: list[str],
) -> pd.DataFrame:  # fmt: skip
    """Rounds 1..n of the n_train-weighted mean ``metric`` (Tables 4.1–4.3), thesis beside."""
    thesis = published.early(metric) if metric in published.EARLY else {}
    out = pd.DataFrame(index=pd.RangeIndex(1, n_rounds + 1, name="round"))
    for a, m in _columns(split, approaches, modes, bool(thesis)):
        if m == "thesis":
            out[_label(a, m)] = [thesis[a].get(r, np.nan) for r in out.index]
        elif (split, m, a) in summ:
            s = summ[(split, m, a)]
            col = s[metric] if metric in s.columns else pd.Series(np.nan, index=s.index)
            out[_label(a, m)] = col.reindex(out.index).to_numpy()
    return out.round(3)


def divergence_table(
    div: Mapping[Key, pd.DataFrame], split: str, at_round: int, modes: list[str],
    approaches: list[str],
) -> tuple[pd.DataFrame, int]:  # fmt: skip
    """Table 4.4: divergence per client pair at ``at_round`` (or the last round run)."""
    p2p = [a for a in approaches if a in PEER_TO_PEER]
    got = [d for (s, _, a), d in div.items() if s == split and a in p2p and not d.empty]
    if not got:
        return pd.DataFrame(), 0
    rnd = min(at_round, int(min(d["round"].max() for d in got)))
    thesis = published.divergence_round50()
    out: dict[str, pd.Series] = {}
    for a, m in _columns(split, p2p, modes, True):
        if m == "thesis":
            if rnd == 50:  # only comparable at the thesis' round
                out[_label(a, m)] = pd.Series(thesis[a])
        elif (split, m, a) in div:
            d = div[(split, m, a)]
            out[_label(a, m)] = d[d["round"] == rnd].set_index("pair")["divergence"]
    tab = pd.DataFrame(out)
    tab.index.name = "pair"
    return tab.round(3), rnd


def figure_curves(summ, split, approaches, modes, xlim=None, ylims=None):
    """Figs 4.1 / 4.2: loss (total and BCE), accuracy, AUC per round; one column per mode."""
    import matplotlib.pyplot as plt

    panels = [("loss_total", "loss (BCE + L1/L2 penalty)"), ("loss_bce", "loss (BCE only)"),
              ("accuracy", "accuracy"), ("auc", "AUC")]  # fmt: skip
    fig, axes = plt.subplots(len(panels), len(modes), figsize=(6 * len(modes), 11), squeeze=False)
    for j, m in enumerate(modes):
        for i, (metric, lab) in enumerate(panels):
            ax = axes[i, j]
            for a in [a for a in ORDER if a in approaches]:
                key = (split, "as_described" if a in SERVER else m, a)
                if key in summ:
                    s = summ[key]
                    ax.plot(s.index, s[metric], label=a, alpha=0.7)
            ax.set_ylabel(f"average {lab}")
            ax.grid(True, alpha=0.3)
            if xlim:
                ax.set_xlim(*xlim.get(metric, (0, None)))
            if ylims and metric in ylims:
                ax.set_ylim(*ylims[metric])
            if i == 0:
                ax.set_title(f"{split}: {m}")
        axes[-1, j].set_xlabel("communication round")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def figure_divergence(div, split, approaches, modes):
    """Fig 4.3: mean weight divergence over the client pairs per round; one panel per mode."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(modes), figsize=(8 * len(modes), 6), squeeze=False)
    for j, m in enumerate(modes):
        ax = axes[0, j]
        for a in [a for a in ORDER if a in approaches and a in PEER_TO_PEER]:
            if (split, m, a) in div:
                d = div[(split, m, a)].groupby("round")["divergence"].mean()
                ax.plot(d.index, d.to_numpy(), label=a, alpha=0.8)
        ax.set_title(f"{split}: {m}")
        ax.set_xlabel("communication round")
        ax.set_ylabel("average weight divergence (mean over pairs)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
