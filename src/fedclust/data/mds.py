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
#: the df_cna.tsv columns the features are built from (:data:`CYTO_MAP` and del(5q))
CNA_COLUMNS = sorted({c for cols in CYTO_MAP.values() for c in cols} | {"del5q"})
#: coded clinical covariates of df_clinical.tsv: published value -> number (anything else but NA
#: is an error, never a silent NaN)
CLINICAL_CODES: dict[str, dict[str, float]] = {
    "SEX": {"M": 1.0, "F": 0.0},
    "CYTO_IPSSR": {"Very-Good": 0.0, "Good": 1.0, "Int": 2.0, "Poor": 3.0, "Very-Poor": 4.0},
    "complex": {"complex": 1.0, "non-complex": 0.0},
}
#: plausible ranges of numeric clinical covariates (percentages, g/dL, 10^9/L, years of age);
#: other numeric columns must be finite numbers
CLINICAL_RANGES: dict[str, tuple[float, float]] = {
    "AGE": (0.0, 120.0),
    "BM_BLAST": (0.0, 100.0),
    "PB_BLAST": (0.0, 100.0),
    "RINGED_SIDEROBLASTS": (0.0, 100.0),
    "HB": (0.0, 30.0),
    "PLT": (0.0, 5000.0),
    "WBC": (0.0, 1000.0),
    "ANC": (0.0, 1000.0),
    "MONOCYTES": (0.0, 1000.0),
}
#: df_clinical.tsv columns that are outcomes, never covariates (issue 30 item 2)
OUTCOME_SUFFIXES = ("_YEARS", "_STATUS")


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


def _first_bad(df: pd.DataFrame, bad: pd.DataFrame, what: str, where: str, fix: str) -> None:
    """Raise naming the first column with a ``bad`` cell, its count, patient and value."""
    cols = bad.any(axis=0)
    if not cols.any():
        return
    col = bad.columns[cols.to_numpy().argmax()]
    row = df.index[bad[col].to_numpy().argmax()]
    value = df[col].iloc[bad[col].to_numpy().argmax()]
    shown = repr(value) if isinstance(value, str) else f"{float(value):g}"
    raise InputDataError(
        f"column {col} holds {int(bad[col].sum())} value(s) {what}; first: patient {row} = {shown}",
        where=where,
        fix=fix,
    )


def check_binary(df: pd.DataFrame, where: str, required: list[str] | None = None) -> None:
    """Every column numeric 0/1/NaN; no ``required`` column entirely NaN (no frequency to
    impute, no carrier to count): :class:`InputDataError` naming column, patient and value."""
    num = df.apply(pd.to_numeric, errors="coerce")
    fix = "binary columns are coded 0 = absent, 1 = present, NA = not measured"
    _first_bad(df, num.isna() & df.notna(), "that are not numbers", where, fix)
    _first_bad(df, num.notna() & ~num.isin([0, 1]), "other than 0, 1 or NA", where, fix)
    empty = [c for c in (required or []) if num[c].isna().all()]
    if empty:
        raise InputDataError(
            f"column(s) {', '.join(empty)} have no value (all NA)",
            where=where,
            fix="use the IPSS-M files as published (papaemmelab/IPSSMstudy)",
        )


def check_clinical(clin: pd.DataFrame, columns: list[str], where: str) -> None:
    """Clinical covariates: coded columns hold their published codes (:data:`CLINICAL_CODES`)
    or NA; the others numbers or NA, finite, within :data:`CLINICAL_RANGES`; no outcome column
    (``*_YEARS``, ``*_STATUS``) may be a covariate."""
    from ..errors import ConfigError

    outcome = [c for c in columns if c.endswith(OUTCOME_SUFFIXES)]
    if outcome:
        raise ConfigError(
            f"survival.clinical names the outcome column(s) {', '.join(outcome)}: an outcome "
            "used as a covariate makes every C-index meaningless",
            where="survival.clinical",
            fix="list only baseline covariates (AGE, SEX, BM_BLAST, HB, PLT, ...)",
        )
    for col in columns:
        v = clin[[col]]
        if col in CLINICAL_CODES:
            codes = CLINICAL_CODES[col]
            bad = v.notna() & ~v.isin(list(codes))
            _first_bad(v, bad, f"other than {', '.join(codes)} or NA", where,
                       "use the published codes, or NA where unknown")  # fmt: skip
            continue
        num = v.apply(pd.to_numeric, errors="coerce")
        _first_bad(v, num.isna() & v.notna(), "that are not numbers", where,
                   "correct them, or leave the cell empty (NA) where unknown")  # fmt: skip
        lo, hi = CLINICAL_RANGES.get(col, (-np.inf, np.inf))
        bad = num.notna() & ~((num >= lo) & (num <= hi) & np.isfinite(num))
        _first_bad(v, bad, f"outside [{lo:g}, {hi:g}]", where,
                   "correct the unit or the value, or leave it empty (NA)")  # fmt: skip


