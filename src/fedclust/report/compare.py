"""Cell-for-cell comparison of the result tables of two workflow runs (issue 14).

The fan-out of issue 14 must leave the default config's result tables unchanged, cell for cell,
timing columns aside. :func:`compare_runs` walks two ``results/`` folders, reads every table the
workflow writes (``.tsv``, ``.tsv.gz``, ``.csv``, ``.csv.gz``, ``.parquet``, ``.json``) and
compares the tables found under the same relative path; :func:`format_report` prints one line per
table. Benchmark files (``benchmarks/`` folders, ``*benchmark*`` names) and logs are skipped, and
timing columns (:func:`is_timing_column`) are dropped from both sides before comparing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputDataError
from ..io import TIMING_COLUMNS

#: file name endings read as tables
TABLE_SUFFIXES = (".tsv", ".tsv.gz", ".csv", ".csv.gz", ".parquet", ".json")
#: folders whose files are never compared (wall-clock measurements and logs)
SKIP_DIRS = frozenset({"benchmarks", "logs", ".snakemake"})

# Words that mark a wall-clock column. A bare ``time`` is NOT one: it is the survival time of
# the Kaplan-Meier and DeepCox tables. ``cpu_time``, ``fit_time``, ``time_s`` are.
_TIMING_WORDS = r"seconds?|secs?|elapsed|wall|cpu|runtime|duration|eta|h:m:s|timestamp|timing"
_TIMING_RE = re.compile(
    rf"(^|[^a-z0-9])({_TIMING_WORDS})([^a-z0-9]|$)"  # a timing word as a name part
    r"|(^|[^a-z0-9])s$"  # ..._s (wall_s, steps_per_s)
    # cpu_time, time_s (not bare "time", nor time_q25 / time_min ...: survival-time summaries)
    r"|[a-z0-9]_time($|[^a-z0-9])"
    r"|(^|[^a-z0-9])time_(?!(q\d+|min|max|median|mean)($|[^a-z0-9]))",
)


def is_timing_column(name: object) -> bool:
    """True for a wall-clock column name (``seconds``, ``wall_s``, ``cpu_time``, ``elapsed``,
    ``init_seconds``, ``eta``, Snakemake's ``s``, ...); False for ``time`` (survival time),
    ``theta``, ``beta``, ``time_q25`` (survival-time quantiles) and an upper-case ``S``."""
    if str(name) == "S":  # the source documents' S (top-S vote, size study); Snakemake's is "s"
        return False
    text = str(name).lower()
    return text in TIMING_COLUMNS or bool(_TIMING_RE.search(text))


def is_skipped_path(rel: str) -> bool:
    """Benchmark files, logs and the Snakemake metadata folder are not result tables."""
    parts = Path(rel).parts
    return bool(SKIP_DIRS & set(parts[:-1])) or "benchmark" in parts[-1].lower()


def results_dir(path: str | Path) -> Path:
    """``path`` itself, or ``path/results`` when ``path`` is a run folder holding one."""
    path = Path(path)
    if not path.is_dir():
        raise InputDataError(
            "not a folder", where=str(path), fix="give a run's results/ folder (or the run folder)"
        )
    sub = path / "results"
    return sub if sub.is_dir() and path.name != "results" else path


def find_tables(root: str | Path) -> dict[str, Path]:
    """Every table file under ``root`` by its path relative to ``root`` (posix)."""
    root = Path(root)
    found = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or not p.name.endswith(TABLE_SUFFIXES):
            continue
        rel = p.relative_to(root).as_posix()
        if not is_skipped_path(rel):
            found[rel] = p
    return found


def _flatten(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for k in sorted(obj, key=str):
            yield from _flatten(obj[k], f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, list):
        if not obj:
            yield prefix, "[]"
        for i, v in enumerate(obj):
            yield from _flatten(v, f"{prefix}[{i}]")
    else:
        yield prefix, obj


def read_any(path: str | Path) -> pd.DataFrame:
    """A table as a DataFrame of its cells: tsv/csv without an index column (the index is a
    column like any other), parquet with its index reset, JSON flattened to (key, value) rows
    (``a.b[2]`` paths)."""
    path = Path(path)
    name = path.name
    try:
        if name.endswith(".parquet"):
            df = pd.read_parquet(path)
            if not isinstance(df.index, pd.RangeIndex) or df.index.name is not None:
                df = df.reset_index()
            return df
        if name.endswith((".tsv", ".tsv.gz")):
            return pd.read_csv(path, sep="\t", low_memory=False)
        if name.endswith((".csv", ".csv.gz")):
            return pd.read_csv(path, low_memory=False)
        if name.endswith(".json"):
            rows = list(_flatten(json.loads(path.read_text())))
            values = pd.Series([v for _, v in rows], dtype=object)
            return pd.DataFrame({"key": [k for k, _ in rows], "value": values})
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    except (ValueError, OSError) as e:
        raise InputDataError(f"cannot read as a table: {e}", where=str(path)) from e
    raise InputDataError(
        "unknown table extension", where=str(path), fix=f"expected one of {TABLE_SUFFIXES}"
    )


def drop_timing(df: pd.DataFrame, json_rows: bool = False) -> pd.DataFrame:
    """``df`` without timing columns; for a flattened JSON, without rows whose key's last
    component is a timing name."""
    if json_rows and "key" in df.columns:
        last = df["key"].astype(str).str.replace(r"\[\d+\]", "", regex=True).str.split(".").str[-1]
        keep = ~last.map(is_timing_column).astype(bool)
        return df[keep].reset_index(drop=True)
    return df[[c for c in df.columns if not is_timing_column(c)]]


@dataclass
class TableDiff:
    """The comparison of one table: status ``identical``, ``differs``, ``only_before`` or
    ``only_after``; for ``differs`` the counts, the largest numeric difference and examples."""

    path: str
    status: str
    cells: int = 0
    differing: int = 0
    max_abs_diff: float = float("nan")
    notes: list[str] = field(default_factory=list)
    examples: list[tuple[Any, str, Any, Any]] = field(default_factory=list)
    ignored_columns: list[str] = field(default_factory=list)


def _numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _as_float(s: pd.Series) -> np.ndarray | None:
    """A numeric column as floats (missing = NaN); None for other columns."""
    if _numeric(s):
        return s.to_numpy(dtype=float, na_value=np.nan)
    return None


def _column_diff(a: pd.Series, b: pd.Series, atol: float, rtol: float) -> tuple[np.ndarray, float]:
    """Boolean mask of differing cells and the largest absolute numeric difference."""
    fa, fb = _as_float(a), _as_float(b)
    if fa is not None and fb is not None:
        both_nan = np.isnan(fa) & np.isnan(fb)
        with np.errstate(invalid="ignore"):
            d = np.abs(fa - fb)
            same = (fa == fb) | both_nan
            if atol > 0 or rtol > 0:
                same |= d <= atol + rtol * np.abs(fb)
        diff = ~same
        finite = d[diff & np.isfinite(d)]
        return diff, float(finite.max()) if finite.size else float("nan")
    diff = np.zeros(len(a), dtype=bool)
    max_diff = float("nan")
    pairs = zip(a.to_numpy(dtype=object), b.to_numpy(dtype=object), strict=True)
    for i, (x0, y0) in enumerate(pairs):
        x, y = _missing_to_none(x0), _missing_to_none(y0)
        if _is_number(x) and _is_number(y):
            d = abs(float(x) - float(y))
            if float(x) != float(y) and not d <= atol + rtol * abs(float(y)):
                diff[i] = True
                max_diff = d if math.isnan(max_diff) else max(max_diff, d)
        else:
            diff[i] = not (type(x) is type(y) and x == y)
    return diff, max_diff


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)


def _missing_to_none(v: Any) -> Any:
    """None, NaN and pandas' NA are one missing value (NaN equals NaN in a table)."""
    if v is None or v is pd.NA or (isinstance(v, float | np.floating) and math.isnan(v)):
        return None
    return v


def compare_frames(
    path: str,
    before: pd.DataFrame,
    after: pd.DataFrame,
    *,
    atol: float = 0.0,
    rtol: float = 0.0,
    json_rows: bool = False,
    ignore_row_order: bool = False,
    max_examples: int = 5,
) -> TableDiff:
    """Compare two tables cell for cell (timing columns dropped; NaN equals NaN; exact unless
    ``atol``/``rtol``). Columns present on one side only and a different row count count as a
    difference; the common columns are compared on the common leading rows."""
    ignored = (
        sorted({str(c) for c in [*before.columns, *after.columns] if is_timing_column(c)})
        if not json_rows
        else []
    )
    a, b = drop_timing(before, json_rows), drop_timing(after, json_rows)
    if ignore_row_order:
        a, b = (x.sort_values(list(x.columns), key=lambda s: s.astype(str)) for x in (a, b))
        a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    res = TableDiff(path, "identical", ignored_columns=ignored)
    missing_keys = 0
    if json_rows and "key" in a.columns and "key" in b.columns:  # align JSON leaves by key
        ka, kb = list(a["key"]), list(b["key"])
        only_ka, only_kb = [k for k in ka if k not in set(kb)], [k for k in kb if k not in set(ka)]
        for side, keys in (("before", only_ka), ("after", only_kb)):
            if keys:
                res.notes.append(f"keys only {side}: {', '.join(map(str, keys[:10]))}")
        missing_keys = len(only_ka) + len(only_kb)
        a = a[~a["key"].isin(only_ka)].reset_index(drop=True)
        b = b.set_index("key").loc[a["key"]].reset_index()
    only_a = [c for c in a.columns if c not in b.columns]
    only_b = [c for c in b.columns if c not in a.columns]
    if only_a:
        res.notes.append(f"columns only before: {', '.join(map(str, only_a[:10]))}")
    if only_b:
        res.notes.append(f"columns only after: {', '.join(map(str, only_b[:10]))}")
    if len(a) != len(b):
        res.notes.append(f"rows: {len(a)} before vs {len(b)} after")
    common = [c for c in a.columns if c in b.columns]
    if not only_a and not only_b and common != list(b.columns):
        res.notes.append("same columns in a different order")
    n = min(len(a), len(b))
    res.cells = n * len(common)
    max_diff = float("nan")
    key = a["key"].to_numpy() if json_rows and "key" in a.columns else None
    masks = np.zeros((n, len(common)), dtype=bool)
    for j, c in enumerate(common):
        masks[:, j], m = _column_diff(a[c].iloc[:n], b[c].iloc[:n], atol, rtol)
        if not math.isnan(m):
            max_diff = m if math.isnan(max_diff) else max(max_diff, m)
    res.differing = int(masks.sum())
    for i, j in np.argwhere(masks)[:max_examples]:  # row-major: the first differing cells
        c = common[j]
        row = key[i] if key is not None else int(i)
        res.examples.append((row, str(c), a[c].iloc[i], b[c].iloc[i]))
    res.max_abs_diff = max_diff
    if only_a or only_b or len(a) != len(b):
        res.differing += (
            abs(len(a) - len(b)) * len(common) + len(only_a) * len(a) + len(only_b) * len(b)
        )
    res.differing += missing_keys
    if res.differing or res.notes:
        res.status = "differs"
    return res


def compare_runs(
    before: str | Path,
    after: str | Path,
    *,
    include: Iterable[str] = (),
    atol: float = 0.0,
    rtol: float = 0.0,
    ignore_row_order: bool = False,
) -> list[TableDiff]:
    """Compare every table of two results folders (see the module docstring). ``include``:
    path prefixes or globs relative to ``results/`` (e.g. ``hac/``, ``dec/*/tables/*.tsv``);
    empty = all tables."""
    ra, rb = results_dir(before), results_dir(after)
    ta, tb = find_tables(ra), find_tables(rb)
    patterns = list(include)

    def wanted(rel: str) -> bool:
        return not patterns or any(
            rel.startswith(p) or Path(rel).match(p) or re.fullmatch(_glob(p), rel) for p in patterns
        )

    out = []
    for rel in sorted(set(ta) | set(tb)):
        if not wanted(rel):
            continue
        if rel not in tb:
            out.append(TableDiff(rel, "only_before"))
            continue
        if rel not in ta:
            out.append(TableDiff(rel, "only_after"))
            continue
        json_rows = rel.endswith(".json")
        out.append(
            compare_frames(
                rel, read_any(ta[rel]), read_any(tb[rel]), atol=atol, rtol=rtol,
                json_rows=json_rows, ignore_row_order=ignore_row_order,
            )
        )  # fmt: skip
    return out


def _glob(pattern: str) -> str:
    return "".join(".*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch) for ch in pattern)


def _fmt(v: Any) -> str:
    text = repr(v.item() if isinstance(v, np.generic) else v)
    return text if len(text) <= 40 else text[:37] + "..."


def format_report(diffs: list[TableDiff], verbose: bool = True) -> str:
    """One line per table (identical lines only when ``verbose``) and a summary line."""
    lines = []
    for d in diffs:
        if d.status == "identical":
            if verbose:
                lines.append(f"identical    {d.path} ({d.cells} cells)")
        elif d.status == "only_before":
            lines.append(f"only before  {d.path}")
        elif d.status == "only_after":
            lines.append(f"only after   {d.path}")
        else:
            mx = "" if math.isnan(d.max_abs_diff) else f", max abs diff {d.max_abs_diff:.3g}"
            lines.append(f"DIFFERS      {d.path}: {d.differing} of {d.cells} cells{mx}")
            lines.extend(f"    {note}" for note in d.notes)
            lines.extend(
                f"    row {row!s} column {col!r}: {_fmt(x)} -> {_fmt(y)}"
                for row, col, x, y in d.examples
            )
    counts = {s: sum(d.status == s for d in diffs) for s in
              ("identical", "differs", "only_before", "only_after")}  # fmt: skip
    ignored = sorted({c for d in diffs for c in d.ignored_columns})
    lines.append(
        f"{len(diffs)} tables: {counts['identical']} identical, {counts['differs']} differ, "
        f"{counts['only_before']} only before, {counts['only_after']} only after"
    )
    if ignored:
        lines.append(f"timing columns ignored: {', '.join(ignored)}")
    return "\n".join(lines)


def exit_code(diffs: list[TableDiff], strict: bool = False) -> int:
    """1 when a table common to both runs differs (``strict``: or exists in one run only)."""
    bad = {"differs", "only_before", "only_after"} if strict else {"differs"}
    return int(any(d.status in bad for d in diffs))


def main(argv: list[str] | None = None) -> int:
    """``compare_tables.py BEFORE AFTER``: print the per-table report, return the exit code."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="compare_tables.py",
        description="Compare the result tables of two workflow runs cell for cell (timing "
        "columns, benchmarks/ and logs/ ignored). Exit code 1 when a table differs.",
    )
    ap.add_argument("before", help="results/ folder (or run folder) of the first run")
    ap.add_argument("after", help="results/ folder (or run folder) of the second run")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PREFIX_OR_GLOB",
        help="compare only these tables (relative to results/, e.g. hac/); repeatable",
    )
    ap.add_argument("--atol", type=float, default=0.0, help="absolute tolerance (default exact)")
    ap.add_argument("--rtol", type=float, default=0.0, help="relative tolerance (default exact)")
    ap.add_argument(
        "--ignore-row-order",
        action="store_true",
        help="sort the rows of both tables before comparing",
    )
    ap.add_argument(
        "--strict", action="store_true", help="also exit 1 when a table exists in one run only"
    )
    ap.add_argument("-q", "--quiet", action="store_true", help="do not list identical tables")
    args = ap.parse_args(argv)  # fmt: skip
    diffs = compare_runs(
        args.before, args.after, include=args.only, atol=args.atol, rtol=args.rtol,
        ignore_row_order=args.ignore_row_order,
    )  # fmt: skip
    print(format_report(diffs, verbose=not args.quiet))
    return exit_code(diffs, strict=args.strict)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
