"""``check``: the smallest deployed stage, to try a consortium's set-up (and to load-test a
SuperLink with many SuperNodes without importing torch at every message).

Each centre's file holds a numeric matrix ``x`` and its name; the centre answers one
``summary`` request with its column means and its sample count (an aggregate with its count,
checked at the centre like every message: at least ``nfilter_subset`` samples); the server
pools them, Σ nᵢ·meanᵢ / Σ nᵢ — the pooled column means, exactly (``numpy.mean`` of the pooled
rows up to rounding). ``fedclust deploy WORKDIR SITE... --stage check --params p.json`` with
``{}`` as parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedclust.deployment import DeployedStage, load_npz, register, same_schema, save_npz
from fedclust.federation import Protocol, call_all

NAME = "check"
REQUEST = Protocol("check_summary_request", {})
SUMMARY = Protocol("check_summary", {"mean": "aggregate", "n": "count"}, min_samples=3)


class CheckCentre:
    """One centre's matrix; ``summary`` is its only answer."""

    protocols = {"summary": SUMMARY}

    def __init__(self, cid: str, x: np.ndarray) -> None:
        self.cid, self.x = cid, np.asarray(x, dtype=np.float64)
        self.n_samples = len(self.x)

    def summary(self, parameters: Any, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"mean": self.x.mean(axis=0), "n": int(len(self.x))}


def save(centre: CheckCentre, path: Path) -> None:
    save_npz(path, x=centre.x, cid=centre.cid)


def load(path: Path, params: Mapping[str, Any]) -> CheckCentre:
    d = load_npz(path)
    return CheckCentre(str(d["cid"]), d["x"])


def describe(centre: CheckCentre) -> dict[str, Any]:
    return {"n_features": int(centre.x.shape[1])}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    same_schema(schema, "n_features", NAME)
    msgs = [m for m in call_all(proxies, "summary", {}, 1, "summary", SUMMARY, REQUEST) if m]
    if not msgs:
        raise RuntimeError("check: every centre abstained (see the ledger's reasons)")
    n = np.array([float(m["n"]) for m in msgs])
    mean = sum(w * np.asarray(m["mean"]) for w, m in zip(n / n.sum(), msgs, strict=True))
    return {"mean": np.asarray(mean), "n": int(n.sum()), "centres_answered": len(msgs)}


STAGE = register(DeployedStage(NAME, load, save, serve, describe, drops=True))
