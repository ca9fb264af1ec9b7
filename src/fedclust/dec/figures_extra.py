"""Seed 000 figures the DEC stage did not draw (issue 16): Fig. 3.1 (MNIST vs BMNIST), 5.5 /
B.1 (confusion matrices), 5.7 (4s and 9s as images in the 2-D space), 5.8 / 5.10 / 5.17
(t-SNE density at the end of clustering vs the end of TSAE training; centralized MNIST,
MDS, best federated MDS), 5.15 (reconstructions of a "4") and 5.16 (2-D space drawn as
reconstructions and as originals).

The embeddings come from :func:`centralized_states` / :func:`federated_states`, which re-run
the *best* configuration of the dec stage's result table with the stage's own seeds (the same
model, bit for bit on one device) and keep the Step-1 TSAE beside the final DEC model.
"""

from __future__ import annotations

import copy
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from matplotlib.colors import LogNorm, to_rgb
from matplotlib.offsetbox import AnnotationBbox, OffsetImage
from sklearn.manifold import TSNE
from sklearn.metrics import confusion_matrix

from fedclust.errors import InputDataError
from fedclust.metrics.assignment import hungarian_mapping
from fedclust.seeds import rng

from .model import set_parameters
from .pipeline import make_tsae, run_centralized, run_federated_unit, sort_results
from .train import embed

UNMATCHED = "unmatched"


