"""The privacy boundary: a ledger of every message a center sends or receives.

Center-side functions return *messages*: plain dicts of numpy arrays / scalars. Before the server
(or a peer) sees a message it passes :meth:`Ledger.send`, which counts the message, its arrays and
its floats. This maps one-to-one onto Flower: a center's ``fit`` returns
``(parameters, n, metrics)`` and the strategy's ``aggregate_fit`` receives them; the ledger sits
where Flower's transport is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

Message = dict[str, Any]


def _count_floats(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.size)
    if isinstance(value, int | float | np.number | bool):
        return 1
    if isinstance(value, Mapping):
        return sum(_count_floats(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_count_floats(v) for v in value)
    if value is None or isinstance(value, str):
        return 0
    raise TypeError(
        f"message field of type {type(value).__name__} is not a plain array/scalar: only numpy "
        "arrays, numbers, strings and (nested) lists/dicts of them may cross the privacy boundary"
    )


@dataclass
class Ledger:
    """Counts every message; ``records`` holds one row per message."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def send(
        self, sender: str, receiver: str, message: Message, round: int = 0, kind: str = ""
    ) -> Message:
        """Record ``message`` travelling ``sender`` → ``receiver`` and return it unchanged."""
        if not isinstance(message, Mapping):
            raise TypeError("a message must be a dict of plain arrays / scalars")
        n = _count_floats(message)
        self.records.append(
            {
                "round": round,
                "sender": sender,
                "receiver": receiver,
                "kind": kind,
                "fields": ",".join(sorted(message)),
                "floats": n,
            }
        )
        return dict(message)

    def table(self) -> pd.DataFrame:
        cols = ["round", "sender", "receiver", "kind", "fields", "floats"]
        return pd.DataFrame(self.records, columns=cols)

    def summary(self) -> pd.DataFrame:
        """Messages and floats sent per sender."""
        t = self.table()
        if t.empty:
            return pd.DataFrame(columns=["sender", "messages", "floats", "rounds"])
        g = t.groupby("sender")
        return pd.DataFrame(
            {"messages": g.size(), "floats": g["floats"].sum(), "rounds": g["round"].nunique()}
        ).reset_index()

    @property
    def n_messages(self) -> int:
        return len(self.records)

    @property
    def n_floats(self) -> int:
        return int(sum(r["floats"] for r in self.records))
