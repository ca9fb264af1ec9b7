"""TCGA bulk RNA-seq from the UCSC Xena GDC hub (seed 001 §1) and TSS → region centers.

Upstream format (``TCGA-<COHORT>.star_counts.tsv.gz``): tab-separated, first column
``Ensembl_ID`` (genes, rows), one column per sample barcode ``TCGA-<TSS>-<participant>-<ss><v>``,
values log2(count + 1). :func:`read_xena_counts` inverts to integer counts and checks that they
*are* integers. ``TCGA-<COHORT>.clinical.tsv.gz``: one row per sample (column ``sample``), sex in
``gender.demographic`` (older hub files: ``gender``).

Sample selection [OURS, documented in the report]: only primary tumours (sample type ``01``) and
one sample per patient (the first barcode in sorted order, i.e. vial A before B), so that each
patient counts once, as in the cohort sizes of seed 001 Table 3.1 (which count primary tumours).

Centers: the TSS code (2nd barcode field) → region table is a *rule input*, never a package file:
the real table ``<download_dir>/tcga/centers.csv`` (downloaded from the fedpydeseq2-datasets 0.1.0
wheel or copied from the data mirror, :mod:`fedclust.data.registry`) or, for simulated cohorts,
the simulated site table (:func:`fedclust.data.simulate.simulated_site_table`) in the same format.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputDataError
from .download import verify_downloads

log = logging.getLogger(__name__)

REGIONS = ("Northeast", "South", "West", "Midwest", "Canada", "Europe", "Other")
BARCODE = re.compile(r"^TCGA-([A-Z0-9]{2})-([A-Z0-9]{4})-(\d{2})([A-Z]?)")
SEX_COLUMNS = ("gender.demographic", "demographic.gender", "gender")
#: largest plausible read count of one gene in one sample (deep libraries hold ~1e8 reads);
#: larger values are corrupt files (and 2**63 would overflow int64)
MAX_COUNT = 2**32


#: columns the TSS table needs (the real file also has Source Site, Country, State)
TSS_COLUMNS = ("TSS Code", "Region")
_TSS_FIX = (
    "use the TCGA TSS table of the download rule (download_tcga_sites: "
    "<download_dir>/tcga/centers.csv, from the fedpydeseq2-datasets 0.1.0 wheel or the data "
    "mirror's tcga/centers.csv) or the simulated site table of rule simulate_tss_sites "
    "(columns 'TSS Code' and 'Region')"
)


def tss_table(path: str | Path) -> pd.DataFrame:
    """The TSS table at ``path`` (columns ``TSS Code``, ``Region``, optional others), indexed by
    the 2-character TSS code (zero-padded: the real file writes ``05`` as ``5``)."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise InputDataError(
            "the TSS → region table is missing", where=str(path), fix=_TSS_FIX
        ) from None
    except (OSError, ValueError, pd.errors.ParserError) as err:
        raise InputDataError(
            f"cannot read the TSS → region table ({err})", where=str(path), fix=_TSS_FIX
        ) from None
    missing = [c for c in TSS_COLUMNS if c not in df.columns]
    if missing:
        raise InputDataError(
            f"the TSS → region table lacks the column(s) {', '.join(map(repr, missing))} "
            f"(has {', '.join(map(repr, df.columns))})",
            where=str(path),
            fix=_TSS_FIX,
        )
    df = df.drop(columns=[c for c in df.columns if c.startswith("Unnamed:") or c == ""])
    df["TSS Code"] = df["TSS Code"].str.strip().str.zfill(2)
    bad = sorted(set(df["Region"]) - set(REGIONS))
    dup = sorted(set(df["TSS Code"][df["TSS Code"].duplicated()]))
    if bad or dup or df.empty:
        what = (
            f"regions {bad} outside {list(REGIONS)}"
            if bad
            else f"duplicated TSS codes {dup}"
            if dup
            else "no rows"
        )
        raise InputDataError(f"the TSS → region table has {what}", where=str(path), fix=_TSS_FIX)
    return df.set_index("TSS Code")


def tss_code(barcode: str) -> str:
    """The tissue source site code: the 2nd field of a TCGA barcode, as a string (``"05"``)."""
    m = BARCODE.match(barcode)
    if not m:
        raise InputDataError(
            f"'{barcode}' is not a TCGA sample barcode (TCGA-<TSS>-<participant>-<sample>...)",
            where="sample column names of the counts file",
            fix="use the Xena GDC hub star_counts file (columns are sample barcodes)",
        )
    return m.group(1)


