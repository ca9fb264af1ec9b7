"""The honest-but-curious server on the boosting messages the floor test of ``test_boosting.py``
does not attack (``boosting_moments``, ``_sketch``, ``_vote``, ``_union``, ``_local_trees``;
the map: ``tests/test_curious_coverage.py``). Each test runs the stage's real centres through
``federate`` with a :class:`RecordingLedger` and attacks only what the ledger kept: with the
defence off (the centres' floor 1) it recovers a patient, with the shipped floor (3) it does not.

Round 1 of tree 1 starts at ŷ = 0.5: every patient has g = 0.5 − y and h = 0.25, so a sum of
gradients over m patients is 0.5·m − (positives among them)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fedclust.boosting import server as S
from fedclust.boosting import tree as T
from fedclust.boosting.centre import Centre, without_floor
from fedclust.boosting.protocols import protocols
from fedclust.federation import federate
from fedclust.federation.disclosure import DEFAULT_POLICY
from fedclust.privacy.recorder import RecordingLedger

GRID = {"method": "quantile", "max_bin": 16, "sketch_bins": 64, "range_sd": 4.0}
# min_child_weight 0: the floor is the only defence (with 1, h = 0.25 makes H_L ≥ 1 a floor of 4)
PARAMS = T.Params(max_depth=2, min_child_weight=0.0)


def _data(sizes, seed=0):
    g = np.random.default_rng(seed)
    n = sum(sizes)
    X = g.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * g.normal(size=n) > 0).astype(int)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    return X, y, owner


def _centres(X, y, owner, floor, params=PARAMS):
    own = without_floor(DEFAULT_POLICY) if floor == 1 else replace(
        DEFAULT_POLICY, nfilter_subset=floor)  # fmt: skip
    return [Centre(f"c{c}", X[owner == c], y[owner == c], params, floor, disclosure=own)
            for c in np.unique(owner)]  # fmt: skip


def _run(X, y, owner, floor, server, params=PARAMS):
    """The real centres through ``federate``; the server is the stage's own (``server(px, P)``)."""
    cs = _centres(X, y, owner, floor, params)
    led = RecordingLedger()
    federate(cs, lambda px: server(px, protocols(floor)), ledger=led)
    return cs, led


def _grid_only(px, P):
    return S.build_grid(px, P, **GRID)


# ------------------------------------------------------------------ boosting_moments
def _two_values(n, s, q):
    """n = 2: x₁ + x₂ = s and x₁² + x₂² = q make x₁, x₂ the roots of t² − s·t + (s² − q)/2."""
    if n != 2:
        return None
    disc = np.sqrt(np.maximum(2.0 * q - s * s, 0.0))
    return np.sort(np.stack([(s - disc) / 2, (s + disc) / 2]), axis=0)


@pytest.mark.parametrize("floor", [1, 3])
def test_boosting_moments_of_a_two_patient_centre_solved_only_without_the_floor(floor):
    """n, Σx, Σx² per feature: for a centre of two patients every feature's two values are the
    roots of a quadratic (exact). With the floor (3) the centre abstains, and n ≥ 3 moments
    leave one degree of freedom per feature."""
    X, y, owner = _data([2, 12, 46])
    _, led = _run(X, y, owner, floor, _grid_only)
    got = led.received(protocol="boosting_moments", sender="c0")
    if floor == 1:
        ((_, m),) = got
        vals = _two_values(int(m["n"]), np.ravel(m["sum"]), np.ravel(m["sumsq"]))
        np.testing.assert_allclose(vals, np.sort(X[owner == 0], axis=0), atol=1e-9)
    else:
        assert got == [] and set(led.abstentions()["center"]) == {"c0"}
    for c in ("c1", "c2"):
        ((_, m),) = led.received(protocol="boosting_moments", sender=c)
        assert int(m["n"]) >= 3


# ------------------------------------------------------------------ boosting_sketch
def _edges(led):
    got = led.received(protocol="boosting_grid_request", sender="server", kind="sketch_request")
    m = got[0][1]
    return [np.asarray(e, float) for e in m["edges"]]


def _cell(edges, j, c):
    """Lattice cell c of feature j: [e_{c−1}, e_c) with open tails."""
    e = edges[j]
    return (-np.inf if c == 0 else e[c - 1], np.inf if c == len(e) else e[c])


@pytest.mark.parametrize("floor", [1, 3])
def test_boosting_sketch_places_a_lone_patient_in_a_cell_only_without_the_floor(floor):
    """Merged lattice-cell counts: a run of count 1 puts one patient of the centre in one cell of
    width 8·SD/64 (its value to 1/8 SD). Without the floor every patient of the 12-patient centre
    alone in its cell is placed; with it every run holds ≥ 3 patients."""
    X, y, owner = _data([12, 48])
    _, led = _run(X, y, owner, floor, _grid_only)
    edges = _edges(led)
    ((_, m),) = led.received(protocol="boosting_sketch", sender="c0")
    x0 = X[owner == 0]
    lone = [
        (int(j), int(s))
        for j, s, e, n in zip(m["feature"], m["start"], m["end"], m["count"], strict=True)
        if n == 1 and s == e
    ]
    if floor == 1:
        assert len(lone) >= 12  # of 36 values: most are alone in their cell
        for j, c in lone:  # exactly one of the centre's patients lies in the placed cell
            lo, hi = _cell(edges, j, c)
            assert np.sum((x0[:, j] >= lo) & (x0[:, j] < hi)) == 1
    else:
        assert lone == [] and np.min(m["count"]) >= 3