def clinical_covariate(clin: pd.DataFrame, name: str) -> pd.Series:
    """One checked clinical column as numbers (codes of :data:`CLINICAL_CODES` mapped)."""
    if name in CLINICAL_CODES:
        return clin[name].map(CLINICAL_CODES[name]).astype(float)
    return pd.to_numeric(clin[name]).astype(float)


def read_ipssm(
    clinical_path: str,
    mut_path: str,
    cna_path: str,
    label: str | None = None,
    clinical: list[str] | tuple[str, ...] = (),
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The one IPSS-M reader of every stage (data stage, survival stage; issue 30 item 1):
    (clinical, mut, cna) aligned to the clinical file's patients, after one set of checks —
    the cached downloads still have their pinned sha256; the required columns exist (survival,
    ``label``, ``clinical``, the Table 3.1 genes and CNA columns); the three files list the same
    patients once each (no silent intersection); survival times in [0, 100] years and status
    0/1; mutation and CNA columns numeric 0/1/NA, none of the used ones all NA; the
    ``clinical`` covariates coded or numeric within plausible ranges (:func:`check_clinical`)."""
    clinical_path, mut_path, cna_path = map(str, (clinical_path, mut_path, cna_path))
    verify_downloads([clinical_path, mut_path, cna_path])  # unchanged since the download
    clin, mut, cna = _read(clinical_path), _read(mut_path), _read(cna_path)
    _require(clin, [*([label] if label else []), *SURVIVAL, *clinical], clinical_path)
    _require(mut, IPSSM_GENES, mut_path)
    _require(cna, CNA_COLUMNS, cna_path)
    _same_ids(clin, clinical_path, mut, mut_path)
    _same_ids(clin, clinical_path, cna, cna_path)
    mut, cna = mut.loc[clin.index], cna.loc[clin.index]
    check_survival(clin[SURVIVAL + [c for c in AML_SURVIVAL if c in clin.columns]], clinical_path)
    check_binary(mut[IPSSM_GENES], mut_path, required=IPSSM_GENES)
    check_binary(cna, cna_path, required=CNA_COLUMNS)
    check_clinical(clin, list(clinical), clinical_path)
    return clin, mut, cna


def _any(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    """OR over columns with NaN semantics: 1 if any 1, NaN if no 1 but some NaN, else 0."""
    sub = df[cols]
    out = (sub == 1).any(axis=1).astype(float)
    out[(out == 0) & sub.isna().any(axis=1)] = np.nan
    return out


def ipssm_features(
    mut: pd.DataFrame, cna: pd.DataFrame, mut_path: str = "df_mut.tsv", cna_path: str = "df_cna.tsv"
) -> pd.DataFrame:
    """Binary features (0/1/NaN) in Table 3.1 order, restricted to variables IPSS-M has; a
    missing column names the file it is missing from (issue 30 item 11)."""
    cols = {}
    _require(mut, IPSSM_GENES, mut_path)
    other = cna.drop(columns=["del5q"], errors="ignore")
    for name in TABLE_3_1:
        if name in IPSSM_GENES:
            cols[name] = mut[name].astype(float)
        elif name in CYTO_MAP:
            _require(cna, CYTO_MAP[name], cna_path)
            cols[name] = _any(cna, CYTO_MAP[name])
        elif name == "LOCHR5OD5qPLUSother":
            _require(cna, ["del5q"], cna_path)
            has_other = (other == 1).any(axis=1)
            cols[name] = ((cna["del5q"] == 1) & has_other).astype(float)
            cols[name][cna["del5q"].isna()] = np.nan
    return pd.DataFrame(cols, index=mut.index)


def load_ipssm(
    clinical_path: str, mut_path: str, cna_path: str, label: str = "IPSSM", impute: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """Features (imputed, binary/probabilities), obs (label + survival) and NaNs per column.
    ``impute=False``: the features with their NaNs (federated imputation, issue 23)."""
    clin, mut, cna = read_ipssm(clinical_path, mut_path, cna_path, label=label)
    surv = SURVIVAL + [c for c in AML_SURVIVAL if c in clin.columns]
    raw = ipssm_features(mut, cna, mut_path, cna_path)
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
