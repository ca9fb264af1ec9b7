"""The tuning figures of seed 000 (§5.5 figure table): Figs 5.1–5.4 (EUROMDS regularisers:
dropout, corruption, Gaussian σ, modified-loss β) and A.1–A.10 (TSAE learning rate with / without
the LR scheduler: MNIST, BMNIST, EUROMDS "DEC", "CURVES", "GOOGLE"). One scatter of the final
(validation) loss against the tuned hyper-parameter per optimizer, a dashed line in the
optimizer's colour at its best loss, the best point ringed, and the thesis' best as a star."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker

from .tuning_spec import REGULARIZERS, THESIS, THESIS_ARCH, architectures

COLOURS = {"sgd": "tab:blue", "adam": "tab:orange", "yogi": "tab:green"}
#: grids with thesis figures, and the column of their x axis
FIGURE_GRIDS = {"lr": "lr", "regularizers": "value"}
XLABELS = {"lr": "learning rate", "dropout": "hidden dropout rate",
           "corruption": "input corruption rate", "sigma": "Gaussian noise σ",
           "beta": "modified-loss β"}  # fmt: skip
#: (dataset, grid, panel) → the thesis figure it reproduces (seed 000 §5.5)
THESIS_FIGURES = {
    ("mnist", "lr", "plateau"): "Fig. A.1", ("mnist", "lr", "none"): "Fig. A.2",
    ("bmnist", "lr", "plateau"): "Fig. A.3", ("bmnist", "lr", "none"): "Fig. A.4",
    ("mds", "lr", "plateau"): "Fig. A.5", ("mds", "lr", "none"): "Fig. A.6",
    ("mds", "lr", "plateau_dec"): "Fig. A.5", ("mds", "lr", "none_dec"): "Fig. A.6",
    ("mds", "lr", "plateau_curves"): "Fig. A.7", ("mds", "lr", "none_curves"): "Fig. A.8",
    ("mds", "lr", "plateau_google"): "Fig. A.9", ("mds", "lr", "none_google"): "Fig. A.10",
    ("mds", "regularizers", "dropout"): "Fig. 5.1",
    ("mds", "regularizers", "corruption"): "Fig. 5.2",
    ("mds", "regularizers", "sigma"): "Fig. 5.3",
    ("mds", "regularizers", "beta"): "Fig. 5.4",
}  # fmt: skip
#: what our data set is, by (dataset, config data.<mds|mnist>.source)
SOURCES = {
    "simulated": "a simulated MDS-like binary matrix (54 features of Table 3.1)",
    "ipssm": "the public IPSS-M MDS cohort (binary genes + cytogenetics)",
    "digits": "scikit-learn's 8×8 digits (offline stand-in for MNIST)",
    "mlxtend5k": "a 5 000-image MNIST subset",
    "idx": "MNIST (the 60 000 training images)",
}


def dataset_label(dataset: str, source: str | None = None) -> str:
    """Which data set we ran, in words (captions: our MDS stands in for the private EUROMDS)."""
    what = SOURCES.get(source or "", source or "config data." + dataset)
    if dataset == "mds":
        return f"mds = {what}, standing in for the private EUROMDS"
    if dataset == "bmnist":
        return f"bmnist = {what}, binarised"
    return f"{dataset} = {what}"


def figure_panels(cfg: dict, dataset: str, grid: str) -> list[str]:
    """The figures of one grid: one per LR scheduler (lr), one per regulariser."""
    if grid == "lr":
        scheds = list(cfg["tuning"]["step1"]["schedulers"])
        archs = architectures(cfg, dataset)
        return [f"{s}_{a.lower()}" for a in archs for s in scheds] if archs else scheds
    if grid == "regularizers":
        return list(REGULARIZERS)
    return []


def panel_rows(table: pd.DataFrame, grid: str, panel: str) -> pd.DataFrame:
    """The rows of ``table`` one figure shows (lr: ``<scheduler>[_<architecture>]``)."""
    if grid == "lr" and "_" in panel:
        sched, arch = panel.split("_", 1)
        return table[(table["scheduler"].astype(str) == sched)
                     & (table["architecture"].astype(str).str.lower() == arch)]  # fmt: skip
    col = {"lr": "scheduler", "regularizers": "kind"}[grid]
    return table[table[col].astype(str) == panel]


def best_rows(table: pd.DataFrame, x: str) -> pd.DataFrame:
    """Each optimizer's lowest finite loss (first on ties, table order)."""
    t = table[np.isfinite(table["loss"].astype(float))]
    return (
        t.sort_values("loss", kind="mergesort")
        .groupby("optimizer", sort=False)
        .head(1)[["optimizer", x, "loss"]]
    )


def thesis_rows(dataset: str, grid: str, panel: str) -> pd.DataFrame:
    """The thesis' best value and loss per optimizer for one figure (empty where it prints
    none), columns optimizer, x, loss."""
    rows = pd.DataFrame(THESIS.get((dataset, grid), []))
    if grid == "lr" and "_" in panel:  # Table A.3 per architecture ("dec": THESIS' rows)
        panel, arch = panel.split("_", 1)
        if arch != "dec":
            rows = pd.DataFrame(THESIS_ARCH.get(arch.upper(), []) if dataset == "mds" else [])
    if rows.empty or grid not in FIGURE_GRIDS:
        return pd.DataFrame(columns=["optimizer", "x", "loss"])
    rows = panel_rows(rows, grid, panel)
    return rows.rename(columns={FIGURE_GRIDS[grid]: "x"})[["optimizer", "x", "loss"]]