def tss_region(codes: pd.Series | list[str], table: pd.DataFrame) -> pd.Series:
    """Region (one of :data:`REGIONS`) per TSS code by ``table`` (:func:`tss_table`); unknown
    codes → ``Other`` with a warning."""
    codes = pd.Series(codes, dtype=str).str.zfill(2)
    region = codes.map(table["Region"])
    unknown = sorted(set(codes[region.isna()]))
    if unknown:
        log.warning("TSS codes not in the TSS table, mapped to 'Other': %s", ", ".join(unknown))
    return region.fillna("Other")


def _cell(i: int, j: int, rows, cols) -> str:
    r = f"row {i}" + (f" ({rows[i]})" if rows is not None else "")
    c = f"column {j}" + (f" ({cols[j]})" if cols is not None else "")
    return f"{r}, {c}"


def counts_from_log2(
    values: np.ndarray,
    where: str,
    atol: float = 1e-3,
    rows=None,
    cols=None,
) -> np.ndarray:
    """Invert log2(count + 1) to integer counts; error if the result is not integer/non-negative
    or implausibly large (> :data:`MAX_COUNT`). ``rows``/``cols`` name genes/samples in errors.

    A value is accepted when log2(round(count) + 1) reproduces it within ``atol`` (the hub
    prints a few decimals, so large counts are only known to that precision in log space).
    """
    if not np.isfinite(values).all():
        raise InputDataError(
            "the counts file holds missing or infinite values",
            where=where,
            fix="use the unmodified Xena star_counts file",
        )
    neg = values < np.log2(0.5)  # count < -0.5
    if neg.any():
        i, j = np.argwhere(neg)[0]
        raise InputDataError(
            f"negative count {np.exp2(values[i, j]) - 1:.3g} (stored value {values[i, j]:.4g}) "
            f"at {_cell(i, j, rows, cols)}: counts must be >= 0",
            where=where,
            fix="the file must hold log2(count + 1) of raw (non-negative integer) counts",
        )
    huge = values > np.log2(MAX_COUNT + 1.0)
    if huge.any():
        i, j = np.argwhere(huge)[0]
        raise InputDataError(
            f"implausible count {np.exp2(values[i, j]) - 1:.4g} (stored value "
            f"{values[i, j]:.6g}) at {_cell(i, j, rows, cols)}; {int(huge.sum())} value(s) "
            f"above {MAX_COUNT:.3g}",
            where=where,
            fix="the file must hold log2(count + 1) of raw counts: it is corrupt or holds "
            "another quantity; re-download it",
        )
    # in place, to keep the peak memory of a 60,000-gene × 1,200-sample cohort low
    rounded = np.exp2(values)
    rounded -= 1.0
    np.rint(rounded, out=rounded)
    err = rounded + 1.0
    np.log2(err, out=err)
    err -= values
    np.abs(err, out=err)
    bad = err > atol
    del err
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputDataError(
            f"{int(bad.sum())} values are not log2(integer + 1), e.g. {values[i, j]:.6g} at "
            f"{_cell(i, j, rows, cols)} (count {np.exp2(values[i, j]) - 1:.6g})",
            where=where,
            fix="fedclust needs raw integer counts (Xena 'star_counts'), not TPM/FPKM files",
        )
    return rounded.astype(np.int64)


def _no_duplicates(names, what: str, path: str) -> None:
    """A gene row or sample column listed twice would be counted twice (issue 30 item 6)."""
    names = pd.Index(list(names)).astype(str)
    dup = names[names.duplicated()].unique()
    if len(dup):
        raise InputDataError(
            f"{len(dup)} duplicate {what} name(s) in the counts file, first: {', '.join(dup[:5])}",
            where=path,
            fix="use the unmodified Xena star_counts file (one row per gene, one column per "
            "sample)",
        )


