"""Attack suite (issue 22), federated HAC: genewise at a floor of 2, simultaneous centroids of
one sample, gradual sharing differenced across runs, and the one-row-per-sample protocols that
run only with the centres' opt-in."""

from __future__ import annotations

import numpy as np
import pytest

from fedclust.config import defaults_at
from fedclust.errors import ConfigError
from fedclust.privacy import suite
from fedclust.privacy.release_log import ReleaseLog, from_json, to_json


def test_genewise_two_sample_centre_recovered_only_below_the_floor():
    out = suite.genewise()
    assert out.recovered_unprotected == 2  # n_min = 2: both profiles
    assert out.recovered == 0 and out.abstentions == 2 and out.numbers_in_reasons == 0


def test_simultaneous_single_sample_centroids_only_below_the_floor():
    out = suite.simultaneous()
    assert out.recovered_unprotected == out.records == 10
    assert out.recovered == 0 and "exact distances" in out.by_design


def test_gradual_differencing_across_runs_stopped_by_the_release_log():
    out = suite.gradual()
    assert out.recovered_unprotected > 0  # one centre's samples isolated by 9 runs' sums
    assert out.recovered == 0 and "refused" in out.by_design


def test_per_sample_protocols_run_only_with_the_opt_in():
    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.hac.federated import perturbation_clustering, projection_clustering
    from fedclust.hac.gradual import gradual_sharing
    from fedclust.hac.simultaneous import simultaneous_run

    x = np.random.default_rng(0).normal(size=(30, 4))
    blocks, c = [x[:15], x[15:]], np.repeat([0, 1], 15)
    none = DisclosurePolicy()
    for run in (
        lambda: projection_clustering(blocks, "single", "euclidean", 3, 1, policy=none),
        lambda: perturbation_clustering(blocks, "single", 1, policy=none),
        lambda: gradual_sharing(x, c, 3, "average", policy=none),
        lambda: simultaneous_run(blocks, 3, "average", policy=none),
    ):
        with pytest.raises(ConfigError, match="opted in"):
            run()
    for out in suite.sketches():  # with the opt-in: disclosive by design, said so
        assert out.recovered == out.records and "opt-in" in out.by_design


def test_n_min_below_the_floor_is_refused():
    from fedclust.hac.gradual import gradual_sharing

    x = np.random.default_rng(0).normal(size=(30, 4))
    with pytest.raises(ConfigError, match="below the centres' disclosure floor"):
        gradual_sharing(x, np.repeat([0, 1], 15), 2, "average", policy=suite.OPTED_IN)


def test_release_log_isolation_rules_and_files(tmp_path):
    log = ReleaseLog(6, 3)
    assert not log.allows([0, 1])  # below the floor
    assert log.release([0, 1, 2, 3]) and log.release([4, 5, 0])
    assert not log.allows([1, 2, 3])  # {0,1,2,3} − {1,2,3} = sample 0
    assert not log.allows([0, 1, 2])  # differences leave {3}
    assert not log.allows(range(6))  # {0..3} + {0,4,5} − all = sample 0
    assert log.allows([3, 2, 1, 0])  # in the span already: nothing new
    assert log.refused == 0 and log.rank == 2
    assert not log.release([1, 2, 3]) and log.refused == 1
    # nested sets differing by fewer than the floor are refused (support-2 check)
    two = ReleaseLog(8, 3)
    assert two.release([0, 1, 2, 3, 4]) and not two.allows([0, 1, 2])
    assert not two.release_all([[5, 6, 7], [0, 1, 2, 3, 4, 5]]) and two.rank == 1
    to_json({"sf": {0: log}}, tmp_path / "log.json")
    back = from_json(tmp_path / "log.json")["sf"][0]
    assert back.sets == log.sets and back.rank == log.rank and back.refused == 1
    assert from_json(tmp_path / "missing.json") == {}


def test_release_chain_across_jobs():
    from fedclust.hac import workflow as wf

    cfg = {"linkages": ["single", "average"], "k_max": 5,
           "gradual": {"panels": [["sf", "euclidean"], ["vst", "euclidean"]]},
           "simultaneous": {"preprocessing": "sf"},
           "projection": {"panels": [], "seeds": 1, "estimator": "geometric",
                          "compare_median": False}}  # fmt: skip
    cfg = defaults_at(cfg, ["hac"])  # as the config loader fills it (hac.fanout ...)
    assert wf.previous_logs(cfg, "gradual", "all", "X") == []
    assert wf.previous_logs(cfg, "simultaneous", "all", "X") == [wf.log_path("X", "gradual", "all")]
    per = {**cfg, "fanout": {**cfg["fanout"], "per_unit": True}}
    chain = wf.release_chain(per)
    assert chain[0] == ("gradual", "sf-euclidean-single")
    # a vst unit continues the vst chain; the first simultaneous unit the last sf gradual one
    assert wf.previous_logs(per, "gradual", "vst-euclidean-average", "X") == [
        wf.log_path("X", "gradual", "vst-euclidean-single")
    ]
    assert wf.previous_logs(per, "simultaneous", "single", "X") == [
        wf.log_path("X", "gradual", "sf-euclidean-average")
    ]


def test_simultaneous_leaf_relabelling_changes_no_number():
    """The per-run random leaf ids (runs cannot be aligned sample by sample) are mapped back by
    the centres: the tree is the same for any relabelling seed."""
    from fedclust.hac.simultaneous import simultaneous_run

    x = np.random.default_rng(2).normal(size=(45, 4))
    blocks = [x[:15], x[15:32], x[32:]]
    z1, _ = simultaneous_run(blocks, 3, "average", policy=suite.OPTED_IN, seed=1)
    z2, _ = simultaneous_run(blocks, 3, "average", policy=suite.OPTED_IN, seed=2)
    np.testing.assert_array_equal(z1, z2)