@pytest.mark.parametrize("floor", [1, 3])
def test_boosting_sketch_run_ends_place_a_centres_extreme_patients_only_without_the_floor(floor):
    """A run reported with its first and last non-empty cell places the centre's smallest and
    largest value of every feature in a cell of width SD/8, whatever the floor. With the floor
    the runs tile the lattice (open tails included): no run end is an extreme value's cell."""
    X, y, owner = _data([12, 48])
    _, led = _run(X, y, owner, floor, _grid_only)
    edges = _edges(led)
    ((_, m),) = led.received(protocol="boosting_sketch", sender="c0")
    x0, placed = X[owner == 0], 0
    for j in range(X.shape[1]):
        runs = np.flatnonzero(np.asarray(m["feature"]) == j)
        for c, v in ((m["start"][runs[0]], x0[:, j].min()), (m["end"][runs[-1]], x0[:, j].max())):
            lo, hi = _cell(edges, j, int(c))
            placed += int(lo <= v < hi and np.isfinite(lo) and np.isfinite(hi))
        if floor > 1:  # tiled: from the lower tail to the upper tail, no gap
            s, e = np.asarray(m["start"])[runs], np.asarray(m["end"])[runs]
            assert s[0] == 0 and e[-1] == len(edges[j]) and np.array_equal(s[1:], e[:-1] + 1)
    if floor == 1:
        assert placed == 6  # every feature's smallest and largest value, each in its cell
    else:
        assert placed == 0, f"{placed} of 6 extreme values placed in a cell of width SD/8"


# ------------------------------------------------------------------ boosting_vote / _union
def _positives_left(gain, nl, nr, G, n):
    """Tree 1, a node of n patients with Σg = G (its centre's ``boosting_totals``): the number of
    positives on the left whose loss_chg (h = 0.25 each, XGBoost's float32 arithmetic) is the
    reported gain; None when two counts fit."""
    pos = np.arange(nl + 1)
    GL = 0.5 * nl - pos
    loss = T.loss_change(GL, np.full(len(pos), 0.25 * nl), G - GL, np.full(len(pos), 0.25 * nr),
                         G, 0.25 * n, PARAMS)  # fmt: skip
    fit = pos[np.isclose(0.5 * loss.astype(np.float64), gain, rtol=1e-6, atol=1e-9)]
    return int(fit[0]) if len(fit) == 1 else None


def _root_candidates(led, cid, protocol):
    """(feature, cut, n_left, positives on the left) of every candidate centre ``cid`` scored at
    the root of tree 1, solved from its gains."""
    ((_, tot),) = led.received(protocol="boosting_totals", sender=cid)[:1]
    G, n = float(tot["g"]), int(tot["n"])
    ((_, m),) = led.received(protocol=protocol, sender=cid)[:1]  # round 1, the root level
    assert int(m["nodes"][0]) == 0 and int(m["n"][0]) == n
    if protocol == "boosting_vote":
        f, c = np.asarray(m["feature"][0]), np.asarray(m["cut"][0])
    else:  # the union's candidates are indices into the server's own request
        ((_, q),) = [(r, x) for r, x in led.received(protocol="boosting_node_request")
                     if r["receiver"] == cid and r["kind"] == "union_request"][:1]  # fmt: skip
        i = np.asarray(m["index"][0], np.int64)
        f, c = np.asarray(q["index_feature"])[i], np.asarray(q["index_cut"])[i]
    out = []
    for j, k, g, nl, nr in zip(f, c, np.ravel(m["gain"][0]), m["n_left"][0], m["n_right"][0],
                               strict=True):  # fmt: skip
        out.append((int(j), int(k), int(nl), _positives_left(float(g), int(nl), int(nr), G, n)))
    return out


def _labels_from_candidates(cands):
    """Patients whose label the candidates give: {(feature, lo, hi): label} for the one patient
    with code in [lo, hi) — a left side of one patient (lo = 0), or two cuts of one feature whose
    left sides differ by one patient (the difference of their positives)."""
    out = {}
    by_f: dict[int, list] = {}
    for j, k, nl, pos in cands:
        if pos is None:
            continue
        if nl == 1:
            out[(j, 0, k)] = pos
        by_f.setdefault(j, []).append((k, nl, pos))
    for j, rows in by_f.items():
        rows.sort()
        for (k1, n1, p1), (k2, n2, p2) in zip(rows, rows[1:], strict=False):
            if n2 - n1 == 1:
                out[(j, k1, k2)] = p2 - p1
    return out


def _check_labels(found, centre):
    for (j, lo, hi), label in found.items():
        rows = (centre.codes[:, j] >= lo) & (centre.codes[:, j] < hi)
        assert rows.sum() == 1 and int(centre.y[rows][0]) == label, (j, lo, hi)


