"""Reading the data-stage outputs for the DEC stage (ARCHITECTURE.md data contract)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedclust.errors import InputDataError
from fedclust.io import read_table

#: Reference label of samples without one (IPSS-M: no risk category); left out of accuracy/ARI/NMI.
MISSING_LABEL = "NA"
#: Every spelling of "no reference category": read_obs' NA and the data stage's ``unknown``
#: (IPSS-M patients without a risk category, src/fedclust/data/mds.py).
MISSING_LABELS = (MISSING_LABEL, "unknown")


def load_dataset(features: str, obs: str) -> tuple[np.ndarray, pd.DataFrame, list[str]]:
    """Features (float32, samples × features) aligned with ``obs``; feature names."""
    x = read_table(features)
    x.index = x.index.astype(str)
    o = read_obs(obs)
    missing = x.index.difference(o.index)
    if len(missing):
        raise InputDataError(
            f"{len(missing)} samples of the features are not in obs.tsv (e.g. {missing[0]})",
            where=obs,
        )
    return x.to_numpy(np.float32), o.loc[x.index], [str(c) for c in x.columns]


def read_obs(obs: str) -> pd.DataFrame:
    """obs.tsv with ``label`` as strings (a missing reference label stays the string "NA")."""
    o = read_table(obs)
    o.index = o.index.astype(str)
    if "label" not in o.columns:
        raise InputDataError(
            "obs.tsv has no 'label' column",
            where=obs,
            fix="re-run the data stage (it writes the reference label)",
        )
    o["label"] = o["label"].astype("string").fillna(MISSING_LABEL).astype(str)
    return o


def load_centers(split: str, index: pd.Index) -> np.ndarray:
    """Center of every sample (in ``index`` order) from a split table (sample_id, center)."""
    s = read_table(split)
    s.index = s.index.astype(str)
    if "center" not in s.columns:
        raise InputDataError("split table has no 'center' column", where=split)
    missing = index.difference(s.index)
    if len(missing):
        raise InputDataError(
            f"{len(missing)} samples have no center (e.g. {missing[0]})",
            where=split,
            fix="re-run the data stage's split rule",
        )
    return s.loc[index, "center"].astype(str).to_numpy()
