"""Figures of the attacks stage (seed 001 Figs 4.14–4.19). Quantile plots show the mean and the
10–90 % and 25–75 % quantiles, as in the thesis (ch. 4 intro)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


def _quantile_band(ax, x, groups, label, color) -> None:
    q = groups.quantile([0.1, 0.25, 0.75, 0.9]).unstack()
    mean = groups.mean()
    ax.fill_between(x, q[0.1], q[0.9], alpha=0.2, color=color, lw=0)
    ax.fill_between(x, q[0.25], q[0.75], alpha=0.35, color=color, lw=0)
    ax.plot(x, mean, "o-", color=color, label=label, ms=3)


def known_io_cohort_ranking(known: pd.DataFrame) -> pd.DataFrame:
    """Mean ε per cohort × preprocessing (averaged over fractions): lower = more leakage."""
    per = known.groupby(["preprocessing", "cohort", "fraction"]).max_rel_error.mean()
    return (
        per.groupby(["preprocessing", "cohort"]).mean().rename("mean_max_rel_error").reset_index()
    )


def fig_known_io(known: pd.DataFrame, preprocessing: str):
    """Figs 4.14 (size factors) / 4.15 (VST): worst (left) and best (right) cohort for privacy."""
    rank = known_io_cohort_ranking(known)
    rank = rank[rank.preprocessing == preprocessing].sort_values("mean_max_rel_error")
    picks = [rank.cohort.iloc[0], rank.cohort.iloc[-1]]
    titles = ["most leaked (lowest error)", "least leaked (highest error)"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for ax, cohort, title in zip(axes, picks, titles, strict=True):
        sub = known[(known.cohort == cohort) & (known.preprocessing == preprocessing)]
        g = sub.groupby("fraction").max_rel_error
        x = np.array(sorted(sub.fraction.unique()))
        _quantile_band(ax, x * 100, g, "max. relative error ε_x", "C0")
        ax.axhline(0.1, color="grey", ls=":", lw=1)
        ax.set(title=f"{cohort} ({title})", xlabel="known inputs (%)")
    axes[0].set_ylabel("guaranteed max. relative error (eq. 3.2)")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Known input-output attack, {preprocessing.replace('_', ' ')}")
    return fig, picks


def _box(ax, data: list[np.ndarray], labels: list[str], colors: list[str]) -> None:
    bp = ax.boxplot(data, patch_artist=True, whis=(10, 90), showfliers=False)
    for patch, c in zip(bp["boxes"], colors, strict=True):
        patch.set_facecolor(c)
        patch.set_alpha(0.6)
    for i, d in enumerate(data, start=1):
        ax.plot(np.full(len(d), i) + np.linspace(-0.1, 0.1, len(d)), d, "k.", ms=3)
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right", fontsize=8)


def fig_property_inference(acc: pd.DataFrame):
    """Fig 4.16: test accuracy per condition, invariant (orange) vs fixed (green) vs none (blue)."""
    colors = {"none": "C0", "invariant": "C1", "fixed": "C2"}
    data, labels, cols = [], [], []
    for cond in dict.fromkeys(acc.condition):
        for clf in ("none", "invariant", "fixed"):
            sub = acc[(acc.condition == cond) & (acc.classifier == clf)].test_accuracy.values
            if len(sub):
                data.append(sub)
                labels.append(cond if clf == "none" else f"{cond} {clf}")
                cols.append(colors[clf])
    fig, ax = plt.subplots(figsize=(8, 3.8))
    _box(ax, data, labels, cols)
    ax.axhline(acc.majority_share_test.mean(), color="grey", ls=":", lw=1, label="majority share")
    ax.set(ylabel="test accuracy (sex)", ylim=(0, 1), title="Property inference (sex)")
    ax.legend(fontsize=8)
    return fig


def _error_boxes(err: pd.DataFrame, by: list[str], color_by: str, title: str):
    keys = err[by].drop_duplicates().values.tolist()
    palette = {v: f"C{i}" for i, v in enumerate(dict.fromkeys(err[color_by]))}
    data, labels, cols = [], [], []
    for key in keys:
        mask = np.logical_and.reduce([err[c] == v for c, v in zip(by, key, strict=True)])
        data.append(err[mask].rel_error.values)
        labels.append(" ".join(str(v) for v in key))
        cols.append(palette[key[by.index(color_by)]])
    fig, ax = plt.subplots(figsize=(8, 3.8))
    _box(ax, data, labels, cols)
    ax.set(ylabel="relative reconstruction error", title=title)
    return fig, ax


def fig_4_17(err: pd.DataFrame):
    sub = err[err.experiment == "fig4_17"].copy()
    sub["proj"] = np.where(
        sub.projection == "orthogonal", "orthogonal", "gaussian(" + sub.k.astype(str) + ")"
    )
    fig, _ = _error_boxes(
        sub, ["proj", "decoder"], "decoder", "Linear vs MLP decoder (size factors)"
    )
    return fig


def fig_4_18(err: pd.DataFrame, pinv: pd.DataFrame):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, (cohort, g) in enumerate(pinv.groupby("cohort")):
        m = g.groupby("k").mean_rel_error
        _quantile_band(a1, np.array(sorted(g.k.unique())), m, cohort, f"C{i}")
    a1.set(
        xscale="log",
        xlabel="sketch size k",
        ylabel="relative error of Y Q⁺",
        title="Pseudo-inverse decoder",
    )
    a1.legend(fontsize=8)
    sub = err[err.experiment == "fig4_18"]
    keys = sub[["k", "init"]].drop_duplicates().values.tolist()
    colors = {"random": "C0", "pinv": "C1", "untrained": "C2"}
    data = [sub[(sub.k == k) & (sub.init == i)].rel_error.values for k, i in keys]
    _box(a2, data, [f"k={k} {i}" for k, i in keys], [colors[i] for _, i in keys])
    a2.set(ylabel="relative reconstruction error", title="Linear decoder: random vs pinv init")
    return fig


def fig_4_19(err: pd.DataFrame):
    sub = err[err.experiment == "fig4_19"].copy()
    sub["k_"] = "k=" + sub.k.astype(str)
    fig, _ = _error_boxes(
        sub,
        ["k_", "preprocessing"],
        "preprocessing",
        "Size factors vs VST, all genes (linear decoder, pinv init)",
    )
    return fig
