"""The honest-but-curious server on the privacy–utility stage's own releases (``pu_mean_stats``,
``pu_lloyd_stats``, ``pu_km_counts``, ``pu_cluster_release``; the map:
``tests/test_curious_coverage.py``). The stage's real centres run through ``federate`` with a
:class:`RecordingLedger`; the attack reads only what the ledger kept. Defence off: the centres
configured without a floor (``OFF``), without secure aggregation and without their own noise —
the server reads a patient off one message. Defence on (as shipped): the centres' own floor
(``DEFAULT_POLICY``), secure aggregation required for the summing protocols (``SECURE_ONLY``,
the process running it) and, for the cluster release, the centre's own noise."""

from __future__ import annotations

import numpy as np
import pytest

from fedclust.federation import PrivacySettings, federate
from fedclust.federation import privacy as PV
from fedclust.federation.disclosure import DEFAULT_POLICY
from fedclust.privacy.recorder import RecordingLedger
from fedclust.privacy.suite import OFF
from fedclust.privacy_utility import centre as C
from fedclust.privacy_utility import server as S

PLAIN = PrivacySettings()


def _centres(parts, defence: bool, **kw):
    cs = []
    for i, part in enumerate(parts):
        c = C.Centre(f"c{i}", **part, privacy=C.SECURE_ONLY if defence else PLAIN, **kw)
        c.disclosure = DEFAULT_POLICY if defence else OFF  # the centre's own floor
        cs.append(c)
    return cs


def _run(cs, server, defence: bool) -> RecordingLedger:
    led = RecordingLedger()
    with PV.using(C.SECURE_ONLY if defence else PLAIN):
        federate(cs, server, ledger=led)
    return led


def _kept(led, protocol, sender=None):
    """The kept messages of ``protocol`` (or of it under secure aggregation: ``+secagg``)."""
    return [m for r, m in led.kept if r["protocol"].split("+")[0] == protocol
            and (sender is None or r["sender"] == sender)]  # fmt: skip


def _replies(led, protocol, sender):
    return _kept(led, protocol, sender)


def _masked(led, protocol, fields) -> bool:
    """Every kept message of ``protocol`` carries its numbers as secure-aggregation shares
    (uint64 of a masked fixed-point encoding), not as the centre's values."""
    msgs = _kept(led, protocol)
    return bool(msgs) and all(np.asarray(m[f]).dtype == np.uint64 for m in msgs for f in fields)


def _rows(seed=0):
    """Rows inside the clipping ball (norm < 1): a clipped row is the row."""
    g = np.random.default_rng(seed)
    x = g.normal(0.0, 0.1, (31, 3))
    return x, np.r_[0, np.ones(15, int), np.full(15, 2)]  # c0: one patient


# ------------------------------------------------------------------ pu_mean_stats
@pytest.mark.parametrize("defence", [False, True])
def test_pu_mean_stats_of_a_one_patient_centre_is_its_row_only_without_the_defence(defence):
    """The centring mean's release: a centre's Σ of clipped rows and n — for a one-patient
    centre its (clipped) row. Shipped: the centre's floor refuses it, and every other centre's
    sum reaches the ledger only as masked shares."""
    x, owner = _rows()
    cs = _centres([{"x": x[owner == i]} for i in range(3)], defence)
    led = _run(cs, lambda px: S.dp_mean(px, 1.0, 0.0, np.random.default_rng(0)), defence)
    got = _replies(led, "pu_mean_stats", "c0")
    if not defence:
        (m,) = got
        assert int(m["n"]) == 1
        np.testing.assert_array_equal(np.asarray(m["sum"])[0], x[0])  # the patient, exactly
    else:
        assert got == [] and "c0" in set(led.abstentions()["center"])
        assert _masked(led, "pu_mean_stats", ["sum"])
        shares = [np.asarray(m["sum"]).view(np.int64) / 2.0**32 for m in _replies(
            led, "pu_mean_stats", "c1")]  # fmt: skip
        assert all(np.abs(s - x[owner == 1].sum(0)).min() > 1.0 for s in shares)


