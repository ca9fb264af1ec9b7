"""KM pipeline (lifelines): censoring coding, medians, multivariate log-rank (seed 000 §3.9)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from lifelines.datasets import load_waltons
from scipy.stats import chi2

from fedclust.errors import InputDataError
from fedclust.metrics.survival import km_by_group, survival_summary


def test_censoring_is_coded_event_one():
    # S(1)=4/5, t=2 censored, S(3)=0.8*2/3, S(4)=S(3)/2=0.267 → median 4.
    # (Treating the censored t=2 as an event would give S(3)=0.4 → median 3.)
    t, e, g = [1, 2, 3, 4, 5], [1, 0, 1, 1, 0], ["a"] * 5
    fit = km_by_group(t, e, g)["a"]
    assert fit.median_survival_time_ == 4
    assert np.isclose(fit.survival_function_at_times(3.5).iloc[0], 0.8 * 2 / 3)
    table, p = survival_summary(t, e, g)
    assert table.loc[0, "events"] == 3 and np.isnan(p)


def test_waltons_medians_and_logrank():
    d = load_waltons()
    table, p = survival_summary(d["T"], d["E"], d["group"])
    med = dict(zip(table.group, table["median"], strict=False))
    assert med == {"control": 58.0, "miR-137": 26.0}
    assert dict(zip(table.group, table.n, strict=False)) == {"control": 129, "miR-137": 34}
    # lifelines documents a log-rank statistic of 122.25 for this data set (1 d.o.f.)
    assert np.isclose(p, chi2.sf(122.25, 1), rtol=0.01)


def test_three_groups_and_unreached_median():
    gen = np.random.default_rng(0)
    t = np.concatenate([gen.exponential(1, 60), gen.exponential(3, 60), gen.exponential(9, 60)])
    e = np.ones(180, int)
    e[120:] = 0  # third group fully censored: median not reached
    g = np.repeat(["x", "y", "z"], 60)
    table, p = survival_summary(t, e, g)
    assert np.isinf(table.set_index("group").loc["z", "median"])
    assert p < 1e-6


def test_bad_event_flags_fail_clearly():
    with pytest.raises(InputDataError, match="event flags must be 0"):
        survival_summary([1, 2], [1, 2], ["a", "b"])
    with pytest.raises(InputDataError, match="no sample has a finite"):
        survival_summary([np.nan], [1], ["a"])


def test_missing_times_are_dropped_not_counted():
    df = pd.DataFrame({"t": [1.0, np.nan, 3.0], "e": [1, 1, 0], "g": ["a", "a", "a"]})
    table, _ = survival_summary(df.t, df.e, df.g)
    assert table.loc[0, "n"] == 2
