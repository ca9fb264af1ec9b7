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
``IPSSM``, the 6 IPSS-M risk categories; missing → ``unknown``). Survival: ``OS_YEARS``,
``OS_STATUS``, ``LFS_YEARS``, ``LFS_STATUS`` (1 = event), kept as published (NaN where unknown).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputDataError
from .download import verify_downloads
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
#: AML transformation (event 1 = AML; censored at death), kept when the clinical table has it
#: (seed 000 Fig. 5.11 "evolution to AML"; Fig. 5.13 "dead or AML" is IPSS-M's LFS).
AML_SURVIVAL = ["AMLt_YEARS", "AMLt_STATUS"]
NOT_IN_IPSSM = ("PIGA", "FBXW7", "PRPF40B", "CBLB", "idicXq13")  # Table 3.1, absent from IPSS-M
#: the Table 3.1 genes read from ``df_mut.tsv`` (38): every one is required
IPSSM_GENES = [
    g
    for g in TABLE_3_1
    if g not in CYTO_MAP and g not in NOT_IN_IPSSM and g != "LOCHR5OD5qPLUSother"
]
MAX_YEARS = 100.0  # a survival time above this is a unit or data-entry error


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


def _same_ids(ref: pd.DataFrame, ref_path: str, df: pd.DataFrame, path: str) -> None:
    """Both files must hold the same patient IDs (order may differ); no silent intersection."""
    for a, a_path, b, b_path in ((ref, ref_path, df, path), (df, path, ref, ref_path)):
        dup = a.index[a.index.duplicated()]
        if len(dup):
            raise InputDataError(
                f"duplicate patient ID(s) {', '.join(map(str, dup[:5]))}",
                where=a_path,
                fix="use the IPSS-M files as published (one row per patient)",
            )
        missing = a.index.difference(b.index, sort=False)
        if len(missing):
            raise InputDataError(
                f"{len(missing)} patient ID(s) of {a_path} are missing from this file, first: "
                f"{', '.join(map(str, missing[:5]))}",
                where=b_path,
                fix="the three IPSS-M files must list the same patients: re-download them "
                "(or restore the mirror copies)",
            )


def check_survival(obs: pd.DataFrame, where: str) -> None:
    """``*_YEARS`` in [0, MAX_YEARS] or NaN, ``*_STATUS`` in {0, 1} or NaN (1 = event)."""
    for col in obs.columns:
        if col.endswith("_YEARS"):
            v = pd.to_numeric(obs[col], errors="coerce")
            bad = (v.isna() & obs[col].notna()) | (v < 0) | (v > MAX_YEARS) | np.isinf(v)
            what = f"survival times must be numbers in [0, {MAX_YEARS:g}] years"
        elif col.endswith("_STATUS"):
            v = pd.to_numeric(obs[col], errors="coerce")
            bad = (v.isna() & obs[col].notna()) | (v.notna() & ~v.isin([0, 1]))
            what = "status codes must be 0 (censored) or 1 (event)"
        else:
            continue
        if bad.any():
            rows = obs.index[bad.to_numpy()]
            raise InputDataError(
                f"{int(bad.sum())} bad value(s) in column {col}: {what}; first: patient "
                f"{rows[0]} = {obs.loc[rows[0], col]}",
                where=where,
                fix="correct or blank (NA) these values; unknown values may be left empty",
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
    _require(mut, IPSSM_GENES, where)
    other = cna.drop(columns=["del5q"], errors="ignore")
    for name in TABLE_3_1:
        if name in IPSSM_GENES:
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
    clinical_path: str, mut_path: str, cna_path: str, label: str = "IPSSM", impute: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """Features (imputed, binary/probabilities), obs (label + survival) and NaNs per column.
    ``impute=False``: the features with their NaNs (federated imputation, issue 23)."""
    verify_downloads([clinical_path, mut_path, cna_path])  # unchanged since the download
    clin, mut, cna = _read(clinical_path), _read(mut_path), _read(cna_path)
    _require(clin, [label, *SURVIVAL], clinical_path)
    _same_ids(clin, clinical_path, mut, mut_path)
    _same_ids(clin, clinical_path, cna, cna_path)
    mut, cna = mut.loc[clin.index], cna.loc[clin.index]
    surv = SURVIVAL + [c for c in AML_SURVIVAL if c in clin.columns]
    check_survival(clin[surv], clinical_path)
    _require(mut, IPSSM_GENES, mut_path)
    raw = ipssm_features(mut, cna, where=cna_path)
    feats, n_nan = impute_binary_frequency(raw, where=f"{mut_path} + {cna_path}")
    if not impute:
        feats = raw.astype(float)
    feats.index = feats.index.astype(str)
    feats.index.name = "sample_id"
    obs = clin[surv].copy()
    for col in [c for c in surv if c.endswith("_STATUS")]:
        obs[col] = obs[col].astype("Int64")  # 1 = event, 0 = censored, <NA> = unknown
    obs.insert(0, "label", clin[label].astype("string").fillna("unknown").astype(str))
    obs.index = feats.index
    return feats, obs, n_nan