def read_xena_counts(path: str) -> pd.DataFrame:
    """Xena ``star_counts.tsv.gz`` → samples × genes integer counts (all barcodes kept)."""
    try:
        df = pd.read_csv(path, sep="\t", index_col=0)
    except (OSError, EOFError, ValueError) as err:
        raise InputDataError(
            f"cannot read the counts file ({err})", where=path, fix="re-download it"
        ) from None
    if df.shape[1] == 0 or df.shape[0] == 0:
        raise InputDataError("the counts file is empty", where=path, fix="re-download it")
    _no_duplicates(df.index, "gene", path)
    # pandas renames a repeated header to "<name>.1": read the header as written
    header = pd.read_csv(path, sep="\t", nrows=1, header=None, dtype=str).iloc[0, 1:]
    _no_duplicates(header, "sample", path)
    try:
        values = df.to_numpy(dtype=float)
    except ValueError as err:
        raise InputDataError(
            f"the counts file holds non-numeric values ({err})",
            where=path,
            fix="use the unmodified Xena star_counts file",
        ) from None
    counts = counts_from_log2(values, where=path, rows=df.index, cols=df.columns)
    out = pd.DataFrame(counts.T, index=df.columns.astype(str), columns=df.index.astype(str))
    out.index.name = "sample_id"
    out.columns.name = None
    return out


def select_primary(barcodes: list[str] | pd.Index) -> list[str]:
    """Primary tumours (sample type 01), one per patient (first barcode in sorted order)."""
    keep: dict[str, str] = {}
    for b in sorted(barcodes):
        m = BARCODE.match(b)
        if not m:
            tss_code(b)  # raises the clear error
        if m.group(3) != "01":
            continue
        patient = b[:12]
        keep.setdefault(patient, b)
    return sorted(keep.values())


def read_xena_clinical(path: str) -> pd.DataFrame:
    """Xena ``clinical.tsv.gz`` → DataFrame indexed by sample barcode with ``sex`` (+ extras)."""
    try:
        df = pd.read_csv(path, sep="\t", dtype=str)
    except (OSError, EOFError, ValueError) as err:
        raise InputDataError(
            f"cannot read the clinical file ({err})", where=path, fix="re-download it"
        ) from None
    if "sample" not in df.columns and "submitter_id.samples" in df.columns:  # older hub files
        df = df.rename(columns={"submitter_id.samples": "sample"})
    if "sample" not in df.columns:
        raise InputDataError(
            "the clinical file has no 'sample' column",
            where=path,
            fix="use the Xena GDC hub TCGA-<COHORT>.clinical.tsv.gz file",
        )
    sex_col = next((c for c in SEX_COLUMNS if c in df.columns), None)
    if sex_col is None:
        raise InputDataError(
            f"the clinical file has no sex column (looked for {', '.join(SEX_COLUMNS)})",
            where=path,
            fix="use the Xena GDC hub TCGA-<COHORT>.clinical.tsv.gz file",
        )
    df = df.drop_duplicates("sample").set_index("sample")
    sex = df[sex_col].str.strip().str.lower()
    out = pd.DataFrame({"sex": sex.where(sex.isin(["female", "male"]), "NA")}, index=df.index)
    if "true_cluster" in df.columns:  # written by fedclust.data.simulate only
        out["true_cluster"] = df["true_cluster"].astype(int)
    return out


def load_xena_cohort(
    counts_path: str, clinical_path: str, sites_path: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Counts (primary tumours, one per patient) and ``obs`` (tss, center, sex[, true_cluster]);
    centers by the TSS → region table at ``sites_path`` (:func:`tss_table`).

    Cached downloads are checked against their pinned sha256 first (simulated files are not)."""
    verify_downloads([counts_path, clinical_path, sites_path])
    sites = tss_table(sites_path)
    counts = read_xena_counts(counts_path)
    keep = select_primary(counts.index)
    if not keep:
        raise InputDataError(
            "no primary-tumour samples (sample type 01) in the counts file",
            where=counts_path,
            fix="check that this is a TCGA tumour cohort",
        )
    log.info("kept %d primary-tumour samples (one per patient) of %d", len(keep), len(counts))
    counts = counts.loc[keep]
    clin = read_xena_clinical(clinical_path)
    obs = pd.DataFrame(index=counts.index)
    obs["tss"] = [tss_code(b) for b in obs.index]
    obs["center"] = tss_region(obs["tss"], sites).to_numpy()
    obs["sex"] = clin["sex"].reindex(obs.index).fillna("NA")
    if "true_cluster" in clin.columns:
        obs["true_cluster"] = clin["true_cluster"].reindex(obs.index)
    return counts, obs
