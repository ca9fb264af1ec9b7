"""Core messages (dicts of numpy arrays, numbers, strings) ↔ Flower ``RecordDict``.

Lists of arrays (model parameters) travel as one ``ArrayRecord`` each, single arrays as a
one-entry ``ArrayRecord``, numbers and strings in one ``ConfigRecord``. Arrays are Flower
``Array`` objects holding ``.npy`` bytes, so dtype, shape and every bit survive the wire.
:func:`to_array` / :func:`from_array` make and read exactly the bytes Flower's
``Array.from_numpy_ndarray`` / ``Array.numpy`` do (``np.save`` / ``np.load``), with the ``.npy``
header of each (dtype, shape) parsed once: ``np.load`` parses it with ``ast.literal_eval`` for
every array, which was most of the simulation engine's per-message cost (issue 30, B.6).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, RecordDict

SCALARS = "scalars"
LISTS = "__lists__"
SINGLE = "__arrays__"


def _scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, list | tuple) and all(isinstance(x, str) for x in v):
        return list(v)  # short strings (ids, secure aggregation's instruction chunks)
    raise TypeError(f"cannot send {type(v).__name__} as a Flower config value")


NUMPY_STYPE = "numpy.ndarray"
_HEADERS: dict[tuple[str, tuple[int, ...]], bytes] = {}
_PARSED: dict[bytes, tuple[tuple[int, ...], bool, np.dtype]] = {}
_CACHE_MAX = 4096  # distinct (dtype, shape) headers kept


def _remember(cache: dict, key: Any, value: Any) -> Any:
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache[key] = value
    return value


def to_array(a: np.ndarray) -> Array:
    """``Array.from_numpy_ndarray(a)``, byte for byte (``np.save`` of a C-ordered array)."""
    a = np.asarray(a)
    if a.dtype.hasobject or not a.flags.c_contiguous:
        return Array.from_numpy_ndarray(a)
    key = (a.dtype.str, a.shape)
    head = _HEADERS.get(key)
    if head is None:
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        data = buf.getvalue()
        head = _remember(_HEADERS, key, data[: len(data) - a.nbytes])
    return Array(dtype=str(a.dtype), shape=tuple(a.shape), stype=NUMPY_STYPE,
                 data=head + a.tobytes())  # fmt: skip


def from_array(arr: Array) -> np.ndarray:
    """``arr.numpy()`` (``np.load``, never pickles): a fresh array with the same bits."""
    data = arr.data
    if arr.stype != NUMPY_STYPE or data[6:8] != b"\x01\x00":  # not a version 1.0 .npy
        return arr.numpy()
    end = 10 + int.from_bytes(data[8:10], "little")
    head = bytes(data[:end])
    parsed = _PARSED.get(head)
    if parsed is None:
        buf = io.BytesIO(head)
        np.lib.format.read_magic(buf)
        parsed = _remember(_PARSED, head, np.lib.format.read_array_header_1_0(buf))
    shape, fortran, dtype = parsed
    if dtype.hasobject:
        return arr.numpy()  # np.load refuses it (allow_pickle=False)
    flat = np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=end)
    return flat.reshape(shape, order="F" if fortran else "C").copy(order="K")


def array_record(arrays: list[np.ndarray]) -> ArrayRecord:
    """``ArrayRecord(arrays)`` (keys "0", "1", …)."""
    return ArrayRecord({str(i): to_array(a) for i, a in enumerate(arrays)})


def arrays(record: ArrayRecord) -> list[np.ndarray]:
    """``record.to_numpy_ndarrays()``."""
    return [from_array(a) for a in record.values()]


def encode(message: Mapping[str, Any]) -> RecordDict:
    """One core message → one ``RecordDict``."""
    rd = RecordDict()
    scalars: dict[str, Any] = {}
    lists, single = [], []
    for key, v in message.items():
        if v is None:
            continue
        if isinstance(v, list | tuple) and all(isinstance(a, np.ndarray) for a in v):
            rd[f"a:{key}"] = array_record([np.asarray(a) for a in v])
            lists.append(key)
        elif isinstance(v, np.ndarray):
            rd[f"a:{key}"] = array_record([v])
            single.append(key)
        else:
            scalars[key] = _scalar(v)
    scalars[LISTS] = ",".join(lists)
    scalars[SINGLE] = ",".join(single)
    rd[SCALARS] = ConfigRecord(scalars)
    return rd


def decode(rd: RecordDict) -> dict[str, Any]:
    """``RecordDict`` → the core message :func:`encode` was given (``None`` fields dropped)."""
    scalars = dict(rd[SCALARS])
    lists = [k for k in str(scalars.pop(LISTS, "")).split(",") if k]
    single = [k for k in str(scalars.pop(SINGLE, "")).split(",") if k]
    out: dict[str, Any] = {k: arrays(rd[f"a:{k}"]) for k in lists}
    out.update({k: arrays(rd[f"a:{k}"])[0] for k in single})
    out.update(scalars)
    return out
