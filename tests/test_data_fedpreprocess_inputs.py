"""Reliability probes of the data stage's federated heart imputation after `prep_labels` (issue 30
C, items 1 and 10 on the newer code): a class no centre may report (below every centre's floor)
left its missing cells NaN without a word; a target of 0.5 was truncated to class 0; a missing
or non-numeric target and a sample without a centre gave bare errors or a silent extra centre.
Each is an InputDataError naming what, where and the fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.data.fedpreprocess.tables import heart_impute_federated
from fedclust.errors import InputDataError

N = 90


@pytest.fixture
def heart():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"Cholesterol": rng.normal(200, 30, N).round(),
                       "RestingBP": rng.normal(130, 10, N).round(),
                       "HeartDisease": rng.integers(0, 2, N)})  # fmt: skip
    df.loc[rng.random(N) < 0.15, "Cholesterol"] = 0
    return df, pd.Series(np.repeat(["a", "b", "c"], N // 3), index=df.index)


def test_every_missing_cell_filled(heart):
    df, hosp = heart
    out, info = heart_impute_federated(df, hosp, "HeartDisease")
    assert not out.isna().any().any() and info["Cholesterol"]


def test_class_no_centre_reports_is_not_left_nan(heart):
    """Class 2 has two rows at one hospital (below its floor 3): its label set withholds it,
    so no fill exists; before, row 0's Cholesterol came back NaN."""
    df, hosp = heart
    df = df.copy()
    df.loc[[0, 1], "HeartDisease"] = 2
    df.loc[0, "Cholesterol"] = 0
    with pytest.raises(InputDataError, match="class 2") as err:
        heart_impute_federated(df, hosp, "HeartDisease")
    assert "Cholesterol" in str(err.value) and "min_samples" in str(err.value)


@pytest.mark.parametrize("bad", [np.nan, 0.5, "abc"], ids=["nan", "half", "str"])
def test_target_must_be_whole_class_labels(heart, bad):
    df, hosp = heart
    df = df.copy().astype({"HeartDisease": object})
    df.loc[3, "HeartDisease"] = bad
    with pytest.raises(InputDataError, match="HeartDisease"):
        heart_impute_federated(df, hosp, "HeartDisease")


def test_target_column_missing(heart):
    df, hosp = heart
    with pytest.raises(InputDataError, match="Target"):
        heart_impute_federated(df, hosp, "Target")


def test_sample_without_a_centre(heart):
    df, hosp = heart
    hosp = hosp.astype(object)
    hosp.iloc[0] = None
    with pytest.raises(InputDataError, match="no centre"):
        heart_impute_federated(df, hosp, "HeartDisease")
