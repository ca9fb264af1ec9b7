"""The rows every privacy–utility method writes (curve: metric per arm, ε and seed; budget: the ε
each centre spent) and its privacy settings at one ε (issue 24); shared by
:mod:`.experiment` and :mod:`.dec`."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from fedclust.federation import PrivacySettings
from fedclust.federation.dp import Accountant, calibrate_gaussian

CURVE_COLUMNS = ["method", "arm", "epsilon", "seed", "metric", "value"]
BUDGET_COLUMNS = [
    "method",
    "epsilon",
    "seed",
    "centre",
    "mechanism",
    "releases",
    "noise_multiplier",
    "epsilon_spent",
    "delta",
]


def epsilons(values: Sequence[float | None]) -> list[float]:
    """The config's ε list with ``null`` as ∞."""
    return [math.inf if v is None else float(v) for v in values]


def settings_for(eps: float, cfg: dict[str, Any], seed: int, clip: float) -> PrivacySettings:
    """Secure aggregation on; central DP at ε (none at ∞)."""
    return PrivacySettings(
        secure_aggregation=bool(cfg.get("secure_aggregation", True)),
        epsilon=None if math.isinf(eps) else eps,
        delta=float(cfg["delta"]),
        clip=float(clip),
        seed=int(seed),
    )


@functools.lru_cache(maxsize=256)
def noise_multiplier(eps: float, delta: float, releases: int) -> float:
    """z calibrated to spend ``eps`` over ``releases`` Gaussian releases (0 at ε = ∞); cached
    (the same ε for every seed: one bisection instead of one per seed)."""
    return 0.0 if math.isinf(eps) else calibrate_gaussian(eps, delta, releases)


def spent(z: float, releases: int, delta: float) -> float:
    """The accountant's ε of ``releases`` Gaussian releases at multiplier z (∞ without noise)."""
    return math.inf if z == 0 else Accountant().gaussian(z, releases).epsilon(delta)


def curve_row(method, arm, eps, s, metric, value) -> dict[str, Any]:
    """One row of the curve table."""
    return {
        "method": method,
        "arm": arm,
        "epsilon": eps,
        "seed": s,
        "metric": metric,
        "value": float(value),
    }


def budget_rows(method, eps, s, centres, mechanism, releases, z, spent, delta) -> list[dict]:
    """One budget row per centre."""
    return [
        {
            "method": method,
            "epsilon": eps,
            "seed": s,
            "centre": c,
            "mechanism": mechanism,
            "releases": int(releases),
            "noise_multiplier": float(z),
            "epsilon_spent": spent,
            "delta": delta,
        }
        for c in centres
    ]


def frames(curve: list[dict], budget: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The curve and budget tables of a run."""
    return pd.DataFrame(curve, columns=CURVE_COLUMNS), pd.DataFrame(budget, columns=BUDGET_COLUMNS)
