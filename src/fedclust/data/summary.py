"""Per-dataset summary rows and the PCA figures of seed 001 Figs 3.1–3.2 (size factors vs VST)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def summary_row(
    dataset: str,
    features: pd.DataFrame,
    source: str,
    nans_imputed: int = 0,
    per_center: pd.Series | None = None,
    split: str = "",
) -> dict:
    """One row of the data summary table."""
    sizes = "" if per_center is None else ", ".join(f"{k}: {v}" for k, v in per_center.items())
    return {
        "dataset": dataset,
        "source": source,
        "rows": int(features.shape[0]),
        "features": int(features.shape[1]),
        "nans_imputed": int(nans_imputed),
        "split": split,
        "samples_per_center": sizes,
    }


def pca_figure(sf: pd.DataFrame, vst: pd.DataFrame, color: pd.Series, title: str):
    """PC1/PC2 scatter and cumulative explained variance: log2(sf + 1) / sf vs VST (Figs 3.1–3.2).

    The size-factor panel uses the normalised counts as they are (seed 001 compares "median of
    ratios" with VST); explained variance is over the first min(n, d, 50) components.
    """
    import matplotlib.pyplot as plt
    from sklearn.decomposition import PCA

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    k = min(50, *sf.shape)
    cats = pd.Categorical(color.astype(str))
    for ax, (name, x) in zip(axes[:2], (("size factors", sf), ("VST", vst)), strict=True):
        pca = PCA(n_components=k).fit(x.to_numpy())
        z = pca.transform(x.to_numpy())[:, :2]
        for i, cat in enumerate(cats.categories):
            m = np.asarray(cats == cat)
            ax.scatter(z[m, 0], z[m, 1], s=6, label=cat, color=plt.cm.tab10(i % 10))
        ev = pca.explained_variance_ratio_
        ax.set(title=f"{title}: {name}", xlabel=f"PC1 ({ev[0]:.1%})", ylabel=f"PC2 ({ev[1]:.1%})")
        axes[2].plot(np.arange(1, k + 1), np.cumsum(ev), marker=".", label=name)
    axes[0].legend(fontsize=6, markerscale=2, title=color.name, title_fontsize=7)
    axes[2].set(
        title="cumulative explained variance", xlabel="number of components", ylim=(0, 1.02)
    )
    axes[2].legend()
    fig.tight_layout()
    return fig
