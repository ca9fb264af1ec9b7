"""Federated gradient tree boosting (seed 003 ch. 10, issue 26): the tree arithmetic, the grid and
the protocols against ``xgboost.train`` (hist) on the same binned data, and the disclosure floor.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer

from fedclust.boosting import grid as GR
from fedclust.boosting import pooled as PL
from fedclust.boosting import server as S
from fedclust.boosting import tree as T
from fedclust.boosting.centre import Centre, without_floor
from fedclust.boosting.protocols import protocols
from fedclust.data.split import make_split
from fedclust.errors import DisclosureError
from fedclust.federation import Ledger, federate
from fedclust.federation.disclosure import DEFAULT_POLICY

GRID = {"method": "quantile", "max_bin": 16, "sketch_bins": 64, "range_sd": 4.0}
PARAMS = [
    T.Params(),
    T.Params(max_depth=5, eta=0.1, reg_lambda=3.0, gamma=0.4, min_child_weight=2.0),
]


@pytest.fixture(scope="module")
def bc():
    X, y = load_breast_cancer(return_X_y=True)
    return X, y.astype(int)


def _xgboost(codes, y, p, n_trees):
    bst, _ = PL.xgboost_fit(codes, y, p, n_trees, max_bin=256)
    return bst, PL.xgboost_trees(bst)


def _prob(m):
    return 1.0 / (1.0 + np.exp(-np.asarray(m, np.float64)))


def _assert_equal_to_xgboost(trees, codes, y, p):
    """Same trees (split features, cuts, children), leaves and probabilities to 1e-6."""
    bst, ref = _xgboost(codes, y, p, len(trees))
    a = PL.agreement(trees, ref, codes, p)
    assert a.identical, f"{a.same_trees} of {a.trees} trees identical"
    assert a.max_leaf_diff <= 1e-6
    ours = T.predict_margin(trees, codes, p.base_margin)
    assert np.max(np.abs(_prob(ours) - bst.predict(PL_matrix(codes)))) <= 1e-6
    return a


def PL_matrix(codes):
    import xgboost as xgb

    return xgb.DMatrix(np.asarray(codes, np.float32))


def _centre(cid, X, y, p, floor=1):
    """A centre whose own floor is ``floor`` (1: configured without one; 3: the default)."""
    own = (
        without_floor(DEFAULT_POLICY)
        if floor == 1
        else replace(DEFAULT_POLICY, nfilter_subset=floor)
    )
    return Centre(cid, X, y, p, floor, disclosure=own)


def _fed(X, y, centre, p, n_trees, fn, floor=1, **kw):
    P = protocols(floor)
    cs = [_centre(f"c{c}", X[centre == c], y[centre == c], p, floor) for c in np.unique(centre)]
    ledger = Ledger()
    model = federate(cs, lambda px: fn(px, P, p, n_trees, grid_cfg=GRID, **kw), ledger=ledger)
    return model, ledger


# --------------------------------------------------------------------------- tree arithmetic
def test_gradients_and_leaf_value_are_xgboost_logistic():
    g, h = T.gradients(np.zeros(3, np.float32), np.array([0, 1, 1]))
    np.testing.assert_array_equal(g, np.float32([0.5, -0.5, -0.5]))  # g = ŷ − y at ŷ = 0.5
    np.testing.assert_array_equal(h, np.float32([0.25, 0.25, 0.25]))
    p = T.Params(eta=0.5, reg_lambda=1.0)
    # w = −G/(H+λ) (D6.2 prints +G/(H+λ): the sign is an erratum), times η
    assert T.leaf_value(-1.0, 1.75, p) == np.float32(np.float32(1.0 / 2.75) * np.float32(0.5))
    assert T.leaf_value(2.0, 0.75, p) == 0.0  # H below min_child_weight: XGBoost's 0


@pytest.mark.parametrize("p", PARAMS)
def test_local_builder_grows_xgboosts_trees(bc, p):
    X, y = bc
    grid = GR.pooled_grid(X, **GRID)
    codes = GR.encode(X, grid)
    trees = T.LocalBuilder(codes, y, grid.n_bins, p).fit(12)
    a = _assert_equal_to_xgboost(trees, codes, y, p)
    assert a.max_margin_diff <= 1e-5  # float32 margins: a few ulp after 12 trees


def test_grid_federated_equals_pooled_and_every_bin_holds_rows(bc):
    X, y = bc
    centre = make_split(len(y), "equal", 5, 3)
    P = protocols(1)
    cs = [_centre(f"c{c}", X[centre == c], y[centre == c], T.Params()) for c in range(5)]
    grid = federate(cs, lambda px: S.build_grid(px, P, **GRID))
    ref = GR.pooled_grid(X, **GRID)
    assert all(np.array_equal(a, b) for a, b in zip(grid.cuts, ref.cuts, strict=True))
    codes = GR.encode(X, grid)
    assert max(grid.n_bins) <= GRID["max_bin"] and min(grid.n_bins) >= 2
    for j, nb in enumerate(grid.n_bins):  # no empty bin: XGBoost's candidates are the grid's
        assert np.array_equal(np.unique(codes[:, j]), np.arange(nb))
    # quantile cuts: bins of roughly equal mass on a continuous feature
    counts = np.bincount(codes[:, 0])
    assert counts.max() < 3 * len(y) / len(counts)
    uni = GR.pooled_grid(X, **{**GRID, "method": "uniform"})
    assert not np.array_equal(uni.cuts[0], ref.cuts[0])


def test_merge_runs_reaches_the_floor_and_keeps_single_bins_at_floor_one():
    n = np.array([[0, 2, 0, 1, 1, 5, 0, 1, 0], [4, 0, 0, 0, 0, 0, 0, 3, 0]])
    r = GR.merge_runs(n, 1)
    np.testing.assert_array_equal(r.start, r.end)  # every non-empty bin alone
    np.testing.assert_array_equal(r.end, np.nonzero(n)[1])
    np.testing.assert_array_equal(r.sums(n), n[n > 0])
    r = GR.merge_runs(n, 3)
    s = r.sums(n)
    assert (s >= 3).all() and s.sum() == n.sum()
    # [2,0,1] closes at 3 samples, [1,5] at 6; the remainder [0,1] joins the last run. The runs
    # tile the feature's bins (was: first to last non-empty bin, [1, 4] .. [3, 7], which placed
    # the smallest and largest value): from bin 0 to the last bin, no gap
    f0 = r.feature == 0
    np.testing.assert_array_equal(r.start[f0], [0, 4])
    np.testing.assert_array_equal(r.end[f0], [3, 8])
    np.testing.assert_array_equal(r.start[~f0], [0, 1])
    r8 = GR.merge_runs(n, 3, widths=[9, 8])  # a feature with fewer bins ends at its own last
    np.testing.assert_array_equal(r8.end[r8.feature == 1], [0, 7])
    np.testing.assert_array_equal(s[f0], [3, 7])
    # was [[0, 0], [7, 7]]: the last run now reaches the last bin
    np.testing.assert_array_equal(np.c_[r.start, r.end][~f0], [[0, 0], [1, 8]])
    # the server spreads a run by the weights (equal shares without them)
    out = GR.spread(np.zeros((1, 4)), [0, 0], [0, 1], [0, 3], [2.0, 6.0], np.array([[1, 1, 0, 2]]))
    np.testing.assert_allclose(out, [[2.0, 2.0, 0.0, 4.0]])


# ------------------------------------------------------------------------------- protocols
@pytest.mark.parametrize("k", [1, 3, 6])
def test_histogram_protocol_equals_xgboost_at_any_number_of_centres(bc, k):
    X, y = bc
    p = PARAMS[1] if k == 3 else PARAMS[0]
    centre = make_split(y, "dirichlet", k, 7, alpha=0.5) if k > 1 else np.zeros(len(y), int)
    model, ledger = _fed(X, y, centre, p, 8, S.boost, scheme="histogram")
    codes = GR.encode(X, model.grid)
    _assert_equal_to_xgboost(model.trees, codes, y, p)
    assert ledger.n_abstentions == 0
    sent = ledger.messages()
    assert {"histogram", "split_sums", "totals"} <= set(sent["kind"])


@pytest.mark.parametrize("scheme", ["vote_zero", "vote_union", "bagging", "cyclic"])
def test_one_centre_with_s_all_equals_xgboost(bc, scheme):
    X, y = bc
    p = PARAMS[1]
    one = np.zeros(len(y), int)
    if scheme.startswith("vote"):
        kw = {"scheme": "vote", "top": 0, "variant": scheme.split("_")[1]}
        model, _ = _fed(X, y, one, p, 8, S.boost, **kw)
    else:
        model, _ = _fed(X, y, one, p, 8, getattr(S, scheme))
    _assert_equal_to_xgboost(model.trees, GR.encode(X, model.grid), y, p)


def test_vote_root_split_is_argmax_of_sum_np_times_local_gain(bc):
    """D6.2 §10.2: argmax over the proposals of Σ_p N_p·L_{s,p}, computed here from each centre's
    own histogram; 'zero' scores unreported candidates 0, 'union' asks every centre."""
    X, y = bc
    p = T.Params()
    centre = make_split(y, "dirichlet", 4, 11, alpha=0.3)
    grid = GR.pooled_grid(X, **GRID)
    codes = GR.encode(X, grid)
    g, h = T.gradients(np.zeros(len(y), np.float32), y)
    local = []
    for c in range(4):
        m = centre == c
        hist = T.histogram(codes[m], g[m], h[m], grid.width)
        G, H, N = (float(hist[i, 0].sum()) for i in range(3))
        local.append((N, T.candidates(hist, grid.n_bins, G, H, N, p)))
    for top, variant in ((2, "zero"), (2, "union"), (0, "zero")):
        score = np.zeros(local[0][1].loss.shape)
        proposed = np.zeros(score.shape, bool)
        for N, c in local:
            loss = np.where(c.valid & (c.loss > 0), c.loss, -np.inf).ravel()
            order = np.argsort(-loss, kind="stable")
            order = order[np.isfinite(loss[order])][: top or None]
            proposed.flat[order] = True
            if variant == "zero":
                score.flat[order] += N * 0.5 * c.loss.ravel()[order]
        if variant == "union":
            for N, c in local:
                ok = proposed & (c.NL >= 1) & (c.NR >= 1)
                score[ok] += N * 0.5 * c.loss[ok]
        want = np.unravel_index(np.argmax(np.where(proposed, score, -np.inf)), score.shape)
        model, _ = _fed(X, y, centre, p, 1, S.boost, scheme="vote", top=top, variant=variant)
        t = model.trees[0]
        assert (t.feature[0], t.cut[0]) == (int(want[0]), int(want[1]) + 1), (top, variant)
    # the vote is a heuristic: over several centres it does not grow XGBoost's trees
    model, _ = _fed(X, y, centre, p, 4, S.boost, scheme="vote", top=0, variant="zero")
    _, ref = _xgboost(GR.encode(X, model.grid), y, p, 4)
    assert PL.agreement(model.trees, ref, codes, p).same_trees < 4


def test_floats_sent_grow_with_s(bc):
    X, y = bc
    centre = make_split(len(y), "equal", 3, 2)
    floats = []
    for top in (1, 5, 0):
        _, ledger = _fed(X, y, centre, T.Params(), 3, S.boost, scheme="vote", top=top)
        t = ledger.messages()
        floats.append(t.loc[(t["sender"] != "server") & (t["round"] >= 1), "floats"].sum())
    _, ledger = _fed(X, y, centre, T.Params(), 3, S.boost, scheme="histogram")
    t = ledger.messages()
    floats.append(t.loc[(t["sender"] != "server") & (t["round"] >= 1), "floats"].sum())
    assert floats == sorted(floats) and floats[0] < floats[-1] / 20


# ------------------------------------------------------------------------------ disclosure
class Curious:
    """A server that keeps every centre reply (what a curious aggregator sees)."""

    def __init__(self, proxies):
        self.proxies, self.seen = proxies, []

    def wrap(self):
        outer = self

        class Proxy:
            def __init__(self, p):
                self.p = p

            def call(self, method, msg, *a, **kw):
                out = self.p.call(method, msg, *a, **kw)
                if out is not None:
                    outer.seen.append((method, out))
                return out

        return [Proxy(p) for p in self.proxies]


def _flat(v):
    if isinstance(v, list | tuple):
        return np.concatenate([_flat(x) for x in v]) if v else np.zeros(0)
    return np.ravel(v)


def _single_patient_sums(seen):
    """(g of one patient) read off every reply entry that sums a single sample."""
    found = []
    for method, r in seen:
        if method == "split_sums":
            found += [g for n, g in zip(r["n"], np.ravel(r["g"]), strict=True) if n == 1]
        if method == "histograms":
            for n, g in zip(r["bin_n"], r["bin_g"], strict=True):
                found += list(np.ravel(g)[np.asarray(n) == 1])
    return found


@pytest.mark.parametrize("floor", [1, 3])
def test_floor_keeps_a_curious_server_from_reading_one_patients_label(floor):
    """Round 1 (ŷ = 0.5): g = 0.5 − y, so Σg over a leaf of one patient is that patient's label.
    A tiny centre with an outlier: without a floor the server reads labels; with floor 3 no
    aggregate it receives covers fewer than 3 patients."""
    gen = np.random.default_rng(0)
    X = gen.normal(size=(60, 3))
    y = (X[:, 0] + 0.3 * gen.normal(size=60) > 0).astype(int)
    X[0, 1], y[0] = 9.0, 1  # one extreme patient at centre 0
    centre = np.r_[np.zeros(12, int), np.ones(48, int)]
    p = T.Params(max_depth=3, min_child_weight=0.0)
    P = protocols(floor)
    cs = [_centre(f"c{c}", X[centre == c], y[centre == c], p, floor) for c in (0, 1)]
    spies = []

    def server(px):
        spy = Curious(px)
        spies.append(spy)
        return S.boost(spy.wrap(), P, p, 1, scheme="histogram", grid_cfg=GRID)

    ledger = Ledger()
    federate(cs, server, ledger=ledger)
    leaked = _single_patient_sums(spies[0].seen)
    if floor == 1:
        assert leaked and all(g in (0.5, -0.5) for g in leaked)  # 0.5 − y: the label itself
    else:
        assert not leaked
        for method, r in spies[0].seen:
            for key in ("n", "bin_n", "n_left", "n_right", "count"):
                if key in r:
                    vals = _flat(r[key])
                    assert vals.size == 0 or vals.min() >= 3, (method, key)


def test_ledger_rejects_a_centre_that_sends_below_the_floor():
    P = protocols(3)
    msg = {"nodes": np.array([0]), "side": np.array([0]), "n": np.array([1]),
           "g": np.array([-0.5]), "h": np.array([0.25])}  # fmt: skip
    with pytest.raises(DisclosureError, match="min_samples=3"):
        Ledger().send("c0", "server", msg, 1, "split_sums", protocol=P.split_sums)
    Ledger().send("c0", "server", {**msg, "n": np.array([3])}, 1, "x", protocol=P.split_sums)


def test_a_centre_sends_both_children_or_neither():
    """Child sums of one side only would give the other (the node total minus it)."""
    X = np.arange(10, dtype=float)[:, None]
    y = np.array([0, 1] * 5)
    c = _centre("c0", X, y, T.Params(), floor=3)
    c.set_grid(None, {"cuts": [np.array([2.0, 5.0])]})
    c.totals(None, {})
    empty = {"feature": [-1], "cut": [0], "left": [-1], "right": [-1], "nodes": [0]}
    req = {**empty, "split_feature": [0], "split_cut": [1]}  # 2 rows left: below the floor
    assert c.split_sums(None, req).__class__.__name__ == "Abstain"
    out = c.split_sums(None, {**req, "split_cut": [2]})  # 5 | 5
    assert list(out["n"]) == [5, 5] and list(out["side"]) == [0, 1]


def test_flower_simulation_carries_the_same_messages(bc):
    """The protocols through Flower's Simulation Runtime: same trees, same ledger rows."""
    pytest.importorskip("flwr")
    from fedclust.transports import get

    X, y = bc
    p = T.Params(max_depth=2)
    centre = np.arange(len(y)) % 2
    grid = {**GRID, "max_bin": 8, "sketch_bins": 16}
    out = {}
    for engine in ("inprocess", "flower-simulation"):
        P = protocols(3)
        cs = [_centre(f"c{c}", X[centre == c], y[centre == c], p, 3) for c in (0, 1)]
        ledger = Ledger()

        def server(px, P=P):
            vote = S.boost(px, P, p, 1, scheme="vote", top=2, variant="union", grid_cfg=grid)
            bag = S.bagging(px, P, p, 1, grid_cfg=grid)
            return vote.trees + bag.trees

        out[engine] = federate(cs, server, ledger=ledger, transport=get(engine)), ledger.table()
    (a, la), (b, lb) = out["inprocess"], out["flower-simulation"]
    assert len(a) == 3 and all(PL.same_structure(s, t) and s.value == t.value
                               for s, t in zip(a, b, strict=True))  # fmt: skip
    pd.testing.assert_frame_equal(la, lb)


