"""The tuning that produced the thesis' settings (seed 000 §4.1, Tables A.1–A.8, B.1–B.3, B.6),
as grids of independent points (issue 16) whose selection feeds the training rules.

Order (the thesis' procedure, §4.1 and §3.8):

1. ``lr`` — TSAE learning rate per optimizer × LR scheduler (Tables A.1–A.3), LRs log-uniform
   in [lr_min, lr_max]; selected per optimizer: the lowest validation MSE among the runs with
   ``select_scheduler`` (the thesis kept the no-scheduler rows, §4.2) → ``autoencoder_lr``.
2. ``batch`` — batch size × (hidden, final) activation at the selected LR (Table A.4): the
   activation pair (one per dataset, :func:`select_activations`) → ``model`` (``hidden_act``,
   ``final_act``), then per optimizer the lowest validation MSE at that pair →
   ``autoencoder_batch_size`` (the thesis found ReLU/ReLU everywhere).
3. ``regularizers`` — input corruption, hidden dropout, Gaussian σ, modified-loss β at the
   selected LR and batch (Tables A.5–A.8); reported only: the thesis found the losses
   "comparable" and its final models use none of them.
4. ``cluster`` — Step 2 first stage: batch × LR per optimizer, α = 1, no scaler, on the TSAE
   trained with the selected Step-1 settings (Tables B.1–B.3, B.6); per optimizer the best run
   by the data set's order (§3.8: accuracy ↓, recon ↑, cycle ↓ for digits; Silh_data ↓, CH_data
   ↓, Silh_feat ↓, CH_feat ↓, recon ↑ for EUROMDS) → ``clustering_lr``, ``clustering_batch_size``.

The second stage of Step 2 (α × scaler at the selected settings, Tables B.4/B.5) is the
centralized grid of rules/dec.smk, which reads the final settings file.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedclust.errors import ConfigError
from fedclust.seeds import rng

from .pipeline import (
    central_dec_run,
    check_features,
    device,
    embed,
    reconstruction_mse,
    sort_results,
    train_central_tsae,
)
from .tuning_spec import (  # noqa: F401 (re-exported)
    GRIDS,
    PREVIOUS,
    REGULARIZERS,
    SELECTS,
    SOURCES,
    THESIS,
    THESIS_ARCH,
    architectures,
)

log = logging.getLogger(__name__)


def _log_uniform(n: int, low: float, high: float, g: np.random.Generator) -> list[float]:
    return [float(f"{v:.6g}") for v in np.exp(g.uniform(np.log(low), np.log(high), n))]


def grid_points(cfg: dict, dataset: str, grid: str, seed: int) -> list[dict[str, Any]]:
    """The points of one grid in a fixed order; every random draw is seeded by (dataset, grid,
    optimizer[, kind])."""
    t = cfg["tuning"]
    s1, s2 = t["step1"], t["step2"]
    pts: list[dict[str, Any]] = []
    for opt in t["optimizers"]:
        if grid == "lr" and architectures(cfg, dataset):
            for arch in architectures(cfg, dataset):  # Table A.3's architecture axis
                g = rng(seed, "dec", "tuning", dataset, grid, opt, arch)
                lrs = _log_uniform(int(s1["n_lr"]), float(s1["lr_min"]), float(s1["lr_max"]), g)
                pts += [{"optimizer": opt, "architecture": arch, "scheduler": sc, "lr": lr}
                        for sc in s1["schedulers"] for lr in lrs]  # fmt: skip
        elif grid == "lr":
            g = rng(seed, "dec", "tuning", dataset, grid, opt)
            lrs = _log_uniform(int(s1["n_lr"]), float(s1["lr_min"]), float(s1["lr_max"]), g)
            pts += [{"optimizer": opt, "scheduler": sc, "lr": lr}
                    for sc in s1["schedulers"] for lr in lrs]  # fmt: skip
        elif grid == "batch":
            pts += [{"optimizer": opt, "batch_size": int(b), "hidden_act": h, "final_act": f}
                    for b in s1["batch_sizes"] for h, f in s1["activations"]]  # fmt: skip
        elif grid == "regularizers":
            for kind, (lo, hi) in REGULARIZERS.items():
                g = rng(seed, "dec", "tuning", dataset, grid, opt, kind)
                vals = [float(f"{v:.5g}") for v in g.uniform(lo, hi, int(s1["n_regularizer"]))]
                pts += [{"optimizer": opt, "kind": kind, "value": v} for v in vals]
        elif grid == "cluster":
            g = rng(seed, "dec", "tuning", dataset, grid, opt)
            lrs = _log_uniform(int(s2["n_lr"]), float(s2["lr_min"]), float(s2["lr_max"]), g)
            pts += [{"optimizer": opt, "batch_size": int(b), "lr": lr}
                    for b in s2["batch_sizes"] for lr in lrs]  # fmt: skip
        else:
            raise ConfigError(f"unknown tuning grid {grid!r}", where="dec.tuning",
                              fix=f"one of {GRIDS}")  # fmt: skip
    return pts


def selected_architecture(cfg: dict, dataset: str) -> str:
    """The architecture whose LR rows are selected: the one the training rules build
    (``dec.model.arch``); the others are reported (Figs A.7–A.10). A list-valued model arch
    (a reduced shape: thesis-smoke) selects from the first listed architecture's rows."""
    arch = cfg["model"]["arch"]
    archs = architectures(cfg, dataset)
    if not isinstance(arch, str) and archs:
        return archs[0]
    if arch not in archs:
        raise ConfigError(
            f"dec.model.arch {arch!r} is not among the tuned architectures {archs} of {dataset}",
            where=f"dec.tuning.step1.architectures.{dataset}",
            fix="list the model's architecture name (DEC, CURVES or GOOGLE) there",
        )
    return arch


