"""Reliability probes of the per-center heart imputation (issue 30 C, items 1 and 10 on the newer
code): an observed cell that is NaN made the class fill NaN without a word; a label or center
that is missing, a mask that is not boolean and tables of different lengths gave bare
IndexErrors or a silent extra center. Each is an InputDataError naming what and where."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.decentral.imputation import ImputeCentre, impute_per_center
from fedclust.errors import InputDataError

N = 60


@pytest.fixture
def table():
    rng = np.random.default_rng(0)
    f = pd.DataFrame({"Cholesterol": rng.normal(200, 30, N), "RestingBP": rng.normal(130, 10, N)})
    miss = pd.DataFrame({"Cholesterol": rng.random(N) < 0.2, "RestingBP": rng.random(N) < 0.1})
    return f, miss, rng.integers(0, 2, N), np.repeat(["a", "b", "c"], N // 3)


def test_clean_table_is_filled(table):
    f, miss, y, g = table
    out, info = impute_per_center(f, miss, y, g)
    assert not out.isna().any().any() and len(info)


def test_nan_in_an_observed_cell(table):
    """Before: the class median became NaN and every missing cell of the class got it."""
    f, miss, y, g = table
    f = f.copy()
    i = int(np.flatnonzero(~miss.Cholesterol.to_numpy())[0])
    f.iloc[i, 0] = np.nan
    with pytest.raises(InputDataError, match="Cholesterol"):
        impute_per_center(f, miss, y, g)
    with pytest.raises(InputDataError, match="Cholesterol"):
        ImputeCentre("a", f.iloc[:20], miss.iloc[:20], y[:20])


def test_missing_label_or_center(table):
    f, miss, y, g = table
    y2 = y.astype(float)
    y2[5] = np.nan
    with pytest.raises(InputDataError, match="label"):
        impute_per_center(f, miss, y2, g)
    g2 = g.astype(object)
    g2[0] = None
    with pytest.raises(InputDataError, match="center"):
        impute_per_center(f, miss, y, g2)


def test_mask_not_boolean(table):
    f, miss, y, g = table
    m = miss.astype(float)
    m.iloc[0, 0] = np.nan
    with pytest.raises(InputDataError, match="mask"):
        impute_per_center(f, m, y, g)


@pytest.mark.parametrize("cut", ["missing", "y", "groups"])
def test_lengths_differ(table, cut):
    f, miss, y, g = table
    args = {"missing": miss, "y": y, "groups": g}
    args[cut] = args[cut][:-5]
    with pytest.raises(InputDataError, match="rows"):
        impute_per_center(f, args["missing"], args["y"], args["groups"])


def test_a_rare_class_at_a_centre_that_observed_nothing_stops_naming_it(table):
    """The centre's floor keeps a class with fewer rows than it out of ``heart_impute_needs``
    (tests/test_curious_server.py); a centre that observed no value of the column at all has
    nothing of its own to fill such a class with: it stops, naming centre, column, class, fix
    (before, it named the class to the server)."""
    f, miss, y, g = table
    miss, y = miss.copy(), y.copy()
    c = g == "c"
    miss.loc[c, "Cholesterol"] = True  # centre c never recorded cholesterol
    y[c] = 0
    y[np.flatnonzero(c)[:3]] = 1  # three class-1 patients at c
    with pytest.raises(InputDataError, match=r"(?s)class 1.*floor 5.*center c, column "
                       r"Cholesterol, class 1.*impute_min_samples"):  # fmt: skip
        impute_per_center(f, miss, y, g, min_samples=5)
    out, info = impute_per_center(f, miss, y, g, min_samples=3)  # floor 3: the server is told
    assert not out.isna().any().any()
    assert ((info.center == "c") & (info["class"] == 1) & (info.source == "federated")).any()
