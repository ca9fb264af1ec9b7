"""Fan-out of the heart runs (issue 14): concatenate the per-unit run files of one split × mode.

A unit is one ``decentral_train`` job: all approaches of a split × mode (``fanout: mode``) or one
approach (``fanout: approach``). Every model copy draws from its own generators
(:func:`~.simulate.copy_seed`), so the units' files are those of the one-job run; merging puts them
back in the approach order of the configuration, with the per-center imputation rows (the same in
every unit of the mode) once, first.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from fedclust.errors import InputDataError

#: keys of a unit's run.json that describe the split × mode, not the approach: equal in all units
SHARED_KEYS = ("split", "mode", "clients", "n_train", "n_test", "optimizer_state", "imputation",
               "imputation_fills")  # fmt: skip
IMPUTATION = "imputation"


def merge_units(
    metrics: Sequence[pd.DataFrame],
    divergence: Sequence[pd.DataFrame],
    ledgers: Sequence[pd.DataFrame],
    runs: Sequence[dict],
    where: str = "decentral units",
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict]:
    """One split × mode's (metrics, divergence, ledger, run info) from its units, in unit order.

    Raises :class:`InputDataError` when units disagree on the split × mode facts (clients,
    sizes, imputation) or repeat an approach: they would not be parts of one run.
    """
    if not runs:
        raise InputDataError("no unit to merge", where=where)
    first = runs[0]
    seen: list[str] = []
    for r in runs:
        for k in SHARED_KEYS:
            if r.get(k) != first.get(k):
                raise InputDataError(
                    f"units disagree on {k!r}: {r.get(k)!r} vs {first.get(k)!r}", where=where
                )
        seen += [x["approach"] for x in r["runs"]]
    if len(set(seen)) != len(seen):
        raise InputDataError(f"an approach appears in two units: {seen}", where=where)
    led = [ledgers[0]] + [x[x["approach"] != IMPUTATION] for x in ledgers[1:]]
    info = {k: v for k, v in first.items() if k != "runs"}
    info["runs"] = [x for r in runs for x in r["runs"]]
    cat = lambda fs: pd.concat(list(fs), ignore_index=True)  # noqa: E731
    return cat(metrics), cat(divergence), cat(led), info