def point_ids(cfg: dict, dataset: str, grid: str, seed: int) -> dict[str, list[int]]:
    """unit id → point indices: ``all`` (``dec.fanout.tuning: grid``) or ``p<i>`` per point."""
    n = len(grid_points(cfg, dataset, grid, seed))
    if cfg["fanout"]["tuning"] == "grid":
        return {"all": list(range(n))}
    return {f"p{i:04d}": [i] for i in range(n)}


def _point_cfg(cfg: dict, dataset: str, p: dict[str, Any], grid: str) -> dict:
    """``cfg`` with one point's values: the keys train_central_tsae / central_dec_run read."""
    c = copy.deepcopy(cfg)
    ds = c["datasets"][dataset]
    opt = p["optimizer"]
    ds["autoencoder_epochs"] = int(cfg["tuning"]["step1"]["epochs"])
    if grid == "lr":
        ds["autoencoder_lr"] = {**(ds.get("autoencoder_lr") or {}), opt: p["lr"]}
        c["autoencoder"]["lr_scheduler"] = p["scheduler"]
        if "architecture" in p:
            c["model"]["arch"] = p["architecture"]
    elif grid == "batch":
        ds["autoencoder_batch_size"] = {**_per_opt(ds.get("autoencoder_batch_size")),
                                        opt: p["batch_size"]}  # fmt: skip
        c["model"].update(hidden_act=p["hidden_act"], final_act=p["final_act"])
    elif grid == "regularizers":
        if p["kind"] == "corruption":
            c["model"].update(input_noise=p["value"], noise_kind="dropout")
        elif p["kind"] == "dropout":
            c["model"]["hidden_dropout"] = p["value"]
        elif p["kind"] == "sigma":
            c["autoencoder"]["gaussian_sigma"] = p["value"]
            c["autoencoder"]["clean_epochs"] = int(cfg["tuning"]["step1"]["epochs"])
        else:
            c["autoencoder"].update(loss="dice_bce", dice_bce_beta=p["value"])
    elif grid == "cluster":
        ds["clustering_lr"] = {**(ds.get("clustering_lr") or {}), opt: p["lr"]}
        ds["clustering_batch_size"] = {**_per_opt(ds.get("clustering_batch_size")),
                                       opt: p["batch_size"]}  # fmt: skip
    return c


