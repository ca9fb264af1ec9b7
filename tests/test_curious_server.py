"""The honest-but-curious server on protocols that had no attack test (issue: every protocol
has a curious-server test, ``tests/test_curious_coverage.py``). Each test runs the protocol
twice on tiny synthetic centres: with the defence off (the floor lowered) the server solves for
one patient from what it recorded, with the defence on (the centre's own floor) it gets nothing."""

from __future__ import annotations

import numpy as np
import pytest

from fedclust.federation import federate
from fedclust.federation.disclosure import DEFAULT_POLICY
from fedclust.privacy.recorder import RecordingLedger
from fedclust.privacy.suite import OFF

NOISE_VAR = 0.25


# ------------------------------------------------------------------ bayes: conjugate PVI Δη
def _pvi_run(x, y, owner, floor: int) -> RecordingLedger:
    from fedclust.bayes import centre, protocols, server
    from fedclust.bayes import pvi as P

    m = int(owner.max()) + 1
    cs = [centre.ConjugateCentre(f"c{i}", i, x[owner == i], y[owner == i], NOISE_VAR,
                                 min_samples=floor) for i in range(m)]  # fmt: skip
    for c in cs:  # defence off: the centres' own floors (DataSHIELD's nfilter) at 1 as well
        c.disclosure = OFF if floor == 1 else DEFAULT_POLICY
    strategy = server.Scheduled(server.NaturalSum(var_max=1e12), "synchronous", None, 0)
    serve = server.serve(strategy, P.isotropic_prior(x.shape[1], 1.0), 2, {"damping": 1.0},
                         protocols.pvi_delta(floor))  # fmt: skip
    led = RecordingLedger()
    federate(cs, serve, ledger=led)
    return led


def _solve_patient(delta) -> tuple[np.ndarray, float] | None:
    """A centre's first Δη (damping 1) is its likelihood [Xᵀy/s², −½XᵀX/s²]: when XᵀX has
    rank 1 it is x xᵀ, so x is its leading eigenvector (up to sign) and y = xᵀ(Xᵀy)/|x|²."""
    g, H = (np.asarray(d, float) for d in delta[:2])
    xx = -2.0 * NOISE_VAR * H
    w, v = np.linalg.eigh(xx)
    if w[-1] <= 1e-9 or w[-2] > 1e-9 * w[-1]:  # not rank one: more than one patient
        return None
    x = v[:, -1] * np.sqrt(w[-1])
    y = float(x @ (NOISE_VAR * g)) / float(x @ x)
    return x, y


