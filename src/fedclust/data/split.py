"""Assign samples to simulated centers (seed 000 §2.4; seed 001 §3.1.1).

Kinds:

* ``equal``: a random permutation cut into ``n_centers`` parts whose sizes differ by at most 1.
* ``uniform`` / ``skewed``: seed 000's ``get_f_indices``: center sizes are the histogram
  (``n_centers`` equal-width bins) of ``n`` draws from U(0, 1) (uniform) or a skew-normal with shape
  ``skewness`` (a = 4 in seed 000); samples are shuffled and cut by those sizes (quantity skew
  only). With n = 2043, seed 51550 and 10 centers this gives exactly the sizes of seed 000 §2.4.
* ``dirichlet``: label skew — for every label, the proportions over centers are drawn from
  Dir(alpha); small alpha ⇒ strong skew.
* ``column``: the center is a metadata column (TCGA region, heart hospital), handled by
  :func:`split_by_column`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..config import check_name, defaults_at
from ..errors import ConfigError, InputDataError
from ..seeds import derive_seed

KINDS = ("equal", "uniform", "skewed", "dirichlet", "column")


def _n_and_labels(n_or_labels: int | np.ndarray | list) -> tuple[int, np.ndarray | None]:
    if np.isscalar(n_or_labels):
        return int(n_or_labels), None
    labels = np.asarray(n_or_labels)
    return len(labels), labels


def histogram_sizes(n: int, n_centers: int, kind: str, seed: int, skewness: float = 4.0):
    """Center sizes by seed 000's histogram procedure (legacy RandomState, ``random_state``)."""
    from scipy import stats  # imported here: scipy.stats is slow to import (rule start-up)

    if kind == "uniform":
        r = stats.uniform.rvs(size=n, random_state=seed)
    else:
        r = stats.skewnorm.rvs(a=skewness, size=n, random_state=seed)
    return np.histogram(r, bins=n_centers)[0]


def make_split(
    n_or_labels: int | np.ndarray | list,
    kind: str,
    n_centers: int,
    seed: int,
    skewness: float = 4.0,
    alpha: float = 0.5,
    raw_seed: bool = False,
) -> np.ndarray:
    """Center index (0..n_centers-1) per sample.

    ``seed`` is the config seed; the split's own seed is derived from it (``raw_seed=True``
    uses it unchanged, e.g. seed 000's 51550 for the regression test). ``dirichlet`` needs labels.
    Errors: unknown kind, n_centers < 1, more centers than samples, an empty center.
    """
    n, labels = _n_and_labels(n_or_labels)
    if kind not in KINDS or kind == "column":
        raise ConfigError(
            f"unknown split kind '{kind}' for make_split",
            where="data.splits.<name>.kind",
            fix=f"use one of: {', '.join(k for k in KINDS if k != 'column')} "
            "(or 'column' with split_by_column)",
        )
    if n_centers < 1:
        raise ConfigError(f"n_centers = {n_centers} must be >= 1", where="data.splits")
    if n_centers > n:
        raise InputDataError(
            f"more centers ({n_centers}) than samples ({n})",
            where="data.splits",
            fix="lower n_centers or use a larger dataset",
        )
    s = seed if raw_seed else derive_seed(seed, "split", kind, n_centers)
    if kind == "dirichlet":
        if labels is None:
            raise ConfigError(
                "the dirichlet split needs sample labels, not just a sample count",
                where="data.splits",
                fix="pass the label array",
            )
        center = _dirichlet(labels, n_centers, alpha, np.random.default_rng(s))
    else:
        if kind == "equal":
            sizes = np.full(n_centers, n // n_centers)
            sizes[: n % n_centers] += 1
        else:
            sizes = histogram_sizes(n, n_centers, kind, s, skewness)
        idx = np.arange(n)
        np.random.default_rng(s).shuffle(idx)
        center = np.empty(n, dtype=int)
        center[idx] = np.repeat(np.arange(n_centers), sizes)
    check_nonempty(center, n_centers, kind)
    return center


def _dirichlet(labels: np.ndarray, n_centers: int, alpha: float, gen) -> np.ndarray:
    center = np.empty(len(labels), dtype=int)
    for lab in np.unique(labels):
        members = np.flatnonzero(labels == lab)
        gen.shuffle(members)
        p = gen.dirichlet(np.full(n_centers, alpha))
        cuts = (np.cumsum(p)[:-1] * len(members)).astype(int)
        for c, part in enumerate(np.split(members, cuts)):
            center[part] = c
    return center


def check_nonempty(center: np.ndarray, n_centers: int, kind: str) -> None:
    counts = np.bincount(center, minlength=n_centers)
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        raise InputDataError(
            f"the {kind} split leaves {len(empty)} center(s) with zero samples "
            f"(center {', '.join(map(str, empty))}; sizes {counts.tolist()})",
            where="data.splits",
            fix="use fewer centers, a larger dataset, a milder skew or a larger dirichlet alpha",
        )


def center_names(n_centers: int) -> list[str]:
    """Names of n-center split centers: ``c00``, ``c01``, ..."""
    return [f"c{i:02d}" for i in range(n_centers)]


def split_by_column(obs: pd.DataFrame, column: str, centers: list[str]) -> pd.Series:
    """Center = ``obs[column]``; every value must be one of ``centers`` (may leave some empty)."""
    if column not in obs.columns:
        raise InputDataError(
            f"missing column '{column}' for the column split",
            where="obs.tsv",
            fix=f"available columns: {', '.join(map(str, obs.columns))}",
        )
    values = obs[column].astype(str)
    unknown = sorted(set(values) - set(centers))
    if unknown:
        raise InputDataError(
            f"column '{column}' has values not among the split's centers: {', '.join(unknown)}",
            where="data.splits.<name>.centers",
            fix=f"list every value in centers (now: {', '.join(centers)})",
        )
    return values


def split_table(
    obs: pd.DataFrame, spec: dict, seed: int, label_column: str = "label"
) -> pd.DataFrame:
    """The split of a dataset as a table (``sample_id``, ``center``) from a config entry.

    Defaults come from the schema (``data.splits.*``), the one place they are defined."""
    spec = defaults_at(spec, ["data", "splits", "*"])
    kind = spec["kind"]
    if kind == "column":
        center = split_by_column(obs, spec["column"], spec_centers(spec))
        return pd.DataFrame({"sample_id": obs.index.astype(str), "center": center.to_numpy()})
    arg = obs[label_column].to_numpy() if kind == "dirichlet" else len(obs)
    if kind == "dirichlet" and label_column not in obs.columns:
        raise InputDataError(f"missing column '{label_column}' for the dirichlet split")
    idx = make_split(
        arg,
        kind,
        spec["n_centers"],
        seed,
        skewness=spec["skewness"],
        alpha=spec["alpha"],
    )
    names = np.array(center_names(spec["n_centers"]))
    return pd.DataFrame({"sample_id": obs.index.astype(str), "center": names[idx]})


REGIONS = ["Northeast", "South", "West", "Midwest", "Canada", "Europe", "Other"]


def spec_centers(spec: dict) -> list[str]:
    """Center names a split config entry produces (known before running: per-center files).

    Every name becomes a file name, so it must match ``^[A-Za-z0-9_-]+$``."""
    if spec["kind"] == "column":
        names = list(spec.get("centers") or REGIONS)
    else:
        names = center_names(spec["n_centers"])
    return [check_name(n, "data.splits.<name>.centers") for n in names]
