"""Job-time hand-over and merging of the DEC units (:mod:`fedclust.dec.units`): the TSAE and
best-model files a unit writes, and the merge that rebuilds the all-in-one
:class:`~fedclust.dec.pipeline.CentralizedResult` from the units' outputs, row for row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from fedclust.io import atomic_path

from .model import DECModel
from .pipeline import CentralizedResult, embed, make_tsae, predict, sort_results


def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if f is not None and len(f.columns)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def save_pt(path: str, obj: Any) -> None:
    """``torch.save`` through :func:`fedclust.io.atomic_path` (TSAE / model hand-over files)."""
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def load_pt(path: str) -> Any:
    """A hand-over file written by :func:`save_pt` (our own files: full unpickling)."""
    return torch.load(path, map_location="cpu", weights_only=False)


# ------------------------------------------------------------------ centralized hand-over
def tsae_record(tsae: torch.nn.Module, curve: list[float]) -> dict[str, Any]:
    return {"state": {k: v.detach().cpu() for k, v in tsae.state_dict().items()},
            "curve": list(curve)}  # fmt: skip


def load_tsae(record: dict[str, Any], cfg: dict, n_features: int) -> tuple[torch.nn.Module, list]:
    tsae = make_tsae(cfg, n_features)
    tsae.load_state_dict(record["state"])
    return tsae, list(record["curve"])


def best_record(res: Any) -> dict[str, Any]:
    """The unit's best model (key + state) for the merge's figures and labels."""
    model = res.best["model"]
    return {"key": tuple(res.best["key"]), "alpha": float(model.alpha),
            "state": {k: v.detach().cpu() for k, v in model.state_dict().items()}}  # fmt: skip


def merge_central(
    units: list[dict[str, pd.DataFrame]],
    tsae_records: dict[str, dict[str, Any]],
    bests: list[dict[str, Any]],
    x: np.ndarray,
    cfg: dict,
    dataset: str,
) -> Any:
    """The all-in-one :class:`~fedclust.dec.pipeline.CentralizedResult` from unit outputs in loop
    order (``units``: ``table``, ``ae_curves``, ``dec_curves``; TSAE curves of per-configuration
    units from ``tsae_records``; ``bests``: each unit's best model)."""
    table = sort_results(concat([u["table"] for u in units]), cfg["datasets"][dataset]["selection"])
    ae = concat([u["ae_curves"] for u in units] + [
        pd.DataFrame({"optimizer": o, "epoch": np.arange(1, len(r["curve"]) + 1),
                      "loss": r["curve"]}) for o, r in tsae_records.items()
    ])  # fmt: skip
    order = {o: i for i, o in enumerate(cfg["grid"]["optimizers"])}
    ae = ae.sort_values("optimizer", key=lambda s: s.map(order), kind="mergesort")
    key = tuple(table.iloc[0][["optimizer", "alpha", "scaler"]])
    rec = next(b for b in bests if tuple(b["key"]) == key)
    model = DECModel(make_tsae(cfg, x.shape[1]), int(cfg["datasets"][dataset]["k"]), rec["alpha"])
    model.load_state_dict(rec["state"])
    xt = torch.as_tensor(x)
    best = {"key": key, "model": model, "labels": predict(model, xt),
            "features": embed(model.tsae, xt)}  # fmt: skip
    return CentralizedResult(table, ae.reset_index(drop=True),
                             concat([u["dec_curves"] for u in units]), best)  # fmt: skip
