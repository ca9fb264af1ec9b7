"""Attack suite (issue 22), survival protocols: an honest-but-curious server attacks the messages
it recorded. Each attack recovers patients with the protections off (the protocol before issue
22) and none as the protocol runs now."""

from __future__ import annotations

import numpy as np

from fedclust.federation import Ledger
from fedclust.privacy import attacks as A
from fedclust.privacy import suite
from fedclust.privacy.recorder import RecordingLedger


def test_km_records_rebuilt_from_exact_counts_but_not_from_the_grid():
    out = suite.km()
    # before: every (time, status, group) record of the centre rebuilt exactly
    assert out.recovered_unprotected == out.records == 40
    # now: public grid, cells 0 or >= 3: no exact record, no cell isolating a patient
    assert out.recovered == 0 and out.numbers_in_reasons == 0
    assert out.sent == "censored,events,n"


def test_km_cells_of_every_centre_are_zero_or_at_least_three():
    from fedclust.survival.km import federated_km, grid_edges

    led = RecordingLedger()
    cents = suite._survival_centres(seed=5, n=25, k=4)
    federated_km(cents, grid_edges({"step": 0.1, "max": 20}), ["a", "b"], led)
    tables = [m[f] for _, m in led.received(kind="km_counts") for f in ("events", "censored", "n")]
    assert tables and A.isolated_in_cells(tables, 3) == 0


def test_cv_sends_pair_counts_not_patient_rows():
    out = suite.cv()
    assert out.recovered_unprotected == out.records == 30  # the old per-patient rows
    assert out.recovered == 0 and out.sent == "comparable,concordant,n" and out.floats == 3


def test_cv_c_index_from_centre_counts_equals_pairs_within_centres():
    from fedclust.survival.cox import c_index, concordance_counts

    g = np.random.default_rng(0)
    t, r, e = g.exponential(size=(3, 60))
    e = e < 0.6
    parts = [slice(0, 20), slice(20, 45), slice(45, 60)]
    conc = sum(concordance_counts(t[p], r[p], e[p])[0] for p in parts)
    comp = sum(concordance_counts(t[p], r[p], e[p])[1] for p in parts)
    assert 0 < conc / comp < 1 and c_index(t[:20], r[:20], e[:20]) == (
        concordance_counts(t[:20], r[:20], e[:20])[0]
        / concordance_counts(t[:20], r[:20], e[:20])[1]
    )


def test_cox_pair_difference_recovers_a_patient_only_without_the_floor():
    out = suite.coxph()
    assert out.recovered_unprotected == 1  # a 2-patient stratum, one patient known
    assert out.recovered == 0 and out.abstentions > 0 and out.numbers_in_reasons == 0


def test_every_survival_message_has_a_protocol():
    from fedclust.survival.coxph import fit_federated_coxph
    from fedclust.survival.km import federated_km, grid_edges

    led = Ledger()
    cents = suite._survival_centres()
    federated_km(cents, grid_edges({}), ["a", "b"], led)
    g = np.random.default_rng(1)
    fit_federated_coxph([(g.normal(size=(len(t), 2)), t, e) for t, e, _ in cents], led)
    assert (led.messages()["protocol"] != "").all()