@pytest.mark.parametrize("floor", [1, 3])
def test_bayes_pvi_delta_of_a_one_patient_centre_solved_only_without_the_floor(floor):
    g = np.random.default_rng(0)
    x = g.standard_normal((31, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + 0.5 * g.standard_normal(31)
    owner = np.r_[0, np.ones(15, int), np.full(15, 2)]  # centre c0 holds one patient
    led = _pvi_run(x, y, owner, floor)
    got = [m["parameters"] for _, m in led.received(protocol="bayes_pvi_delta", sender="c0")]
    solved = [s for s in map(_solve_patient, got) if s is not None]
    if floor == 1:
        xs, ys = solved[0]
        sign = np.sign(xs @ x[0])
        np.testing.assert_allclose(sign * xs, x[0], atol=1e-8)
        assert sign * ys == pytest.approx(y[0], abs=1e-8)
    else:
        assert got == [] and solved == []
        assert list(led.abstentions()["center"].unique()) == ["c0"]
    # the larger centres' Δη never give a single patient
    for c in ("c1", "c2"):
        msgs = [m["parameters"] for _, m in led.received(protocol="bayes_pvi_delta", sender=c)]
        assert msgs and all(_solve_patient(d) is None for d in msgs)


# ------------------------------------------------------------------ generative: moments
@pytest.mark.parametrize("floor", [1, 3])
def test_generative_moments_of_a_one_patient_column_only_without_the_floor(floor):
    """``generative_moments`` (the federated standardisation before SAVAE / DGD FedAvg) sends
    per-column Σx, Σx², n over the observed values: a column the centre observed in one patient
    gives that patient's value (Σx) directly. The centre's floor (column n ≥ 3) stops it."""
    from fedclust.generative import data as D
    from fedclust.generative import likelihoods as L
    from fedclust.generative import server as GS
    from fedclust.generative.centre import DgdCentre

    g = np.random.default_rng(1)
    spec = L.FeatureSpec.all("gaussian", 3)
    x0, x1 = g.normal(5.0, 2.0, (12, 3)), g.normal(5.0, 2.0, (20, 3))
    x0[1:, 2] = np.nan  # centre c0 observed column 2 in its first patient only
    policy = OFF if floor == 1 else DEFAULT_POLICY

    class Centre(DgdCentre):  # the standardisation only: no model is built afterwards
        def _set_scaler(self, scaler):
            self.scaler = scaler

    cs = [Centre(c, x, D.observed(x), spec, None, None, 0, floor, policy)
          for c, x in (("c0", x0), ("c1", x1))]  # fmt: skip
    led = RecordingLedger()
    federate(cs, lambda px: GS.standardise(px, spec, floor), ledger=led)
    got = led.received(protocol="generative_moments", sender="c0")
    if floor == 1:
        ((_, m),) = got
        assert int(m["n"][2]) == 1 and m["sum"][2] == x0[0, 2]  # the patient's value, exactly
        assert m["sumsq"][2] == pytest.approx(x0[0, 2] ** 2)
    else:
        assert got == [] and set(led.abstentions()["center"]) == {"c0"}
        # the other centre's message never summarises fewer than 3 values
        ((_, m),) = led.received(protocol="generative_moments", sender="c1")
        assert np.min(m["n"]) >= 3


# ------------------------------------------------------------------ bayes: FedAvg weights
def _fedavg_run(
    n0: int, floor: int, epochs: int = 1, rounds: int = 1
) -> tuple[np.ndarray, dict[str, list], object]:
    """Two centres (``n0`` and 40 digits images), ``rounds`` FedAvg rounds of plain SGD; the
    attacks' candidate images (:func:`_attacks`) from what centre c0 sent."""
    from fedclust.bayes import bbb, centre, data, protocols, server
    from fedclust.federation import make_strategy

    x, y = data.load_source("digits")
    i = np.random.default_rng(0).permutation(len(y))
    x, y = x[i], y[i]
    layout = bbb.make_layout(64, [16], 10)
    s = bbb.TrainSettings(epochs=1, batch_size=16, lr=0.05, optimizer="sgd")
    w0 = bbb.init_weights(layout, 3)
    parts = [(0, n0), (n0, n0 + 40)]
    cs = [centre.FedAvgCentre(f"c{k}", k, x[a:b], y[a:b], x[:0], y[:0], layout, s, k,
                              min_samples=floor) for k, (a, b) in enumerate(parts)]  # fmt: skip
    for c in cs:
        c.disclosure = OFF if floor == 1 else DEFAULT_POLICY
    strategy = server.Scheduled(make_strategy("fedavg"), "synchronous", None, 0)
    serve = server.serve(strategy, [w0], rounds, {"epochs": epochs}, protocols.fedavg_fit(floor))
    led = RecordingLedger()
    federate(cs, serve, ledger=led)
    return x[:n0], _attacks(layout, led, "c0"), led


def _attacks(layout, led: RecordingLedger, cid: str) -> dict[str, list]:
    """Candidate images from centre ``cid``'s updates (the server knows the weights it sent
    each round). SGD: ΔW₁ = −lr Σ δ xᵀ, Δb₁ = −lr Σ δ over the images that reached a ReLU unit,
    so ``ratio``: ΔW₁[j]/Δb₁[j] is an image whenever one image reached unit j; ``units``: the
    difference of two units' updates (the image one unit saw beyond the other's); ``rounds``:
    the difference of one unit's updates in two rounds (an image it saw in one round only)."""
    import torch

    down = {r["round"]: m for r, m in led.received(protocol="bayes_fedavg_fit", sender="server")
            if r["receiver"] == cid}  # fmt: skip
    up = led.received(protocol="bayes_fedavg_fit", sender=cid)
    deltas = []
    for d, u in ((down[r["round"]], m) for r, m in up):
        (W0, b0), *_ = layout.split(torch.as_tensor(np.asarray(d["parameters"][0])))
        (W1, b1), *_ = layout.split(torch.as_tensor(np.asarray(u["parameters"][0])))
        deltas.append(((W1 - W0).numpy(), (b1 - b0).numpy()))

    def ratios(dW, db):
        return [dW[j] / db[j] for j in np.flatnonzero(np.abs(db) > 1e-12)]

    out: dict[str, list] = {"ratio": [], "units": [], "rounds": []}
    for dW, db in deltas:
        out["ratio"] += ratios(dW, db)
        j, k = np.triu_indices(len(db), 1)
        out["units"] += ratios(dW[j] - dW[k], db[j] - db[k])
    for a, b in zip(deltas[:-1], deltas[1:], strict=True):
        out["rounds"] += ratios(a[0] - b[0], a[1] - b[1])
    return out


def _recovered(images: np.ndarray, rows: list) -> set[int]:
    return {int(np.abs(images - r).max(1).argmin()) for r in rows
            if np.abs(images - r).max(1).min() < 1e-6}  # fmt: skip


@pytest.mark.parametrize("floor", [1, 3])
def test_bayes_fedavg_fit_of_a_one_image_centre_inverted_only_without_the_floor(floor):
    images, rows, led = _fedavg_run(1, floor)
    if floor == 1:
        assert _recovered(images, rows["ratio"]) == {0}  # the image, exactly, from the weights
    else:
        assert rows["ratio"] == [] and set(led.abstentions()["center"]) == {"c0"}


@pytest.mark.parametrize("epochs, rounds", [(1, 1), (2, 2), (1, 3)])
@pytest.mark.parametrize("floor", [1, 3])
def test_bayes_fedavg_fit_above_the_floor_gives_no_single_image(floor, epochs, rounds):
    """A centre of 8 images, above the image floor: a ReLU unit that one of them reaches gives
    that image exactly (one step; two epochs over two rounds; each of three rounds). The
    centre's per-unit floor (:mod:`fedclust.federation.unit_floor`) withholds such units' updates
    and says how many in the message; then no attack (a unit's ratio, the difference of two
    units, of one unit's updates in consecutive rounds) recovers an image."""
    images, rows, led = _fedavg_run(8, floor, epochs, rounds)
    sent = [m for _, m in led.received(protocol="bayes_fedavg_fit", sender="c0")]
    assert len(sent) == rounds and rows["ratio"]
    if floor == 1:
        assert _recovered(images, rows["ratio"])  # the leak: single images, exactly
        assert not any("units_withheld" in m for m in sent)
    else:
        for attack, candidates in rows.items():
            assert not _recovered(images, candidates), attack
        assert sum(m.get("units_withheld", 0) for m in sent) > 0


def test_the_unit_floor_resets_only_the_withheld_units_to_the_received_weights():
    """The same centre with and without the per-unit floor: every parameter outside the
    withheld units' rows, biases and outgoing columns is bit-identical (so a run in which no
    unit is below the floor gives the same numbers), and those equal the weights sent."""
    import torch

    from fedclust.bayes import bbb, centre, data

    x, y = data.load_source("digits")
    layout = bbb.make_layout(64, [16, 12], 10)
    s = bbb.TrainSettings(epochs=2, batch_size=4, lr=0.05, optimizer="sgd")
    w0 = bbb.init_weights(layout, 3)
    got = {}
    for floor in (1, 4):
        c = centre.FedAvgCentre("c0", 0, x[:10], y[:10], x[:0], y[:0], layout, s, 7,
                                min_samples=floor)  # fmt: skip
        c.disclosure = OFF if floor == 1 else DEFAULT_POLICY
        (w,), _, metrics = c.fit([w0], {})
        got[floor] = (w, metrics.get("units_withheld", 0))
    (free, none), (kept, k) = got[1], got[4]
    assert none == 0 and k > 0
    changed = free != kept
    np.testing.assert_array_equal(kept[changed], w0[changed])  # reset to what was received
    # the reset entries are whole units (a reset bias marks one): row and bias in, column out
    mask = torch.zeros(layout.n_params, dtype=torch.bool)
    parts, marks = layout.split(torch.as_tensor(changed)), layout.split(mask)
    for i in range(len(layout.sizes) - 2):  # the hidden layers
        units = torch.nonzero(parts[i][1]).flatten()
        marks[i][0][units], marks[i][1][units] = True, True
        marks[i + 1][0][:, units] = True
    assert 0 < int(mask.sum()) and not (changed & ~mask.numpy()).any()


# ------------------------------------------------------------------ fedprep tables
@pytest.mark.parametrize("floor", [1, 3])
def test_fedprep_table_moments_and_bins_give_one_patient_only_without_the_floor(floor):
    """``prep_column_moments``: a column a centre observed in one patient has that patient's
    value as its mean; ``prep_binned_counts``: with 50 bins over mean ± 5 SD the one patient of
    a centre in a bin places its value within a bin width (and the extreme patient alone in its
    bin gives the range). The centre's floor (columns with ≥ 3 values, cells 0 or ≥ 3) stops
    both."""
    from fedclust.data.fedpreprocess.protocols import Protocols, from_row
    from fedclust.data.fedpreprocess.tabular import TableCentre, column_stats_server

    g = np.random.default_rng(2)
    x0, x1 = g.normal(50.0, 10.0, (15, 2)), g.normal(50.0, 10.0, (30, 2))
    x0[1:, 0] = np.nan  # centre c0 observed column 0 in one patient only
    x0[0, 1] = 200.0  # and holds one extreme value in column 1
    policy = OFF if floor == 1 else DEFAULT_POLICY
    cs = [TableCentre(c, x, min_samples=floor, disclosure=policy)
          for c, x in (("c0", x0), ("c1", x1))]  # fmt: skip
    led = RecordingLedger()
    P = Protocols(floor)
    federate(cs, lambda px: column_stats_server(px, 2, binned=[1], protocols=P), ledger=led)
    ((_, mom),) = led.received(protocol="prep_column_moments", sender="c0")
    ((_, bins),) = led.received(protocol="prep_binned_counts", sender="c0")
    mean = dict(zip(np.asarray(mom["columns"]).tolist(), from_row(mom["mean"]), strict=True))
    counts = np.asarray(bins["counts"][0])
    if floor == 1:
        assert mean[0] == x0[0, 0]  # the patient's value, exactly
        assert counts[-1] == 1  # the extreme patient, alone in the top bin: the range is its value
    else:
        assert 0 not in mean  # the column is not reported
        assert counts[-1] == 0
        assert not np.any((counts > 0) & (counts < 3))


# ------------------------------------------------------------------ heart: per-class fills
@pytest.mark.parametrize("floor", [1, 5])
def test_heart_impute_stats_of_a_one_patient_class_only_without_the_floor(floor):
    """``heart_impute_stats``: hospital "c" has no observed cholesterol in class 1, so the
    server asks the others for their class-1 median; hospital "a" observed it in one class-1
    patient, so its median is that patient's value. The centre's floor (5 values) stops it."""
    import pandas as pd

    from fedclust.decentral.imputation import ImputeCentre, impute_server

    g = np.random.default_rng(3)

    def hospital(cid, n, y, chol):
        v = pd.DataFrame({"Cholesterol": chol, "RestingBP": g.normal(130, 15, n)})
        return ImputeCentre(cid, v, v.isna(), np.asarray(y), "median", floor,
                            OFF if floor == 1 else DEFAULT_POLICY)  # fmt: skip

    ya = np.r_[1, np.zeros(19, int)]
    chol_a = np.r_[241.0, np.full(19, np.nan)]  # one class-1 value; class 0 all missing too
    cs = [hospital("a", 20, ya, chol_a),
          hospital("b", 20, np.r_[np.ones(10, int), np.zeros(10, int)], g.normal(230, 40, 20)),
          hospital("c", 10, np.ones(10, int), np.full(10, np.nan))]  # fmt: skip
    led = RecordingLedger()
    federate(cs, lambda px: impute_server(px, ["Cholesterol"], floor), ledger=led)
    got = [m for r, m in led.received(protocol="heart_impute_stats", sender="a")]
    if floor == 1:
        assert any(m["n"] == 1 and m["stat"] == 241.0 for m in got)  # the patient's value
    else:
        assert all(m["n"] >= 5 for m in got) and not any(m["stat"] == 241.0 for m in got)
        assert "a" in set(led.abstentions()["center"])


@pytest.mark.parametrize("floor", [1, 5])
def test_heart_impute_needs_of_a_rare_class_only_without_the_floor(floor):
    """``heart_impute_needs``: hospital "a" holds one class-1 patient, whose cholesterol is
    missing. Differencing two runs (with / without the patient), a curious server reads from
    a's needs that a class-1 patient lacking the value is there. The centre's own floor (its
    ``min_samples`` / ``nfilter_subset``: 5 rows of a class) keeps the class out of the message,
    so both runs send the same messages; the patient's cell is still filled (from a's own
    observed values, source ``local_all_classes``)."""
    import pandas as pd

    from fedclust.decentral.imputation import ImputeCentre, impute_server

    g = np.random.default_rng(4)
    chol = {"a": np.r_[g.normal(240, 30, 20), np.nan], "b": g.normal(230, 40, 20)}
    ys = {"a": np.r_[np.zeros(20, int), 1], "b": np.r_[np.ones(10, int), np.zeros(10, int)]}

    def run(with_patient: bool):
        cs = []
        for cid in ("a", "b"):
            keep = slice(None) if with_patient or cid == "b" else slice(0, 20)
            v = pd.DataFrame({"Cholesterol": chol[cid][keep]})
            cs.append(ImputeCentre(cid, v, v.isna(), ys[cid][keep], "median", floor,
                                   OFF if floor == 1 else DEFAULT_POLICY))  # fmt: skip
        led = RecordingLedger()
        federate(cs, lambda px: impute_server(px, ["Cholesterol"], floor), ledger=led)
        got = [(r["sender"], r["protocol"], {k: np.asarray(v).tolist() for k, v in m.items()})
               for r, m in led.received()]  # fmt: skip
        return got, cs[0]

    (with_p, a), (without, _) = run(True), run(False)
    needs_a = [m["labels"] for s, p, m in with_p if s == "a" and p == "heart_impute_needs"]
    if floor == 1:  # recovered: a holds a class-1 patient without a cholesterol value
        assert needs_a == [[1]] and with_p != without
        assert a.fills[-1]["source"] == "federated"
    else:
        assert needs_a == [[]] and with_p == without
        assert a.fills[-1]["source"] == "local_all_classes"
        assert a.fills[-1]["fill"] == np.median(chol["a"][:20])
    assert np.isfinite(a.values["Cholesterol"]).all()  # the imputation is complete either way


# ------------------------------------------------------------------ D6.2 DEC: column counts
@pytest.mark.parametrize("floor", [1, 3])
def test_d62_column_ones_of_a_one_patient_centre_only_without_the_floor(floor):
    """``d62_column_ones`` (the flip frequencies before D6.2's DEC): a centre's count of ones per
    binary column is its patient's row when it holds one patient. The protocol's floor, applied
    by the centre's guard, stops it (the centre abstains)."""
    import torch

    from fedclust.dec.d62 import protocols as DP
    from fedclust.dec.d62.centre import D62Centre
    from fedclust.dec.d62.server import flip_frequencies

    class Rows(D62Centre):  # D6.2's column_ones / flip_rates on a centre's rows, nothing else
        def __init__(self, cid, x):
            self.cid, self.x, self.x_test = cid, torch.as_tensor(x), torch.as_tensor(x[:0])
            self.protocols = DP.declared(floor, floor)
            self.disclosure = OFF if floor == 1 else DEFAULT_POLICY

    g = np.random.default_rng(4)
    x = (g.random((21, 12)) < 0.3).astype(np.float32)
    cs = [Rows("c0", x[:1]), Rows("c1", x[1:])]
    led = RecordingLedger()
    federate(cs, lambda px: flip_frequencies(px, floor), ledger=led)
    got = led.received(protocol="d62_column_ones", sender="c0")
    if floor == 1:
        ((_, m),) = got
        np.testing.assert_array_equal(np.ravel(m["ones"]), x[0])  # the patient's row
    else:
        assert got == [] and set(led.abstentions()["center"]) == {"c0"}