# ---- confusion matrix (Figs 5.5, B.1) ----------------------------------------------------------
def mapped_predictions(pred: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Clusters renamed to their Hungarian partner label (seed 000 §3.1); clusters without a
    partner (more clusters than labels) become ``unmatched``."""
    mapping = hungarian_mapping(np.asarray(pred), np.asarray(ref))
    return np.array([str(mapping.get(p, UNMATCHED)) for p in pred])


def confusion_table(pred: np.ndarray, ref: np.ndarray) -> pd.DataFrame:
    """True label (rows) × Hungarian-mapped predicted cluster (columns), counts. Its trace / n
    is the Hungarian accuracy."""
    ref = np.asarray(ref).astype(str)
    mapped = mapped_predictions(pred, ref)
    labels = sorted(np.unique(ref), key=_label_key)
    cols = labels + ([UNMATCHED] if (mapped == UNMATCHED).any() else [])
    m = confusion_matrix(ref, mapped, labels=cols)[: len(labels)]
    out = pd.DataFrame(m, index=pd.Index(labels, name="true"), columns=cols)
    out.columns.name = "predicted"
    return out


def _label_key(v: str) -> tuple:
    return (0, int(v), "") if str(v).lstrip("-").isdigit() else (1, 0, str(v))


def confusion_figure(table: pd.DataFrame, title: str):
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    m = table.to_numpy()
    im = ax.imshow(m, cmap="Blues")
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(
                j,
                i,
                str(m[i, j]),
                ha="center",
                va="center",
                fontsize=6,
                color="white" if m[i, j] > m.max() / 2 else "black",
            )
    ax.set_xticks(range(m.shape[1]))
    ax.set_xticklabels(table.columns, fontsize=7)
    ax.set_yticks(range(m.shape[0]))
    ax.set_yticklabels(table.index, fontsize=7)
    acc = np.trace(m[:, : m.shape[0]]) / m.sum()
    ax.set(xlabel="predicted cluster (Hungarian-mapped)", ylabel="true label")
    ax.set_title(f"{title}\nHungarian accuracy {acc:.4f}", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.04)
    fig.tight_layout()
    return fig


# ---- Fig 3.1 -----------------------------------------------------------------------------------
def first_of_each_label(y: np.ndarray, n: int = 10) -> np.ndarray:
    """Index of the first sample of each of the first ``n`` labels (sorted)."""
    y = np.asarray(y).astype(str)
    labels = sorted(np.unique(y), key=_label_key)[:n]
    return np.array([int(np.flatnonzero(y == u)[0]) for u in labels])


def mnist_bmnist_figure(x: np.ndarray, xb: np.ndarray, y: np.ndarray, title: str):
    """Fig 3.1: one image per digit, MNIST (top row) and its BMNIST version (bottom row)."""
    idx = first_of_each_label(y)
    side = _side(x.shape[1])
    fig, axes = plt.subplots(2, len(idx), figsize=(1.0 * len(idx), 2.3), squeeze=False)
    for j, i in enumerate(idx):
        for r, arr in enumerate((x, xb)):
            axes[r, j].imshow(arr[i].reshape(side, side), cmap="gray", vmin=0, vmax=1)
            axes[r, j].axis("off")
    fig.suptitle(title, fontsize=8)
    return fig


def _side(d: int) -> int:
    side = int(round(np.sqrt(d)))
    if side * side != d:
        raise InputDataError(f"{d} features are not a square image", where="dec figures")
    return side


# ---- re-running the best configuration ---------------------------------------------------------
def figure_subset(n: int, max_points: int, seed: int, *labels: object) -> np.ndarray:
    """Sorted seeded subset of at most ``max_points`` of ``n`` samples."""
    return np.sort(
        rng(seed, "dec", "figures", *labels).choice(n, min(n, max_points), replace=False)
    )


@torch.no_grad()
def _reconstruct(tsae: Any, x: np.ndarray) -> np.ndarray:
    tsae.eval()
    xt = torch.as_tensor(x)
    return tsae.decode(tsae.encode(xt)).numpy()


def _mse_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ((a - b) ** 2).mean(axis=1)


def centralized_states(
    x: np.ndarray,
    y: np.ndarray,
    cfg: dict,
    dataset: str,
    seed: int,
    results: pd.DataFrame,
    max_points: int,
) -> dict[str, Any]:
    """Re-run the best row of ``results`` (the dec stage's results.tsv, sorted) and return
    the end-of-TSAE and end-of-clustering embeddings and reconstructions of a subset."""
    best = results.iloc[0]
    # α as the grid spells it (seeds are derived from its text: 9 and 9.0 differ)
    alpha = next(
        (a for a in cfg["grid"]["alphas"] if float(a) == float(best["alpha"])), float(best["alpha"])
    )
    key = (str(best["optimizer"]), alpha, str(best["scaler"]))
    c = copy.deepcopy(cfg)
    c["grid"] = {"optimizers": [key[0]], "alphas": [key[1]], "scalers": [key[2]]}
    keep: dict = {}
    res = run_centralized(x, y, c, dataset, seed, keep=keep)
    tsae = make_tsae(c, x.shape[1])
    set_parameters(tsae, keep[("tsae", key[0])])
    model = res.best["model"]
    return _states(
        x,
        tsae,
        model.tsae,
        res.best["labels"],
        max_points,
        seed,
        dataset,
        res.table.iloc[0].to_dict(),
        "{} α={:g} {}".format(*key),
    )


def best_federated(tables: list[pd.DataFrame], selection: str) -> pd.Series:
    """The top federated configuration over all splits, in the thesis' §3.8 order."""
    return sort_results(pd.concat(tables, ignore_index=True), selection).iloc[0]


def federated_states(
    x: np.ndarray,
    y: np.ndarray,
    centers: np.ndarray,
    cfg: dict,
    dataset: str,
    split: str,
    strategy: str,
    method: str,
    seed: int,
    max_points: int,
) -> dict[str, Any]:
    """Re-run one federated configuration (same seeds as the dec stage) and return its
    end-of-TSAE (federated Step 1) and end-of-clustering embeddings (pooled evaluation)."""
    c = copy.deepcopy(cfg)
    keep: dict = {}
    # one unit of the stage's loop (earlier aggregations' minibatch draws are replayed)
    res = run_federated_unit(x, y, centers, c, dataset, split, seed, [(strategy, method)],
                             keep=keep)  # fmt: skip
    state = keep[(strategy, method)]
    model = state["model"].cpu()
    tsae = make_tsae(c, x.shape[1])
    set_parameters(tsae, state["ae"])
    with torch.no_grad():
        from .train import predict

        pred = predict(model, torch.as_tensor(x))
    return _states(
        x,
        tsae,
        model.tsae,
        pred,
        max_points,
        seed,
        f"{dataset}-fed",
        res.table.iloc[0].to_dict(),
        f"{split} {strategy} {method}",
    )


def _states(
    x: np.ndarray,
    tsae: Any,
    final: Any,
    pred: np.ndarray,
    max_points: int,
    seed: int,
    label: str,
    row: dict,
    key: str,
) -> dict[str, Any]:
    idx = figure_subset(len(x), max_points, seed, label)
    xt = torch.as_tensor(x)
    z_ae, z_dec = embed(tsae, xt)[idx], embed(final, xt)[idx]
    rec_ae, rec_dec = _reconstruct(tsae, x[idx]), _reconstruct(final, x[idx])
    emb = {
        name: TSNE(n_components=2, random_state=seed, init="pca").fit_transform(z)
        for name, z in (("ae", z_ae), ("dec", z_dec))
    }
    return {
        "idx": idx,
        "x": x[idx],
        "pred": np.asarray(pred)[idx],
        "pred_all": np.asarray(pred),
        "emb_ae": emb["ae"].astype(np.float32),
        "emb_dec": emb["dec"].astype(np.float32),
        "recon_ae": rec_ae.astype(np.float32),
        "recon_dec": rec_dec.astype(np.float32),
        "mse_ae": float(_mse_rows(rec_ae, x[idx]).mean()),
        "mse_dec": float(_mse_rows(rec_dec, x[idx]).mean()),
        "row": row,
        "key": key,
    }


# ---- density (Figs 5.8, 5.10, 5.17) ------------------------------------------------------------
def density_counts(emb: np.ndarray, bins: int = 80) -> np.ndarray:
    """2-D histogram of the t-SNE points (the thesis' datashader ``count`` aggregate)."""
    h, _, _ = np.histogram2d(emb[:, 0], emb[:, 1], bins=bins)
    return h


def density_figure(emb_dec: np.ndarray, emb_ae: np.ndarray, title: str, bins: int | None = None):
    """(a) end of clustering, (b) end of TSAE training; brighter = denser (log count). Default
    bins: ≈ 1.2 √n per axis (≈ 0.7 points per occupied bin for a uniform cloud), at most 300."""
    bins = bins or int(np.clip(1.2 * np.sqrt(len(emb_dec)), 10, 300))
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for ax, emb, name in (
        (axes[0], emb_dec, "(a) end of clustering"),
        (axes[1], emb_ae, "(b) end of TSAE training"),
    ):
        h = density_counts(emb, bins)
        top = max(h.max(), 2)
        ax.imshow(
            np.ma.masked_equal(h.T, 0),
            origin="lower",
            cmap="inferno",
            norm=LogNorm(vmin=1, vmax=top),
            aspect="auto",
        )
        ax.set_facecolor("black")
        occ = (h > 0).mean()
        ax.set_title(f"{name}\nbins occupied {occ:.1%}, max count {int(h.max())}", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


# ---- image scatters (Figs 5.7, 5.16) and reconstructions (Fig 5.15) -----------------------------
def _tinted(img: np.ndarray, color: Any) -> np.ndarray:
    """An RGBA glyph: the colour with the pixel intensity as alpha."""
    rgba = np.zeros((*img.shape, 4), dtype=np.float32)
    rgba[..., :3] = to_rgb(color)
    rgba[..., 3] = np.clip(img, 0, 1)
    return rgba


def _image_scatter(ax: Any, emb: np.ndarray, images: np.ndarray, colors: list, zoom: float) -> None:
    side = _side(images.shape[1])
    for (px, py), img, c in zip(emb, images, colors, strict=True):
        box = OffsetImage(_tinted(img.reshape(side, side), c), zoom=zoom)
        ax.add_artist(AnnotationBbox(box, (px, py), frameon=False, pad=0))
    pad = 0.05 * (np.ptp(emb, axis=0) + 1e-9)
    ax.set_xlim(emb[:, 0].min() - pad[0], emb[:, 0].max() + pad[0])
    ax.set_ylim(emb[:, 1].min() - pad[1], emb[:, 1].max() + pad[1])
    ax.set_xticks([])
    ax.set_yticks([])


def _zoom(side: int) -> float:
    return 0.6 if side >= 20 else 1.6


def fours_nines_figure(states: dict, ref: np.ndarray, max_points: int, seed: int, title: str):
    """Fig 5.7: the 4s (a) and 9s (b) at their 2-D (t-SNE, end of clustering) positions, each
    drawn as its original image, coloured by the Hungarian-mapped cluster (blue '4', red '9',
    grey other)."""
    ref = np.asarray(ref).astype(str)
    mapped = mapped_predictions(states["pred_all"], ref)[states["idx"]]
    r = ref[states["idx"]]
    side = _side(states["x"].shape[1])
    colour = {"4": "tab:blue", "9": "tab:red"}
    fig, axes = plt.subplots(1, 2, figsize=(10, 5))
    for ax, digit in zip(axes, ("4", "9"), strict=True):
        sel = np.flatnonzero(r == digit)
        if len(sel) > max_points:
            sel = np.sort(rng(seed, "dec", "fig5.7", digit).choice(sel, max_points, replace=False))
        cols = [colour.get(m, "dimgray") for m in mapped[sel]]
        if len(sel):
            _image_scatter(ax, states["emb_dec"][sel], states["x"][sel], cols, _zoom(side))
        n4 = int((mapped[r == digit] == "4").sum())
        n9 = int((mapped[r == digit] == "9").sum())
        ax.set_title(
            f"true {digit}s (n={int((r == digit).sum())} in the subset): "
            f"{n4} in cluster '4' (blue), {n9} in '9' (red)",
            fontsize=8,
        )
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def reconstruction_figure(states: dict, ref: np.ndarray, digit: str, title: str):
    """Fig 5.15: a "4" (a) and its reconstruction by the end-of-TSAE model (b, low loss) and
    by the model after clustering (c, higher loss); per-image and subset MSE in the titles."""
    r = np.asarray(ref).astype(str)[states["idx"]]
    cand = np.flatnonzero(r == digit)
    i = int(cand[0]) if len(cand) else 0
    side = _side(states["x"].shape[1])
    panels = [
        ("(a) original", states["x"][i], None),
        ("(b) end of TSAE", states["recon_ae"][i], states["mse_ae"]),
        ("(c) after clustering", states["recon_dec"][i], states["mse_dec"]),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(7.2, 2.9))
    for ax, (name, img, mse) in zip(axes, panels, strict=True):
        ax.imshow(np.clip(img, 0, 1).reshape(side, side), cmap="gray", vmin=0, vmax=1)
        ax.axis("off")
        if mse is not None:
            own = float(((img - states["x"][i]) ** 2).mean())
            name += f"\nthis image MSE {own:.3f}\nsubset MSE {mse:.3f}"
        ax.set_title(name, fontsize=7)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    return fig


def window(emb: np.ndarray, n: int) -> np.ndarray:
    """Indices of the ``n`` points nearest to the median of the 2-D embedding (a "part of the
    2-D reduced feature space", Fig. 5.16), sorted."""
    d = np.linalg.norm(emb - np.median(emb, axis=0), axis=1)
    return np.sort(np.argsort(d, kind="mergesort")[: min(n, len(emb))])


def recon_original_figure(states: dict, ref: np.ndarray, max_points: int, title: str):
    """Fig 5.16: one part of the 2-D space (end of clustering), (a) each point drawn as its
    reconstruction, (b) as its original image, coloured by the actual label (tab10)."""
    r = np.asarray(ref).astype(str)[states["idx"]]
    sel = window(states["emb_dec"], max_points)
    labels = sorted(np.unique(r), key=_label_key)
    cmap = {u: plt.cm.tab10(j % 10) for j, u in enumerate(labels)}
    cols = [cmap[u] for u in r[sel]]
    side = _side(states["x"].shape[1])
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.4))
    for ax, key, name in (
        (axes[0], "recon_dec", "(a) drawn as reconstruction"),
        (axes[1], "x", "(b) drawn as original"),
    ):
        _image_scatter(ax, states["emb_dec"][sel], states[key][sel], cols, _zoom(side))
        ax.set_title(name, fontsize=8)
    handles = [
        plt.Line2D([], [], ls="", marker="s", color=cmap[u], label=u)
        for u in labels
        if u in set(r[sel])
    ]
    axes[1].legend(
        handles=handles, fontsize=6, loc="upper right", title="actual label", title_fontsize=6
    )
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def save_states(path: str, states: dict) -> None:
    """The arrays of a states dict as one npz (row/key as a one-line table beside it)."""
    from fedclust.io import write_npz

    write_npz(path, **{k: np.asarray(v) for k, v in states.items() if k not in ("row", "key")})


def best_states_inputs(smk: Any) -> tuple[dict, int, str, np.ndarray, pd.DataFrame, np.ndarray]:
    """The set-up of rules ``dec_best_states`` / ``dec_fed_best_states`` (``smk``: the script's
    ``snakemake`` object): torch's threads, then (cfg, seed, dataset, x, obs, labels as
    strings)."""
    from .io import load_dataset

    torch.set_num_threads(max(1, int(smk.threads)))
    x, obs, _ = load_dataset(smk.input.features, smk.input.obs)
    y = obs["label"].astype(str).to_numpy()
    return smk.params.cfg, int(smk.params.seed), smk.wildcards.dataset, x, obs, y


def write_best_states(
    out: Any, dataset: str, states: dict, stage: dict[str, Any], title: str
) -> None:
    """Outputs of rules ``dec_best_states`` / ``dec_fed_best_states``: the states npz
    (``out.states``), a one-row summary (``out.table``: the re-run's subset and MSEs, then
    ``stage``, the re-run's numbers beside the stage's) and the t-SNE density (``out.density``,
    captioned ``title`` + the subset size)."""
    from fedclust.io import save_figure, write_table

    save_states(out.states, states)
    summary = {
        "dataset": dataset,
        "setting": states["key"],
        "subset": len(states["idx"]),
        "subset_mse_tsae": states["mse_ae"],
        "subset_mse_dec": states["mse_dec"],
        **stage,
    }
    write_table(out.table, pd.DataFrame([summary]).round(6), index=False)
    fig = density_figure(
        states["emb_dec"], states["emb_ae"], f"{title}, {len(states['idx'])} points)"
    )
    save_figure(fig, out.density)


def load_states(path: str) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}
