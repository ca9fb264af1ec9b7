"""The privacy–utility stage (issue 24): federated DP-Lloyd equals the pooled DP-Lloyd update
with the same noise draw (and scikit-learn's Lloyd without noise), the federated KM count tables
give lifelines' pooled curve, the centres' cluster releases are simultaneous sharing's
centroids, the thresholds and the ε budget of a run, the workflow's inputs and the headline."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedclust.errors import ConfigError
from fedclust.federation import Ledger, PrivacySettings, federate
from fedclust.federation import privacy as PV
from fedclust.hac.simultaneous import center_simultaneous
from fedclust.privacy_utility import experiment as E
from fedclust.privacy_utility import pooled as R
from fedclust.privacy_utility import records as RC
from fedclust.privacy_utility import report as RP
from fedclust.privacy_utility import server as S
from fedclust.privacy_utility import workflow as W
from fedclust.privacy_utility.centre import Centre
from fedclust.report import headlines

SECURE = PrivacySettings(secure_aggregation=True)


def _blobs(seed=0, n=240, d=4, k=3):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (k, d))
    lab = rng.integers(0, k, n)
    x = centers[lab] + rng.normal(0, 0.5, (n, d))
    return x, lab, np.array([f"c{i % 4}" for i in range(n)])


def _fed(centres, server):
    with PV.using(SECURE):
        return federate(centres, server, ledger=Ledger())


def test_federated_dp_lloyd_equals_pooled_with_the_same_noise():
    x, _, centre = _blobs()
    init, bound = x[[0, 1, 2]], 6.0
    noise = S.lloyd_noise(3, x.shape[1], 4, 1.3, bound, np.random.default_rng(5))
    cs = [Centre(c, x[centre == c], bound=bound) for c in sorted(set(centre))]
    fed = _fed(cs, lambda ps: S.dp_lloyd(ps, init, noise, bound))
    pooled = R.dp_lloyd_pooled(x, init, noise, bound)
    np.testing.assert_allclose(fed, pooled, atol=1e-8)
    assert np.abs(fed - R.dp_lloyd_pooled(x, init, noise[:3], bound)).max() > 1e-3  # noise acts


def test_noise_free_dp_lloyd_is_scikit_learns_lloyd():
    from sklearn.cluster import KMeans

    x, _, centre = _blobs(1)
    init = x[[0, 5, 9]]
    zero = [(np.zeros(3), np.zeros((3, x.shape[1])))] * 3
    cs = [Centre(c, x[centre == c], bound=1e6) for c in sorted(set(centre))]
    fed = _fed(cs, lambda ps: S.dp_lloyd(ps, init, zero, 1e6))
    km = KMeans(3, init=init, n_init=1, max_iter=3, tol=0, algorithm="lloyd").fit(x)
    np.testing.assert_allclose(fed, km.cluster_centers_, atol=1e-8)


def test_federated_km_tables_give_lifelines_pooled_curve():
    """A grid whose edges are every follow-up time: the summed interval tables give
    lifelines' pooled Kaplan–Meier estimate exactly (no noise)."""
    rng = np.random.default_rng(3)
    t = np.round(rng.exponential(3.0, 300), 2)
    e = rng.random(300) < 0.7
    centre = rng.integers(0, 5, 300)
    edges = np.unique(t)
    cs = [Centre(f"c{c}", t=t[centre == c], e=e[centre == c]) for c in range(5)]
    surv = _fed(cs, lambda ps: S.dp_km(ps, edges, 0.0, np.random.default_rng(0)))
    np.testing.assert_allclose(surv, R.km_pooled(t, e, edges), atol=1e-12)


def test_cluster_release_without_noise_is_simultaneous_sharings_message():
    x, _, _ = _blobs(2, n=60)
    c = Centre("c0", x, bound=1e6, raw_bound=1e6)
    with PV.using(SECURE):
        msg = c.cluster_release([np.zeros(x.shape[1])], {"n_min": 5})
    ref = center_simultaneous(x, "ward", "euclidean", 5)
    got = msg["sums"] / msg["counts"][0][:, None]
    order = lambda a: a[np.lexsort(a.T)]  # noqa: E731
    np.testing.assert_allclose(order(got), order(ref["centroids"]), atol=1e-10)
    assert sorted(msg["counts"][0]) == sorted(ref["sizes"])


def _cfg(**kw):
    cfg = {
        "epsilons": [1.0, None], "seeds": 1, "delta": 1e-5, "secure_aggregation": True,
        "within": 0.05,
        "dp_lloyd": {"k": 3, "iterations": 3, "bound": 8.0},
        "hac": {"k": 3, "n_min": 5, "linkage": "ward", "bound": 6.0, "raw_bound": 12.0},
        "km": {"step": 0.5, "max": 10.0, "endpoint": "OS"},
        "known_io": {"genes": 4, "fraction": 0.3, "bound": 12.0},
    }  # fmt: skip
    cfg.update(kw)
    return cfg


