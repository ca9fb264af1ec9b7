"""Core messages (dicts of numpy arrays, numbers, strings) ↔ Flower ``RecordDict``.

Lists of arrays (model parameters) travel as one ``ArrayRecord`` each, single arrays as a
one-entry ``ArrayRecord``, numbers and strings in one ``ConfigRecord``. Arrays are serialised
by Flower as ``.npy`` bytes, so dtype, shape and every bit survive the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, RecordDict

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


def encode(message: Mapping[str, Any]) -> RecordDict:
    """One core message → one ``RecordDict``."""
    rd = RecordDict()
    scalars: dict[str, Any] = {}
    lists, single = [], []
    for key, v in message.items():
        if v is None:
            continue
        if isinstance(v, list | tuple) and all(isinstance(a, np.ndarray) for a in v):
            rd[f"a:{key}"] = ArrayRecord([np.asarray(a) for a in v])
            lists.append(key)
        elif isinstance(v, np.ndarray):
            rd[f"a:{key}"] = ArrayRecord([v])
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
    out: dict[str, Any] = {k: rd[f"a:{k}"].to_numpy_ndarrays() for k in lists}
    out.update({k: rd[f"a:{k}"].to_numpy_ndarrays()[0] for k in single})
    out.update(scalars)
    return out
