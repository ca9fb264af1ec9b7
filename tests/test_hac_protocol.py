"""Issue 13/16/17 for seed 001: the HAC protocols at the privacy boundary, stable genewise
moments, abstentions and skipped n_min settings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import pdist

from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import Ledger
from fedclust.hac.genewise import (
    center_gene_stats,
    genewise_clustering,
    pooled_gene_distances,
    server_gene_stats,
)
from fedclust.stats import combine_moments

# generated data, not patients: the protocols' own rules (tests/conftest.py, issue 22)
pytestmark = pytest.mark.usefixtures("synthetic_centres")


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(7)
    x = g.normal(size=(48, 6))
    centers = np.sort(g.integers(0, 3, 48))
    return x, centers


def test_chan_merge_matches_numpy():
    g = np.random.default_rng(1)
    a, b = g.normal(5, 2, (7, 4)), g.normal(-1, 3, (11, 4))
    n, mean, m2 = combine_moments(7, a.mean(0), ((a - a.mean(0)) ** 2).sum(0), 11, b.mean(0),
                                  ((b - b.mean(0)) ** 2).sum(0))  # fmt: skip
    both = np.vstack([a, b])
    assert n == 18
    np.testing.assert_allclose(mean, both.mean(0), rtol=1e-14)
    np.testing.assert_allclose(m2, both.var(0) * 18, rtol=1e-12)


def test_genewise_large_means_stable():
    """Gene means ≈ 1e4 with spread 1e-2: Σx² − n·mean² loses ~4 digits, the merge does not."""
    g = np.random.default_rng(3)
    x = 1e4 + g.normal(0, 1e-2, (60, 8)) + g.normal(0, 1e-2, 8)
    blocks = [x[:5], x[5:25], x[25:]]
    ref = pdist(x.T, "correlation")
    _, d = genewise_clustering(blocks, "average", "correlation")
    np.testing.assert_allclose(d, ref, rtol=0, atol=1e-9)
    # the one-pass formula this replaces is visibly wrong on the same data
    s, ss, n = x.sum(0), (x**2).sum(0), len(x)
    naive = np.sqrt(np.maximum(ss - n * (s / n) ** 2, 0))
    exact = np.sqrt(((x - x.mean(0)) ** 2).sum(0))
    assert np.abs(naive / exact - 1).max() > 1e-6
    stats = server_gene_stats([center_gene_stats(b) for b in blocks])
    np.testing.assert_allclose(stats["cnorm"], exact, rtol=1e-10)


@pytest.mark.parametrize("value", [0.1, 12345.678, -3.3e7, 1e-300])
def test_genewise_constant_gene_detected_exactly(value):
    g = np.random.default_rng(4)
    x = g.normal(100, 1, (30, 5))
    x[:, 2] = value
    blocks = [x[:3], x[3:17], x[17:]]
    stats = server_gene_stats([center_gene_stats(b) for b in blocks])
    assert stats["constant"].tolist() == [0, 0, 1, 0, 0]
    assert stats["cnorm"][2] == 0.0
    with pytest.raises(ConfigError, match="constant"):
        genewise_clustering(blocks, "average", "correlation")


def test_genewise_constant_per_center_but_not_globally():
    """Constant inside each center with different values: not constant, equals pooled."""
    g = np.random.default_rng(5)
    x = g.normal(0, 1, (30, 4))
    x[:10, 1], x[10:, 1] = 7.0, 9.0
    blocks = [x[:10], x[10:20], x[20:]]
    stats = server_gene_stats([center_gene_stats(b) for b in blocks])
    assert stats["constant"].sum() == 0
    _, d = genewise_clustering(blocks, "average", "correlation")
    np.testing.assert_allclose(d, pooled_gene_distances(x, "correlation"), atol=1e-12)


def test_genewise_small_center_abstains(data):
    x, c = data
    blocks = [x[c == k] for k in range(3)] + [x[:1]]  # a 1-sample fourth center
    led = Ledger()
    _, d = genewise_clustering(blocks, "average", "correlation", ledger=led, n_min=2)
    np.testing.assert_allclose(d, pooled_gene_distances(x, "correlation"), atol=1e-12)
    t = led.table()
    assert "center3" not in set(t[t.kind != "abstain"].sender)
    assert led.n_abstentions == 2  # both rounds
    with pytest.raises(InputDataError, match="n_min"):
        genewise_clustering(blocks, "average", "euclidean", n_min=100)


# ---- gradual sharing: the protocol ---------------------------------------------------------


def _replay_average(x, c, z, n_min):
    """Brute-force reference of the thesis' average-linkage bookkeeping (§3.3.3.3).

    Every cross-center pair of points carries the value the federation attributes to it:
    set by a substitution d(C_L, C) := d(C_G, C) and replaced by ‖centroid − b‖ when its
    unshared side is published. Replays the merge order of ``z`` and returns the heights the
    thesis' rules give (mean attributed value over the merged clusters' pairs).
    """
    n = len(x)
    exact = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    same = c[:, None] == c[None]
    v = np.where(same, exact, np.nan)
    members = {i: [i] for i in range(n)}
    glob = {i: False for i in range(n)}
    unshared = np.ones(n, dtype=bool)
    heights = []

    def mean(a, b):
        return float(np.mean(v[np.ix_(members[a], members[b])]))

    def publish(cl, k):
        part = [p for p in members[cl] if unshared[p] and c[p] == k]
        cen = x[part].mean(axis=0)
        others = np.flatnonzero(unshared & (c != k))
        d = np.sqrt(((x[others] - cen) ** 2).sum(-1))
        for p in part:
            v[p, others] = v[others, p] = d
        unshared[part] = False
        glob[cl] = True

    for t in range(n - 1):
        a, b = int(z[t, 0]), int(z[t, 1])
        heights.append(mean(a, b))
        new = n + t
        ga, gb = glob[a], glob[b]
        if ga != gb:  # global + local: substitution for other centers' local clusters
            g, loc = (a, b) if ga else (b, a)
            k = c[members[loc][0]]
            for cl in members:
                if not glob[cl] and cl not in (a, b) and c[members[cl][0]] != k:
                    val = mean(g, cl)
                    for p in members[loc]:
                        v[p, members[cl]] = v[members[cl], p] = val
        members[new] = members.pop(a) + members.pop(b)
        glob[new] = ga or gb
        del glob[a], glob[b]
        for k in range(c.max() + 1):
            if sum(unshared[p] and c[p] == k for p in members[new]) >= n_min:
                publish(new, k)
    return np.array(heights)


@pytest.mark.parametrize("seed", [1, 2])
def test_gradual_average_stored_delta_matches_reference(seed):
    from fedclust.hac.gradual import gradual_sharing
    from fedclust.hac.toy import cohort_like

    x, c = cohort_like(seed, 70, 4)
    _, c = np.unique(c, return_inverse=True)
    for n_min in (3, 6):
        res = gradual_sharing(x, c, n_min, "average")
        ref = _replay_average(x, c, res.Z, n_min)
        np.testing.assert_allclose(res.Z[:, 2], ref, rtol=1e-9, atol=1e-9)
    # the approximation differs from the reference (so this test can fail)
    cur = gradual_sharing(x, c, 3, "average", average_delta="current")
    assert np.abs(cur.Z[:, 2] - _replay_average(x, c, cur.Z, 3)).max() > 1e-6


def test_gradual_messages_pass_declared_protocols(data):
    from fedclust.hac.gradual import gradual_sharing

    x, c = data
    led = Ledger()
    res = gradual_sharing(x, c, 5, "average", ledger=led)
    t = led.messages()
    assert (t.protocol != "").all()  # every message checked under a declared protocol
    cent = t[t.kind == "centroid"]
    assert len(cent) == res.shares and (cent.protocol == "hac.gradual.centroid").all()
    # no center message carries a row per sample: at most d + 2 numbers or one per cluster
    from_centers = t[t.sender != "server"]
    assert from_centers.floats.max() <= max(x.shape[1] + 2, len(x) // 5 + 1)


def test_gradual_requests_carry_only_the_public_updates(data):
    """What the server's requests (``hac.gradual.request``) tell a centre: the layout once, the
    merges of the rounds so far (each once, in order) and the centroids the *other* centres
    published (each exactly as it was sent, ≥ n_min samples) — nothing of another centre's rows;
    the curious server itself receives from a centre only its declared answers."""
    from fedclust.hac.gradual import gradual_sharing
    from fedclust.privacy.recorder import RecordingLedger

    x, c = data
    led = RecordingLedger()
    res = gradual_sharing(x, c, 5, "average", ledger=led)
    published = [(r["sender"], np.asarray(m["centroid"])) for r, m in led.kept
                 if r["kind"] == "centroid"]  # fmt: skip
    assert len(published) == res.shares > 0
    for k in range(c.max() + 1):
        name = f"center{k}"
        reqs = [m for r, m in led.kept if r["receiver"] == name]
        assert all(r["protocol"] == "hac.gradual.request" for r, _ in led.kept
                   if r["receiver"] == name)  # fmt: skip
        assert sum("home" in m for m in reqs) == 1
        ev = np.vstack([m["events"] for m in reqs if "events" in m])
        merges = ev[ev[:, 0] == 0]
        np.testing.assert_array_equal(merges[:, 4], np.arange(len(merges)))  # rounds, once each
        np.testing.assert_array_equal(merges[:, 3], res.Z[: len(merges), 2])  # public heights
        got = [row for m in reqs if "centroids" in m for row in m["centroids"]]
        others = [v for who, v in published if who != name]
        assert len(got) == (ev[:, 0] == 1).sum() and len(got) <= len(others)
        for row in got:  # every broadcast centroid is one another centre published
            assert any(np.array_equal(row, v) for v in others)
        assert (ev[ev[:, 0] == 1, 3] >= 5).all() and (ev[ev[:, 0] == 1, 2] != k).all()


def test_gradual_centroid_below_nmin_is_refused():
    from fedclust.errors import DisclosureError
    from fedclust.hac.boundary import SERVER, gradual_protocols

    proto = gradual_protocols(10)["centroid"]
    msg = {"centroid": np.zeros(3), "size": 6, "cluster": 0}
    with pytest.raises(DisclosureError, match="min-samples>=10"):
        Ledger().send("center0", SERVER, msg, 0, "centroid", protocol=proto, downlink=False)


def test_gradual_parties_hold_only_their_part(data):
    """Centers hold their own block; the server's state is global × global (≤ n/n_min)."""
    from fedclust.hac import gradual as gr
    from fedclust.hac.gradual_state import GradualCenter

    x, c = data
    seen = {}
    orig_c, orig_s = GradualCenter.__init__, gr.GradualServer.__init__

    def spy_c(self, k, slots, xk, pub, cfg, *rest):
        orig_c(self, k, slots, xk, pub, cfg, *rest)
        seen.setdefault("centers", []).append(self)

    def spy_s(self, pub, cfg):
        orig_s(self, pub, cfg)
        seen["server"] = self

    GradualCenter.__init__, gr.GradualServer.__init__ = spy_c, spy_s
    try:
        gr.gradual_sharing(x, c, 6, "single")
    finally:
        GradualCenter.__init__, gr.GradualServer.__init__ = orig_c, orig_s
    for k, cen in enumerate(seen["centers"]):
        np.testing.assert_array_equal(cen.x, x[c == k])
        assert cen.d.shape == ((c == k).sum(), (c == k).sum() + len(x) // 6)
    srv = seen["server"]
    assert not hasattr(srv, "x") and srv.d.shape == (len(x) // 6, len(x) // 6)


def test_simultaneous_small_centers_abstain(data):
    from scipy.cluster.hierarchy import is_valid_linkage

    from fedclust.hac.simultaneous import center_simultaneous, simultaneous_run

    x, c = data
    g = np.random.default_rng(9)
    blocks = [x[c == k] for k in range(3)] + [g.normal(size=(6, 6)), g.normal(size=(1, 6))]
    led = Ledger()
    z, inc = simultaneous_run(blocks, 10, "average", ledger=led)
    a = led.abstentions()
    assert list(a.center) == ["center3", "center4"] and a.reason.str.contains("floor").all()
    assert not a.reason.str.contains(r"\d").any()  # no count in a reason (issue 22)
    assert "center4" not in set(led.messages().sender)  # the 1-sample center sends nothing
    assert inc.sum() == len(x) and z.shape == (len(x) - 1, 4)
    assert is_valid_linkage(z) and z[-1, 3] == len(x)
    # the 6-sample center's cut, if it tried to send at n_min = 10, is refused by the ledger
    from fedclust.errors import DisclosureError
    from fedclust.hac.boundary import SERVER, simultaneous_protocol

    with pytest.raises(DisclosureError, match="center3"):
        Ledger().send("center3", SERVER, center_simultaneous(blocks[3], "average",
                      "euclidean", 10), 0, "cut", protocol=simultaneous_protocol(10),
                      downlink=False)  # fmt: skip
    # n_min = 1: a 1-sample center takes part (allowed by the setting), still pooled
    z1, inc1 = simultaneous_run(blocks[:3], 1, "average")
    assert inc1.all()


def test_tables_mark_skipped_nmin(data):
    from fedclust.hac.experiments import gradual_table, simultaneous_table

    x, c = data
    biggest = np.bincount(c).max()
    g = gradual_table(x, c, ["single"], "euclidean", [3, biggest + 1], 5)
    assert list(g.skipped) == [False, True]
    assert "largest center" in g.skip_reason.iloc[1] and np.isnan(g.ccc.iloc[1])
    s = simultaneous_table(x, c, ["single"], "euclidean", [2, biggest + 5], 5)
    assert list(s.skipped) == [False, True]
    with pytest.raises(ConfigError, match="nothing to run"):
        gradual_table(x, c, ["single"], "euclidean", [biggest + 1], 5)
    with pytest.raises(ConfigError, match="hac.simultaneous.n_min"):
        simultaneous_table(x, c, ["single"], "euclidean", [biggest + 1], 5)


def test_tables_cuts_per_k(data):
    from sklearn.metrics import calinski_harabasz_score, silhouette_score

    from fedclust.hac.experiments import gradual_table
    from fedclust.hac.pooled import pooled_linkage
    from fedclust.metrics.hierarchy import cut

    x, c = data
    cuts: list[dict] = []
    g = gradual_table(x, c, ["average"], "euclidean", [1, 4], 5, average_deltas=("stored",
                      "current"), cuts=cuts)  # fmt: skip
    assert list(g.variant) == ["stored", "current", "stored", "current"]
    k = [r for r in cuts if r["n_min"] == 1 and r["variant"] == "stored"]
    assert [r["k"] for r in k] == [2, 3, 4, 5]
    lab = cut(pooled_linkage(x, "average"), 3)
    r3 = k[1]
    assert r3["fmi"] == pytest.approx(1.0) and r3["ari"] == pytest.approx(1.0)
    assert r3["silhouette_fed"] == pytest.approx(silhouette_score(x, lab))
    assert r3["calinski_harabasz_pooled"] == pytest.approx(calinski_harabasz_score(x, lab))


def test_check_config_accepts_hac_on_flower_simulation(tmp_path):
    """The default config with the hac stage on ``federation.engine: flower-simulation``
    validates (its simultaneous and genewise messages go through the seam; the rule scripts
    log that gradual sharing and the projections stay in-process)."""
    from pathlib import Path

    from fedclust.config import SCHEMA, load_config_file, validate_config

    cfg = Path(__file__).parents[1] / "config" / "config.yaml"
    f = tmp_path / "sim.yaml"
    f.write_text(f"base: {cfg}\nfederation:\n  engine: flower-simulation\n")
    doc = load_config_file(f)
    assert doc["hac"]["enabled"] and doc["federation"]["engine"] == "flower-simulation"
    validate_config(doc, SCHEMA, source=str(f))


def test_simultaneous_sharing_on_flower_simulation_equals_inprocess(data):
    """The workflow's simultaneous-sharing table (hac_part with federation.engine:
    flower-simulation) is the in-process one: every message a Flower Message, centres behind
    ClientApps, the same tree, abstentions and counts; the ledgers are equal row for row."""
    pytest.importorskip("flwr")
    from fedclust.hac.experiments import simultaneous_table
    from fedclust.hac.simultaneous import simultaneous_run
    from fedclust.transports import get

    x, c = data
    sim = get("flower-simulation")
    kw = {"linkages": ["average", "ward"], "metric": "euclidean", "n_mins": [1, 4, 16],
          "k_max": 5, "seed": 3}  # fmt: skip
    a = simultaneous_table(x, c, **kw)
    b = simultaneous_table(x, c, **kw, transport=sim)
    pd.testing.assert_frame_equal(a, b)
    # the centres' messages, not the server's requests; the 13-sample centre abstains at 16
    assert list(a.messages) == [3, 3, 2] * 2 and list(a.abstentions) == [0, 0, 1] * 2
    blocks = [x[c == k] for k in range(3)]
    la, lb = Ledger(), Ledger()
    za, ia = simultaneous_run(blocks, 4, "complete", ledger=la, seed=3)
    zb, ib = simultaneous_run(blocks, 4, "complete", ledger=lb, seed=3, transport=sim)
    assert np.array_equal(za, zb) and np.array_equal(ia, ib)
    pd.testing.assert_frame_equal(la.table(), lb.table())


def test_projection_table_on_flower_simulation_equals_inprocess(data):
    """hac_projection's table with federation.engine: flower-simulation: each centre behind a
    ClientApp draws Q itself; the same numbers (timings aside) and counts as in-process."""
    pytest.importorskip("flwr")
    from fedclust.hac.experiments import projection_table
    from fedclust.transports import get

    x, c = data
    kw = {"linkages": ["average", "ward"], "metric": "euclidean", "sketch_sizes": [4, 8],
          "seeds": 2, "base_seed": 3, "k_max": 5}  # fmt: skip
    a = projection_table(x, c, **kw).drop(columns="seconds")
    b = projection_table(x, c, **kw, transport=get("flower-simulation")).drop(columns="seconds")
    pd.testing.assert_frame_equal(a, b)
    assert list(a.messages.unique()) == [3]  # the centres' sketches, not the requests


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_genewise_on_flower_simulation_equals_inprocess(data, metric):
    """hac_exact's genewise clustering with federation.engine: flower-simulation: the same
    distances, tree and ledger (the 1-sample centre abstains from every round)."""
    pytest.importorskip("flwr")
    from fedclust.hac.experiments import _sent
    from fedclust.transports import get

    x, c = data
    blocks = [x[c == k] for k in range(3)] + [x[:1]]
    la, lb = Ledger(), Ledger()
    za, da = genewise_clustering(blocks, "average", metric, la, n_min=2)
    zb, db = genewise_clustering(blocks, "average", metric, lb, n_min=2,
                                 transport=get("flower-simulation"))  # fmt: skip
    assert np.array_equal(da, db) and np.array_equal(za, zb)
    pd.testing.assert_frame_equal(la.table(), lb.table())
    # the counted messages: 3 shares (cosine: + 3 moments + the statistics sent back with the
    # round-2 request to all 4 centres; the 1-sample one abstains again)
    assert _sent(la, rounds=True) == {"messages": 3 if metric == "euclidean" else 10,
                                      "floats": _sent(la)["floats"],
                                      "rounds": 1 if metric == "euclidean" else 2}  # fmt: skip