def _per_opt(value: Any) -> dict:
    if isinstance(value, dict):
        return dict(value)
    if value is None:
        return {}
    return {o: int(value) for o in ("sgd", "adam", "yogi")}


def validation_split(n: int, fraction: float, seed: int, dataset: str) -> np.ndarray:
    """Boolean mask of the held-out rows the Step-1 grids are scored on (thesis: Ray Tune's
    validation loss)."""
    g = rng(seed, "dec", "tuning", dataset, "validation")
    mask = np.zeros(n, dtype=bool)
    mask[g.permutation(n)[: max(1, int(round(fraction * n)))]] = True
    return mask


def run_tsae_point(
    x: np.ndarray, cfg: dict, dataset: str, grid: str, p: dict[str, Any], seed: int
) -> dict[str, Any]:
    """One Step-1 point: the TSAE on the training rows, MSE on the held-out rows (with the
    point's own regulariser switched off at evaluation: reconstruction of clean input)."""
    x = check_features(x, f"results/data/{dataset}/features.parquet")
    val = validation_split(len(x), float(cfg["tuning"]["step1"]["val_fraction"]), seed, dataset)
    c = _point_cfg(cfg, dataset, p, grid)
    xt = torch.as_tensor(x[~val], device=device())
    try:
        tsae, curve = train_central_tsae(xt, c, dataset, p["optimizer"], seed)
    except RuntimeError as err:  # a diverged point (NaN weights) stops torch's BCE range check
        log.warning("%s %s point %s diverged: %s", dataset, grid, p, err)
        return {**p, "loss": float("nan"), "train_loss": float("nan"), "epochs": 0,
                "diverged": True}  # fmt: skip
    tsae.eval()
    loss = float(reconstruction_mse(tsae, torch.as_tensor(x[val], device=xt.device)))
    return {**p, "loss": loss, "train_loss": float(curve[-1]) if curve else float("nan"),
            "epochs": len(curve), "diverged": not np.isfinite(loss)}  # fmt: skip


def run_cluster_point(
    x: np.ndarray, y: np.ndarray | None, tsae: torch.nn.Module, cfg: dict, dataset: str,
    p: dict[str, Any], seed: int,
) -> dict[str, Any]:  # fmt: skip
    """One Step-2 first-stage point: DEC with α = 1, no scaler, at the point's (batch, LR)."""
    x = check_features(x, f"results/data/{dataset}/features.parquet")
    c = _point_cfg(cfg, dataset, p, "cluster")
    xt = torch.as_tensor(x, device=device())
    tsae = tsae.to(xt.device)
    alpha = 1
    row, _, _, _ = central_dec_run(x, xt, y, tsae, embed(tsae, xt), c, dataset,
                                   (p["optimizer"], alpha, "none"), seed)  # fmt: skip
    return {"batch_size": p["batch_size"], "lr": p["lr"], **row}