def _vote(variant):
    def server(px, P):
        return S.boost(px, P, PARAMS, 1, scheme="vote", top=0, variant=variant, grid_cfg=GRID)

    return server


@pytest.mark.parametrize("protocol", ["boosting_vote", "boosting_union"])
def test_boosting_vote_gain_of_a_one_patient_side_gives_its_label_only_without_the_floor(protocol):
    """A vote (or union score) reports L_split with its side counts; with the centre's Σg (its
    totals) the gain is a quadratic in G_L, and G_L = 0.5·n_L − positives lies on a grid: the
    positives on the left are solved exactly. Without the floor a left side of one patient is
    that patient's label; with the floor (3) no side holds fewer than 3."""
    X, y, owner = _data([12, 48])
    for floor in (1, 3):
        cs, led = _run(X, y, owner, floor, _vote(protocol.removeprefix("boosting_")))
        cands = _root_candidates(led, "c0", protocol)
        solved = [c for c in cands if c[3] is not None]
        # the gains give the positives of almost all (with the floor: 7 of the 9 cuts left
        # once the cuts of one feature are ≥ 3 rows apart)
        assert len(solved) >= (0.9 if floor == 1 else 0.75) * len(cands)
        _check_labels(_labels_from_candidates(cands), cs[0])
        lone = {k: v for k, v in _labels_from_candidates(cands).items() if k[1] == 0}
        if floor == 1:
            assert len(lone) >= 2  # the lowest patient of two or more features
        else:
            assert lone == {} and min(min(c[2] for c in cands), 12 - max(c[2] for c in cands)) >= 3


@pytest.mark.parametrize("floor", [1, 3])
@pytest.mark.parametrize("protocol", ["boosting_vote", "boosting_union"])
def test_boosting_vote_adjacent_cuts_give_a_label_only_without_the_floor(protocol, floor):
    """Two cuts of one feature whose left sides differ by one patient give that patient's label
    (the difference of the positives solved from the two gains). The floor bounds each
    candidate's sides, not the difference of two: with it the centre sends only cuts of one
    feature whose left counts differ pairwise by ≥ floor — across the vote and the union — so
    every difference covers ≥ 3 patients."""
    X, y, owner = _data([12, 48])
    cs, led = _run(X, y, owner, floor, _vote(protocol.removeprefix("boosting_")))
    cands = _root_candidates(led, "c0", protocol)
    if protocol == "boosting_union":  # the vote's own candidates were sent first
        cands += _root_candidates(led, "c0", "boosting_vote")
    found = _labels_from_candidates(cands)
    _check_labels(found, cs[0])  # what is found is right
    if floor == 1:
        assert len(found) >= 3
        return
    assert found == {}, f"{len(found)} labels of c0's 12 patients from adjacent cuts"
    for j in {c[0] for c in cands}:
        nl = np.unique([c[2] for c in cands if c[0] == j])
        assert np.all(np.diff(nl) >= 3) and nl.min() >= 3 and 12 - nl.max() >= 3


# ------------------------------------------------------------------ boosting_local_trees
def _leaf_positives(tree, leaf_n):
    """Tree 1 of a centre at ŷ = 0.5: a leaf of m patients has value η·w, w = −G/(0.25·m + λ),
    G = 0.5·m − positives."""
    out = []
    leaves = [i for i, f in enumerate(tree.feature) if f < 0]
    for i, m in zip(leaves, leaf_n, strict=True):
        G = -float(tree.value[i]) / PARAMS.eta * (0.25 * int(m) + PARAMS.reg_lambda)
        out.append((i, int(m), int(round(0.5 * int(m) - G))))
    return out


@pytest.mark.parametrize("floor", [1, 3])
def test_boosting_local_tree_leaf_of_one_patient_gives_its_label_only_without_the_floor(floor):
    """Bagging: a centre's local tree comes with its leaves' counts; a leaf value is
    η·(−G/(H + λ)), so a leaf's positives follow exactly, and a leaf of one patient (the box of
    its features the tree's cuts draw) is that patient's label. With the floor every leaf holds
    ≥ 3 patients."""
    X, y, owner = _data([12, 48])
    deep = replace(PARAMS, max_depth=3)

    def server(px, P):
        return S.bagging(px, P, deep, 1, grid_cfg=GRID)

    cs, led = _run(X, y, owner, floor, server, deep)
    lone = []
    for c in cs:
        ((_, m),) = led.received(protocol="boosting_local_trees", sender=c.cid)
        (tree,) = T.unpack(m)
        where = T.apply(tree, c.codes)
        got = _leaf_positives(tree, m["leaf_n"][0])
        for leaf, n, pos in got:  # every leaf's positives, exactly
            assert np.sum(where == leaf) == n and int(c.y[where == leaf].sum()) == pos
        lone += [(c.cid, leaf, pos) for leaf, n, pos in got if n == 1]
        assert floor == 1 or min(n for _, n, _ in got) >= 3
    if floor == 1:
        assert len(lone) >= 2  # patients alone in a leaf: their labels
    else:
        assert lone == []
