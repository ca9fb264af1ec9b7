"""IPSS-M MDS cohort (Bernard et al., NEJM Evidence 2022) as the public stand-in for EUROMDS.

Inputs (seed 000 §2.3): binary gene mutations + cytogenetic alterations, aligned with the 54
EUROMDS variables of seed 000 Table 3.1 where IPSS-M has them:

* genes: the 42 Table 3.1 genes found in ``df_mut.tsv`` (38; PIGA, FBXW7, PRPF40B and CBLB are
  not on the IPSS-M panel);
* cytogenetics: each Table 3.1 flag as the OR of its IPSS-M ``df_cna.tsv`` columns
  (:data:`CYTO_MAP`; 11 of 12 — ``idicXq13`` has no IPSS-M counterpart). ``LOCHR5OD5qPLUSother``
  (del(5q) with another abnormality) is del5q AND any other CNA column.

NaN (none in the published IPSS-M matrices, but handled) is imputed by the column frequency of
ones (seed 000). The reference label is a configurable ``df_clinical.tsv`` column (default
``IPSSM``, the 6 IPSS-M risk categories; missing → ``NA``). Survival: ``OS_YEARS``,
``OS_STATUS``, ``LFS_YEARS``, ``LFS_STATUS`` (1 = event), kept as published (NaN where unknown).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputDataError
from .preprocess import impute_binary_frequency
from .simulate import TABLE_3_1

CYTO_MAP: dict[str, list[str]] = {
    "ICHR17qort17p": ["iso17q", "del17p"],
    "LOCHR13OD13q": ["del13"],
    "LOCHR12OD12P12p": ["del12p", "del12"],
    "LOCHR20OD20q": ["del20q", "del20"],
    "LOCHR7OD7q": ["del7", "del7q"],
    "LOCHR9OD9q": ["del9", "del9q"],
    "del5q": ["del5q"],
    "LOCHR11OD11q": ["del11", "del11q"],
    "GOCHR8": ["plus8"],
    "LOCHRY": ["delY"],
}
SURVIVAL = ["OS_YEARS", "OS_STATUS", "LFS_YEARS", "LFS_STATUS"]


def _read(path: str) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, sep="\t", index_col=0)
    except (OSError, ValueError) as err:
        raise InputDataError(f"cannot read {path} ({err})", where=path) from None
    return df


def _require(df: pd.DataFrame, cols: list[str], path: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise InputDataError(
            f"missing column(s) {', '.join(missing)}",
            where=path,
            fix="use the IPSS-M files df_clinical.tsv / df_mut.tsv / df_cna.tsv as published "
            "(papaemmelab/IPSSMstudy)",
        )


def _any(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    """OR over columns with NaN semantics: 1 if any 1, NaN if no 1 but some NaN, else 0."""
    sub = df[cols]
    out = (sub == 1).any(axis=1).astype(float)
    out[(out == 0) & sub.isna().any(axis=1)] = np.nan
    return out


def ipssm_features(mut: pd.DataFrame, cna: pd.DataFrame, where: str) -> pd.DataFrame:
    """Binary features (0/1/NaN) in Table 3.1 order, restricted to variables IPSS-M has."""
    cols = {}
    other = cna.drop(columns=["del5q"], errors="ignore")
    for name in TABLE_3_1:
        if name in mut.columns and name not in CYTO_MAP:
            cols[name] = mut[name].astype(float)
        elif name in CYTO_MAP:
            _require(cna, CYTO_MAP[name], where)
            cols[name] = _any(cna, CYTO_MAP[name])
        elif name == "LOCHR5OD5qPLUSother":
            _require(cna, ["del5q"], where)
            has_other = (other == 1).any(axis=1)
            cols[name] = ((cna["del5q"] == 1) & has_other).astype(float)
            cols[name][cna["del5q"].isna()] = np.nan
    return pd.DataFrame(cols, index=mut.index)


def load_ipssm(
    clinical_path: str, mut_path: str, cna_path: str, label: str = "IPSSM"
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """Features (imputed, binary/probabilities), obs (label + survival) and NaNs per column."""
    clin, mut, cna = _read(clinical_path), _read(mut_path), _read(cna_path)
    _require(clin, [label, *SURVIVAL], clinical_path)
    if not (clin.index.equals(mut.index) and clin.index.equals(cna.index)):
        common = clin.index.intersection(mut.index).intersection(cna.index)
        if len(common) == 0:
            raise InputDataError(
                "the IPSS-M files share no patient ID", where=clinical_path, fix="re-download"
            )
        clin, mut, cna = clin.loc[common], mut.loc[common], cna.loc[common]
    raw = ipssm_features(mut, cna, where=cna_path)
    feats, n_nan = impute_binary_frequency(raw, where=f"{mut_path} + {cna_path}")
    feats.index = feats.index.astype(str)
    feats.index.name = "sample_id"
    obs = clin[SURVIVAL].copy()
    obs.insert(0, "label", clin[label].astype("string").fillna("NA").astype(str))
    obs.index = feats.index
    return feats, obs, n_nan