def select(
    grid: str, table: pd.DataFrame, cfg: dict, dataset: str, previous: dict | None
) -> tuple[dict, pd.DataFrame]:
    """The grid's selection (module docstring, §3.8 order for ``cluster``): the settings after
    this grid (``previous`` plus the keys the grid selects) and the selected rows."""
    settings = copy.deepcopy(previous or {})
    t = table.copy()
    if grid == "lr":
        sched = cfg["tuning"]["step1"]["select_scheduler"]
        t = t[t["scheduler"] == sched]
        if "architecture" in t.columns and architectures(cfg, dataset):
            t = t[t["architecture"] == selected_architecture(cfg, dataset)]
        best = t.sort_values("loss", kind="mergesort").groupby("optimizer", sort=False).head(1)
        chosen = dict(zip(best.optimizer, best.lr, strict=True))
        settings["autoencoder_lr"] = {**settings.get("autoencoder_lr", {}), **chosen}
    elif grid == "batch":
        acts = select_activations(t)
        if acts is not None:  # one TSAE shape per dataset: the batch is chosen at these
            t = t[(t["hidden_act"] == acts["hidden_act"]) & (t["final_act"] == acts["final_act"])]
            settings["model"] = {**settings.get("model", {}), **acts}
        best = t.sort_values("loss", kind="mergesort").groupby("optimizer", sort=False).head(1)
        settings["autoencoder_batch_size"] = {
            **settings.get("autoencoder_batch_size", {}),
            **{o: int(b) for o, b in zip(best.optimizer, best.batch_size, strict=True)},
        }
    elif grid == "regularizers":
        best = (t.sort_values("loss", kind="mergesort")
                .groupby(["kind", "optimizer"], sort=False).head(1))  # fmt: skip
    elif grid == "cluster":
        ranked = sort_results(t, cfg["datasets"][dataset]["selection"])
        best = ranked.groupby("optimizer", sort=False).head(1)
        settings["clustering_lr"] = {**settings.get("clustering_lr", {}),
                                     **dict(zip(best.optimizer, best.lr, strict=True))}  # fmt: skip
        settings["clustering_batch_size"] = {
            **_per_opt(settings.get("clustering_batch_size")),
            **{o: int(b) for o, b in zip(best.optimizer, best.batch_size, strict=True)},
        }
    else:
        raise ConfigError(f"unknown tuning grid {grid!r}", where="dec.tuning")
    order = {o: i for i, o in enumerate(cfg["tuning"]["optimizers"])}
    best = best.sort_values("optimizer", key=lambda s: s.map(order), kind="mergesort")
    settings = {k: _plain(v) for k, v in settings.items()}
    return settings, best.reset_index(drop=True)


def reuse_settings(previous: dict | None, source: dict, grid: str) -> dict:
    """``dec.tuning.reuse``: the dataset's own settings before ``grid`` with the keys ``grid``
    selects taken from the source dataset's settings after it (the thesis ran BMNIST's Step 2
    with MNIST's values, seed 000 §5.1 note to Table B.5)."""
    settings = copy.deepcopy(previous or {})
    for key in SELECTS[grid]:
        if key in source:
            settings[key] = copy.deepcopy(source[key])
    return {k: _plain(v) for k, v in settings.items()}


def select_activations(table: pd.DataFrame) -> dict[str, str] | None:
    """The (hidden, final) activation pair of the batch grid (Table A.4) fed forward as
    ``model.hidden_act`` / ``model.final_act``: the model's activations are one setting per
    dataset (every optimizer's TSAE, the DEC model and the federated runs share it), so the
    pair is the one most optimizers' best rows chose, ties broken by the lower best loss
    (the thesis: ReLU/ReLU for every optimizer). None when the table has no activation columns
    or no finite loss."""
    if not {"hidden_act", "final_act"} <= set(table.columns):
        return None
    t = table[np.isfinite(table["loss"].astype(float))]
    if t.empty:
        return None
    best = t.sort_values("loss", kind="mergesort").groupby("optimizer", sort=False).head(1)
    votes = (best.groupby(["hidden_act", "final_act"], sort=False)["loss"]
             .agg(["size", "min"]).reset_index())  # fmt: skip
    votes = votes.sort_values(["size", "min"], ascending=[False, True], kind="mergesort")
    top = votes.iloc[0]
    return {"hidden_act": str(top["hidden_act"]), "final_act": str(top["final_act"])}


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, np.generic):
        return v.item()
    return v


def with_thesis(best: pd.DataFrame, dataset: str, grid: str) -> pd.DataFrame:
    """The selected rows with the thesis' value of each column beside ours (``thesis_<col>``),
    matched on optimizer (+ scheduler / kind); empty where the thesis prints none."""
    rows = THESIS.get((dataset, grid), [])
    keys = [k for k in ("optimizer", "scheduler", "kind") if k in best.columns]
    out = best.copy()
    if not rows:
        out["source"] = "not in the thesis"
        return out
    th = pd.DataFrame(rows)
    th = th[[c for c in th.columns if c in keys or c in out.columns]]
    th = th.rename(columns={c: f"thesis_{c}" for c in th.columns if c not in keys})
    out = out.merge(th, on=[k for k in keys if k in th.columns], how="left")
    out["source"] = SOURCES.get((dataset, grid), "")
    return out