def test_no_child_sums_that_split_a_merged_run_below_the_floor():
    """Histogram runs at floor 3: [b0: 3], [b1: 1, b2: 2], [b3: 4]. The cut before b2 leaves 4
    and 6 rows per side, but its left sum minus the run [b0] would be b1's one patient."""
    X = np.repeat([0.0, 1.0, 2.0, 3.0], [3, 1, 2, 4])[:, None]
    c = _centre("c0", X, np.array([0, 1] * 5), T.Params(), floor=3)
    c.set_grid(None, {"cuts": [np.array([0.5, 1.5, 2.5])]})
    c.totals(None, {})
    root = {"feature": [-1], "cut": [0], "left": [-1], "right": [-1], "nodes": [0]}
    h = c.histograms(None, root)
    assert list(h["bin_start"][0]) == [0, 1, 3] and list(h["bin_end"][0]) == [0, 2, 3]
    assert list(h["bin_n"][0]) == [3, 3, 4]
    split = {**root, "split_feature": [0]}
    assert c.split_sums(None, {**split, "split_cut": [2]}).__class__.__name__ == "Abstain"
    assert list(c.split_sums(None, {**split, "split_cut": [1]})["n"]) == [3, 7]
    # without a histogram sent (the vote) the same cut is fine: nothing to subtract from
    c.totals(None, {})
    assert list(c.split_sums(None, {**split, "split_cut": [2]})["n"]) == [4, 6]


def test_the_floor_is_the_centres_own():
    """max(boosting.min_samples, the centre's disclosure nfilter_subset), from its own settings
    or its entry of the configured ``disclosure`` section; the guard refuses below it."""
    from fedclust.federation.disclosure import configure

    X, y = np.zeros((10, 1)), np.array([0, 1] * 5)
    assert Centre("a", X, y, T.Params(), min_samples=1).floor == 3  # DataSHIELD's default
    assert Centre("a", X, y, T.Params(), min_samples=4).floor == 4
    try:
        configure({"default": {"nfilter_subset": 5}, "centres": {"b": {"nfilter_subset": 2}}})
        assert Centre("a", X, y, T.Params(), min_samples=1).floor == 5
        assert Centre("b", X, y, T.Params(), min_samples=1).floor == 2
    finally:
        configure(None)
    c = Centre("a", X, y, T.Params(), 1, disclosure=without_floor(DEFAULT_POLICY))
    assert c.floor == 1 and c.protocols["split_sums"].min_samples == 1
