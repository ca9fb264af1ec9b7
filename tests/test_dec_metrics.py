"""Assignment metrics: Hungarian accuracy, cycle accuracy, internal scores (seed 000 §3)."""

from __future__ import annotations

import numpy as np
from sklearn import metrics as skm

from fedclust.metrics.assignment import (
    cycle_accuracy,
    external_scores,
    fraction_changed,
    hungarian_accuracy,
    internal_scores,
)


def test_hungarian_accuracy_permutation_and_known_value():
    y = np.array([0, 0, 1, 1, 2, 2])
    assert hungarian_accuracy((y + 1) % 3, y) == 1.0
    # best one-to-one map gets 4 of 6 (pred 0 ↔ 0, 1 ↔ 1, 2 ↔ 2 with two errors)
    assert np.isclose(hungarian_accuracy([0, 0, 1, 2, 2, 1], [0, 0, 1, 1, 2, 2]), 4 / 6)
    # more clusters than labels: the unmatched cluster counts as wrong
    assert np.isclose(hungarian_accuracy([0, 1, 2, 3], ["a", "a", "b", "b"]), 0.5)


def test_cycle_accuracy():
    pred = np.array([0, 1, 2, 2, 1])
    assert cycle_accuracy(pred, pred) == 1.0
    assert cycle_accuracy((pred + 2) % 3, pred) == 1.0  # relabelled reconstructions
    assert np.isclose(cycle_accuracy(np.array([0, 1, 2, 2, 2]), pred), 0.8)
    assert fraction_changed([0, 1, 1], [0, 1, 2]) == 1 / 3


def test_external_and_internal_scores_match_sklearn():
    gen = np.random.default_rng(0)
    x = gen.random((60, 5))
    z = gen.normal(size=(60, 2))
    lab = np.repeat([0, 1, 2], 20)
    s = internal_scores(x, z, lab)
    assert np.isclose(s["sil_data"], skm.silhouette_score(x, lab, metric="cosine"))
    assert np.isclose(s["sil_feat"], skm.silhouette_score(z, lab))
    assert np.isclose(s["ln_ch_feat"], np.log(skm.calinski_harabasz_score(z, lab)))
    assert internal_scores(x, z, np.zeros(60))["sil_data"] == 0.0
    e = external_scores(lab, lab[::-1])
    assert e["accuracy"] == 1.0 and np.isclose(e["ari"], 1.0)