def _lr_panel(panel: str) -> str:
    sched, _, arch = panel.partition("_")
    return f"LR scheduler {sched}" + (f', architecture "{arch.upper()}"' if arch else "")


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def tuning_figure(
    table: pd.DataFrame,
    x: str,
    *,
    log_x: bool = False,
    xlabel: str | None = None,
    title: str = "",
    thesis: pd.DataFrame | None = None,
    optimizers: list[str] | None = None,
) -> plt.Figure:
    """Final loss against ``x`` (seed 000 §5.5: scatter per optimizer, dashed line at each
    optimizer's best loss). ``thesis`` (optimizer, x, loss) adds the thesis' best points as
    stars. Points whose loss is not finite (diverged) are counted in the legend, not drawn.
    The best lines carry gid ``best:<optimizer>``, the scatters ``points:<optimizer>``."""
    opts = optimizers or list(dict.fromkeys(table["optimizer"]))
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    finite = table[np.isfinite(table["loss"].astype(float))]
    best = best_rows(table, x).set_index("optimizer")
    th = thesis if thesis is not None else pd.DataFrame(columns=["optimizer", "x", "loss"])
    th = th.set_index("optimizer")
    for o in opts:
        c = COLOURS.get(o, None)
        rows = finite[finite["optimizer"] == o]
        n_bad = int((table["optimizer"] == o).sum() - len(rows))
        label = f"{o} ({len(rows)} runs" + (f", {n_bad} diverged)" if n_bad else ")")
        sc = ax.scatter(rows[x], rows["loss"], s=18, alpha=0.7, color=c, label=label)
        sc.set_gid(f"points:{o}")
        if o in best.index:
            bx, by = float(best.loc[o, x]), float(best.loc[o, "loss"])
            line = ax.axhline(by, ls="--", lw=1.2, color=c,
                              label=f"{o} best: {_fmt(bx)}, loss {by:.4g}")  # fmt: skip
            line.set_gid(f"best:{o}")
            ax.scatter([bx], [by], s=90, facecolors="none", edgecolors=c, linewidths=1.5)
        if o in th.index:
            tx, ty = float(th.loc[o, "x"]), float(th.loc[o, "loss"])
            ax.scatter([tx], [ty], marker="*", s=160, color=c, edgecolors="black",
                       linewidths=0.6, label=f"thesis {o}: {_fmt(tx)}, loss {ty:.4g}")  # fmt: skip
    if log_x:
        ax.set_xscale("log")
        xs = np.concatenate([finite[x].to_numpy(float), th["x"].to_numpy(float)])
        xs = xs[xs > 0]
        if len(xs) and np.log10(xs.max() / xs.min()) <= 2:  # few decades: label 1-2-5
            ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    losses = np.concatenate([finite["loss"].to_numpy(float), th["loss"].to_numpy(float)])
    if len(losses) and losses.min() > 0 and losses.max() / losses.min() > 20:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel("final loss (validation MSE)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def grid_figure(
    table: pd.DataFrame, dataset: str, grid: str, panel: str, optimizers: list[str] | None = None
) -> plt.Figure:
    """One tuning figure from a grid table (results/dec/<dataset>/tuning/<grid>.tsv)."""
    x = FIGURE_GRIDS[grid]
    rows = panel_rows(table, grid, panel)
    fig_no = THESIS_FIGURES.get((dataset, grid, panel), "no thesis figure")
    what = _lr_panel(panel) if grid == "lr" else XLABELS[panel]
    return tuning_figure(
        rows, x, log_x=grid == "lr", xlabel=XLABELS["lr" if grid == "lr" else panel],
        title=f"{dataset}: TSAE tuning, {what} ({fig_no})",
        thesis=thesis_rows(dataset, grid, panel), optimizers=optimizers,
    )  # fmt: skip


def thesis_caption(dataset: str, grid: str, panel: str, source: str | None = None) -> str:
    """The thesis' side of a figure's caption (rule params → report/dec_tuning.rst)."""
    fig = THESIS_FIGURES.get((dataset, grid, panel))
    th = thesis_rows(dataset, grid, panel)
    name = XLABELS["lr" if grid == "lr" else panel]
    head = (f"Reproduces thesis {fig}" if fig else "No thesis figure for this panel") + (
        f"; data set: {dataset_label(dataset, source)}."
    )
    if th.empty:
        return head + " The thesis prints no best values for it."
    vals = "; ".join(f"{r.optimizer} {name} {_fmt(float(r.x))}, loss {float(r.loss):.4g}"
                     for r in th.itertuples())  # fmt: skip
    return f"{head} Thesis best ({fig}'s table): {vals}."


def figure_caption(
    table: pd.DataFrame, dataset: str, grid: str, panel: str, source: str | None = None
) -> str:
    """Caption with our best values beside the thesis' (the report section's figure list)."""
    x = FIGURE_GRIDS[grid]
    ours = best_rows(panel_rows(table, grid, panel), x)
    th = thesis_rows(dataset, grid, panel).set_index("optimizer")
    name = XLABELS["lr" if grid == "lr" else panel]
    parts = []
    for r in ours.itertuples():
        s = f"{r.optimizer}: ours {name} {_fmt(float(getattr(r, x)))}, loss {float(r.loss):.4g}"
        if r.optimizer in th.index:
            t = th.loc[r.optimizer]
            s += f" | thesis {_fmt(float(t['x']))}, loss {float(t['loss']):.4g}"
        parts.append(s)
    fig = THESIS_FIGURES.get((dataset, grid, panel), "no thesis figure")
    what = f"learning rate, {_lr_panel(panel)}" if grid == "lr" else name
    return (
        f"{fig}: TSAE final validation loss against the {what}, one point per run, "
        f"dashed line at each optimizer's best. Data set: {dataset_label(dataset, source)}. "
        f"Best per optimizer — {'; '.join(parts) or 'no finite run'}."
    )