# ------------------------------------------------------------------ pu_lloyd_stats
@pytest.mark.parametrize("defence", ["off", "floor only", "shipped"])
def test_pu_lloyd_stats_cluster_of_one_patient_is_its_row_only_without_secure_aggregation(
    defence,
):
    """DP-Lloyd: per broadcast centroid the centre's count and Σ of its clipped rows. An
    outlier alone in its cluster: count 1 and Σ = its row. The floor does not see it (the
    per-cluster counts are an aggregate; the message's n is the centre's 15), so secure
    aggregation is the defence: the ledger holds masked shares."""
    x, owner = _rows(1)
    x[5] = [0.6, 0.6, 0.0]  # a patient of c1 far from the others
    cs = _centres([{"x": x[owner == i]} for i in (1, 2)], defence == "shipped")
    if defence == "floor only":
        for c in cs:
            c.disclosure = DEFAULT_POLICY
    init = np.array([[0.6, 0.6, 0.0], [0.0, 0.0, 0.0]])
    noise = S.lloyd_noise(2, 3, 2, 0.0, 1.0, np.random.default_rng(0))
    led = _run(cs, lambda px: S.dp_lloyd(px, init, noise, 1.0), defence == "shipped")
    got = _replies(led, "pu_lloyd_stats", "c0")  # c0 holds centre 1's rows here
    lone = [np.asarray(m["sums"])[k] for m in got if m["counts"].dtype != np.uint64
            for k in np.flatnonzero(np.asarray(m["counts"])[0] == 1)]  # fmt: skip
    if defence != "shipped":
        assert len(lone) == 2  # both iterations
        for row in lone:
            np.testing.assert_allclose(row, x[5], atol=1e-12)
    else:
        assert lone == [] and len(got) == 2
        assert _masked(led, "pu_lloyd_stats", ["sums", "counts"])


# ------------------------------------------------------------------ pu_km_counts
@pytest.mark.parametrize("defence", [False, True])
def test_pu_km_counts_of_a_one_patient_centre_give_its_interval_and_status_only_without(
    defence,
):
    """Events and censorings per interval of the public grid: a one-patient centre's table is
    one-hot — the patient's follow-up interval and whether it died."""
    g = np.random.default_rng(2)
    t = g.exponential(10.0, 31)
    e = g.random(31) < 0.7
    _, owner = _rows()
    edges = np.linspace(0.0, 30.0, 16)
    cs = _centres([{"t": t[owner == i], "e": e[owner == i]} for i in range(3)], defence)
    led = _run(cs, lambda px: S.dp_km(px, edges, 0.0, np.random.default_rng(0)), defence)
    got = _replies(led, "pu_km_counts", "c0")
    if not defence:
        (m,) = got
        ev, ce = np.asarray(m["events"])[0], np.asarray(m["censored"])[0]
        assert ev.sum() + ce.sum() == 1
        (cell,) = np.flatnonzero(ev + ce)
        assert edges[cell] <= t[0] < edges[cell + 1] and bool(ev[cell]) == bool(e[0])
    else:
        assert got == [] and "c0" in set(led.abstentions()["center"])
        assert _masked(led, "pu_km_counts", ["events", "censored"])


# ------------------------------------------------------------------ pu_cluster_release
def _lone_rows(msgs, mean):
    """Rows read off released clusters whose (rounded) count is 1: Σ + the broadcast mean."""
    return [np.asarray(m["sums"])[k] + mean for m in msgs
            for k in np.flatnonzero(np.rint(np.asarray(m["counts"])[0]) == 1)]  # fmt: skip


@pytest.mark.parametrize("defence", [False, True])
def test_pu_cluster_release_of_one_patient_clusters_only_without_the_floor_and_noise(defence):
    """Simultaneous sharing privatised at the centre: per cut cluster the sum of the centred,
    clipped rows and the count. A server asking n_min = 1 gets a one-patient centre's row (the
    guard's one-row-per-sample check needs n > 1) from a centre without a floor or noise; the
    shipped centre raises n_min to its floor (3: the one-patient centre abstains, the others
    cut clusters of ≥ 3) and adds its own noise (z = 1): no released cluster is a patient."""
    x, owner = _rows(3)
    mean = x.mean(0)
    cs = _centres([{"x": x[owner == i]} for i in range(3)], defence,
                  noise=1.0 if defence else 0.0, seed=4)  # fmt: skip
    led = _run(cs, lambda px: S.cluster_releases(px, mean, 1), defence)
    msgs = _kept(led, "pu_cluster_release")
    found = [r for r in _lone_rows(msgs, mean) if np.abs(x - r).max(1).min() < 1e-9]
    if not defence:
        assert len(found) == 1
        np.testing.assert_allclose(found[0], x[0], atol=1e-12)  # c0's patient
    else:
        assert found == [] and len(msgs) == 2 and "c0" in set(led.abstentions()["center"])
        assert all(np.bincount(c.local_labels).min() >= 3 for c in cs[1:])
        near = [r for r in _lone_rows(msgs, mean) if np.abs(x - r).max(1).min() < 0.05]
        assert near == []
