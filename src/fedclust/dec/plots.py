"""Figures of the DEC stage: training curves, t-SNE of the feature space, generated samples
from decoded centroids (seed 000 Figs 5.6, 5.9, 3.2); KM panels are in :mod:`.survival`."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from sklearn.manifold import TSNE

from fedclust.metrics.assignment import hungarian_mapping

from .model import DECModel


def training_curves(ae: pd.DataFrame, dec: pd.DataFrame, title: str):
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    for name, g in ae.groupby("optimizer"):
        axes[0].plot(g["epoch"], g["loss"], label=name)
    axes[0].set(xlabel="epoch", ylabel="reconstruction MSE", yscale="log", title="TSAE (Step 1)")
    axes[0].legend(fontsize=7)
    for (o, a, s), g in dec.groupby(["optimizer", "alpha", "scaler"]):
        axes[1].plot(g["epoch"], g["kl"], label=f"{o} α={a:g} {s}")
        axes[2].plot(g["epoch"], g["delta_label"], label=f"{o} α={a:g} {s}")
    axes[1].set(xlabel="epoch", ylabel="KL(P‖Q)", title="DEC (Step 2)")
    axes[2].set(xlabel="epoch", ylabel="fraction of labels changed", yscale="log", title="Δ_label")
    axes[2].legend(fontsize=5, ncol=2)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def federated_curves(curves: pd.DataFrame, title: str):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    for s, g in curves[curves.stage == "ae"].groupby("strategy"):
        axes[0].plot(g["round"], g["loss"], label=s)
    axes[0].set(xlabel="round", ylabel="clients' mean MSE", yscale="log", title="federated TSAE")
    axes[0].legend(fontsize=7)
    for (s, c), g in curves[curves.stage == "dec"].groupby(["strategy", "centroids"]):
        axes[1].plot(g["round"], g["loss"], label=f"{s} {c}")
    axes[1].set(xlabel="round", ylabel="clients' mean KL", title="federated DEC")
    axes[1].legend(fontsize=5, ncol=2)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def tsne_panels(
    z: np.ndarray, pred: np.ndarray, ref: np.ndarray | None, seed: int, max_points: int, title: str
):
    gen = np.random.default_rng(seed)
    idx = np.sort(gen.choice(len(z), size=min(max_points, len(z)), replace=False))
    emb = TSNE(n_components=2, random_state=seed, init="pca").fit_transform(z[idx])
    n = 2 if ref is not None else 1
    fig, axes = plt.subplots(1, n, figsize=(4.5 * n, 4), squeeze=False)
    panels = [("DEC clusters (Hungarian-mapped)", pred)]
    if ref is not None:
        mapping = hungarian_mapping(pred, ref)
        panels = [
            ("reference labels", ref),
            (
                "DEC clusters (Hungarian-mapped)",
                np.array([mapping.get(p, "unmatched") for p in pred]),
            ),
        ]
    for ax, (name, lab) in zip(axes[0], panels, strict=False):
        lab = np.asarray(lab).astype(str)[idx]
        for j, u in enumerate(sorted(np.unique(lab))):
            m = lab == u
            ax.scatter(emb[m, 0], emb[m, 1], s=3, color=plt.cm.tab10(j % 10), label=u)
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(fontsize=5, markerscale=3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


@torch.no_grad()
def generated_samples(model: DECModel, n_around: int, sigma: float, seed: int) -> np.ndarray:
    """Decode each centroid and ``n_around`` Gaussian perturbations of it: (k, 1+n, N)."""
    model.eval()
    mu = model.centroids.detach().cpu()
    gen = torch.Generator().manual_seed(seed)
    scale = sigma * mu.std(0, keepdim=True).clamp_min(1e-6)
    pts = [mu] + [mu + scale * torch.randn(mu.shape, generator=gen) for _ in range(n_around)]
    out = torch.stack([model.tsae.decode(p) for p in pts], dim=1)
    return out.numpy()


def digits_grid(samples: np.ndarray, title: str):
    k, m, n = samples.shape
    side = int(round(np.sqrt(n)))
    fig, axes = plt.subplots(k, m, figsize=(0.9 * m, 0.9 * k), squeeze=False)
    for i in range(k):
        for j in range(m):
            axes[i, j].imshow(samples[i, j].reshape(side, side), cmap="gray", vmin=0, vmax=1)
            axes[i, j].axis("off")
    fig.suptitle(title, fontsize=8)
    return fig


def mutation_heatmap(samples: np.ndarray, columns: list[str], observed: pd.DataFrame, title: str):
    """Decoded-centroid mutation probabilities (left) vs observed frequencies per cluster."""
    dec = np.clip(samples[:, 0, :], 0, 1)
    fig, axes = plt.subplots(2, 1, figsize=(12, 4.5))
    for ax, mat, name in (
        (axes[0], dec, "decoded centroid"),
        (axes[1], observed.to_numpy(), "observed frequency"),
    ):
        im = ax.imshow(mat, aspect="auto", cmap="viridis", vmin=0, vmax=1)
        ax.set_yticks(range(mat.shape[0]))
        ax.set_ylabel(f"cluster ({name})", fontsize=7)
        ax.set_xticks(range(len(columns)))
        ax.set_xticklabels(columns, rotation=90, fontsize=5)
        fig.colorbar(im, ax=ax, fraction=0.02)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def cycle_vs_recon(tables: dict[str, pd.DataFrame]):
    """Cycle accuracy vs reconstruction loss after clustering, one point per grid run
    (layout of seed 000 Fig. 5.14)."""
    fig, axes = plt.subplots(1, len(tables), figsize=(4 * len(tables), 3.4), squeeze=False)
    for ax, (name, t) in zip(axes[0], tables.items(), strict=False):
        for opt, g in t.groupby("optimizer"):
            ax.scatter(g["recon_loss"], g["cycle_accuracy"], label=opt, s=18)
        ax.set(
            xscale="log",
            xlabel="reconstruction loss (log scale)",
            ylabel="cycle accuracy",
            title=name,
        )
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def split_histograms(splits: dict[str, pd.Series], labels: pd.Series, title: str):
    """Samples per center of every split, stacked by reference label (seed 000 Figs 4.1 uniform,
    4.2 skewed Gaussian; the thesis draws the totals). Returns the figure and the counts table
    (split, center, n, one column per label)."""
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.2), squeeze=False)
    rows = []
    for ax, (name, center) in zip(axes[0], splits.items(), strict=False):
        lab = labels.loc[center.index].astype(str)
        tab = pd.crosstab(center.astype(str), lab).sort_index()
        bottom = np.zeros(len(tab))
        for j, col in enumerate(tab.columns):
            ax.bar(range(len(tab)), tab[col], bottom=bottom, color=plt.cm.tab10(j % 10),
                   label=col)  # fmt: skip
            bottom += tab[col].to_numpy()
        ax.set_xticks(range(len(tab)))
        ax.set_xticklabels(tab.index, rotation=90, fontsize=6)
        ax.set(xlabel="center", ylabel="# samples", title=name)
        ax.legend(fontsize=5, ncol=2)
        out = tab.reset_index(names="center")
        out.insert(0, "split", name)
        out.insert(2, "n", tab.sum(axis=1).to_numpy())
        rows.append(out)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig, pd.concat(rows, ignore_index=True).fillna(0)
