"""Atomic file output and small readers.

Every output is written to a temporary file in the destination folder and renamed into place, so
an interrupted rule never leaves a file that looks complete (rename is atomic on POSIX).

Result tables are byte-identical across runs of the same config: gzip is written with a fixed
header time (mtime 0), and timing columns (:data:`TIMING_COLUMNS`) go to separate benchmark files
under ``results/benchmarks/`` (:func:`write_result_and_benchmark`).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it to ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates 0600 files: give the output the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | os.PathLike, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text())


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer | np.floating | np.bool_):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


#: columns (and JSON keys) holding wall-clock or CPU-time measurements: never part of a result
#: table or result JSON, only of its benchmark twin under results/benchmarks/
TIMING_COLUMNS = (
    "seconds", "pooled_seconds", "pooled seconds", "wall_s", "steps_per_s",
    "cpu_seconds", "init_seconds", "seconds_per_iteration", "cpu_seconds_per_iteration",
    "s / iteration (wall)", "CPU s / iteration",
)  # fmt: skip


def to_tsv_gz(df: pd.DataFrame, path: str | os.PathLike, **to_csv: Any) -> None:
    """``df.to_csv(sep="\t")`` gzipped with reproducible bytes: no time and no file name in
    the gzip header (pandas writes both, and the name of a temporary file differs per run)."""
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        io.TextIOWrapper(gz, encoding="utf-8", newline="") as text,
    ):
        df.to_csv(text, sep="\t", **to_csv)


def write_result_and_benchmark(
    path: str | os.PathLike,
    bench_path: str | os.PathLike,
    df: pd.DataFrame,
    index: bool = False,
) -> None:
    """``df`` without its timing columns to ``path`` (a result table) and the whole table,
    timings included, to ``bench_path`` (a benchmark file, not reproducible by nature)."""
    write_table(path, df.drop(columns=[c for c in TIMING_COLUMNS if c in df.columns]), index)
    write_table(bench_path, df, index)


def write_json_and_benchmark(
    path: str | os.PathLike, bench_path: str | os.PathLike, obj: dict[str, Any]
) -> None:
    """``obj`` without its timing keys (:data:`TIMING_COLUMNS`) to ``path`` (a result JSON,
    byte-identical across runs) and the whole of it to ``bench_path`` (a benchmark file)."""
    write_json(path, {k: v for k, v in obj.items() if k not in TIMING_COLUMNS})
    write_json(bench_path, obj)


def benchmark_twin(path: str | os.PathLike) -> str:
    """The benchmark file of a result file: ``results/<x>`` → ``results/benchmarks/<x>``."""
    text = str(path)
    if not text.startswith("results/"):
        raise ValueError(f"not a results/ path: {text}")
    return "results/benchmarks/" + text[len("results/") :]


def write_table(path: str | os.PathLike, df: pd.DataFrame, index: bool = True) -> None:
    """Write a DataFrame by extension: ``.parquet``, ``.tsv``/``.tsv.gz`` or ``.csv``."""
    path = Path(path)
    with atomic_path(path) as tmp:
        name = path.name
        if name.endswith(".parquet"):
            df.to_parquet(tmp, index=index)
        elif name.endswith((".tsv", ".tsv.gz")):
            if name.endswith(".gz"):
                to_tsv_gz(df, tmp, index=index)
            else:
                df.to_csv(tmp, sep="\t", index=index)
        elif name.endswith(".csv"):
            df.to_csv(tmp, index=index)
        else:
            raise ValueError(f"unknown table extension: {path}")


def read_table(path: str | os.PathLike, **kwargs: Any) -> pd.DataFrame:
    """Read a table written by :func:`write_table` (first column is the index for tsv/csv)."""
    path = Path(path)
    name = path.name
    if name.endswith(".parquet"):
        return pd.read_parquet(path, **kwargs)
    if name.endswith((".tsv", ".tsv.gz")):
        return pd.read_csv(path, sep="\t", index_col=0, **kwargs)
    if name.endswith(".csv"):
        return pd.read_csv(path, index_col=0, **kwargs)
    raise ValueError(f"unknown table extension: {path}")


def write_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)


def save_figure(fig: Any, path: str | os.PathLike, dpi: int = 120) -> None:
    """Save a matplotlib figure atomically and close it (format from the extension)."""
    import matplotlib.pyplot as plt

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format=path.suffix.lstrip("."))
    plt.close(fig)