def test_numeric_methods_run_and_spend_their_budget():
    x, lab, centre = _blobs(4)
    rng = np.random.default_rng(4)
    t, e = rng.exponential(3.0, len(x)), (rng.random(len(x)) < 0.6).astype(float)
    runs = {
        "dp_lloyd": E.run_dp_lloyd(x, centre, lab.astype(str), _cfg(), 1),
        "hac": E.run_hac(x, centre, _cfg(), 1),
        "km": E.run_km(t, e, centre, _cfg(), 1),
        "known_io": E.run_known_io(x, _cfg(), 1),
    }
    for method, (curve, budget) in runs.items():
        assert list(curve.columns) == RC.CURVE_COLUMNS
        assert set(curve["epsilon"]) >= {1.0, math.inf}
        finite = budget[np.isfinite(budget["epsilon"])]
        assert len(finite) and np.allclose(finite["epsilon_spent"], 1.0, rtol=1e-3), method
    lloyd = runs["dp_lloyd"][0]
    nonpriv = lloyd[(lloyd["arm"] == "federated") & np.isinf(lloyd["epsilon"])]
    assert nonpriv[nonpriv["metric"] == "fmi"]["value"].iloc[0] > 0.9  # blobs are easy
    attack = runs["known_io"][0]
    free = attack[np.isinf(attack["epsilon"]) & (attack["metric"] == "median_rel_error")]
    assert free["value"].iloc[0] < 1e-8  # without noise the attack reconstructs every row


def test_thresholds_pick_the_smallest_epsilon_from_which_on_it_holds():
    rows = []
    for eps, v in [(0.5, 0.5), (1.0, 0.97), (2.0, 0.93), (4.0, 0.96), (8.0, 0.99), (math.inf, 1)]:
        rows.append({"method": "heart", "arm": "federated", "metric": "auc", "epsilon": eps,
                     "mean": v, "std": 0.0, "seeds": 1})  # fmt: skip
    rows.append({"method": "km", "arm": "federated", "metric": "sup_distance", "epsilon": 1.0,
                 "mean": 0.06, "std": 0.0, "seeds": 1})  # fmt: skip
    rows.append({"method": "km", "arm": "federated", "metric": "sup_distance",
                 "epsilon": math.inf, "mean": 0.02, "std": 0.0, "seeds": 1})  # fmt: skip
    budget = pd.DataFrame({"method": ["heart"], "epsilon": [4.0], "epsilon_spent": [3.99]})
    thr = RP.thresholds(pd.DataFrame(rows), budget).set_index("method")
    assert thr.loc["heart", "epsilon_within"] == 4.0  # 2.0 breaks the run of ≥ 0.95
    assert thr.loc["heart", "epsilon_spent"] == 3.99
    assert thr.loc["heart", "at_epsilon_max"] == 0.99
    assert thr.loc["km", "epsilon_within"] == 1.0  # 0.06 ≤ 0.02 + 0.05
    h = headlines.build(RP.HEADLINE, [{"path": _tsv(thr.reset_index()), "caption": "t"}])
    notes = {r["quantity"]: r["note"] for r in h["rows"]}
    assert notes["heart (federated): auc at ε = 8"] == "within 5 % from ε = 4"
    assert len(notes) == 2


def _tsv(df):
    import tempfile

    path = tempfile.NamedTemporaryFile(suffix="thresholds.tsv", delete=False).name
    df.to_csv(path, sep="\t", index=False)
    return path


def test_workflow_inputs_and_unknown_methods():
    cfg = {"methods": ["dp_lloyd", "hac"], "hac": {"cohort": "SIMB", "preprocessing": "sf"}}
    assert W.methods(cfg) == ["dp_lloyd", "hac"]
    assert W.inputs("hac", cfg)["features"] == "results/data/rnaseq/SIMB/sf.parquet"
    assert W.inputs("dp_lloyd", cfg)["split"] == "results/data/mds/splits/uniform10.tsv"
    assert set(W.inputs("heart", cfg)) == {"features", "obs"}
    with pytest.raises(ConfigError, match="unknown privacy"):
        W.methods({"methods": ["lasso"]})
    assert set(W.METHODS) == set(E.METHODS) == set(E.RUNNERS)


def test_fanout_all_runs_every_method_in_one_job_with_the_same_files():
    from types import SimpleNamespace

    cfg = {"methods": ["km", "heart"], "fanout": "all"}
    wc = SimpleNamespace()
    assert W.job_methods(cfg, wc) == ["km", "heart"]
    ins = W.job_inputs(cfg, wc)
    assert ins["km_split"] == "results/data/mds/splits/uniform10.tsv"
    assert ins["heart_features"] == "results/data/heart/features.parquet"
    grouped = W.unit_outputs(W.job_methods(cfg, wc))
    one = {f: p.format(method="km") for f, p in W.unit_outputs(None).items()}
    # the grouped job writes exactly the files of the per-method jobs (the report's inputs)
    assert {grouped["curve_km"], grouped["budget_km"]} == set(one.values())
    assert W.job_methods({**cfg, "fanout": "method"}, SimpleNamespace(method="km")) == ["km"]
    with pytest.raises(ConfigError, match="fanout"):
        W.fanout({"fanout": "unit"})
