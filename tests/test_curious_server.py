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
