"""Attack suite (issue 22): consensus ADMM (solving the iterates' linear systems), DEC stage B
(a hostile request), abstention reasons, and the suite table the report shows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedclust.federation.disclosure import DEFAULT_POLICY
from fedclust.privacy import attacks as A
from fedclust.privacy import suite


def test_admm_one_row_centre_recovered_only_without_the_glm_floor():
    out = suite.admm()
    assert out.recovered_unprotected == 1  # the row and, for ridge, A_iᵀA_i
    assert out.recovered == 0 and out.abstentions == 1 and out.numbers_in_reasons == 0


def test_admm_attack_finds_no_row_at_a_centre_above_the_floor():
    from fedclust.admm.admm import AdmmSettings, admm_distributed
    from fedclust.privacy.recorder import RecordingLedger

    g = np.random.default_rng(3)
    A_ = np.hstack([g.normal(size=(90, 3)), np.ones((90, 1))])
    b = A_ @ g.normal(size=4) + g.normal(size=90)
    led = RecordingLedger()
    y = np.where(b > np.median(b), 1.0, -1.0)
    admm_distributed([("c0", A_[:30], y[:30]), ("c1", A_[30:], y[30:])],
                     AdmmSettings("logistic", 0.1, max_iter=15), led)  # fmt: skip
    assert A.admm_rows(led.kept, "c0", 1.0) is None


def test_dec_hostile_request_refused_by_the_centres_own_k_and_m():
    out = suite.dec()
    assert out.recovered_unprotected >= 10  # k = n − 1, m = 1: single-patient embeddings
    assert out.recovered == 0 and out.abstentions == 1 and out.numbers_in_reasons == 0
    assert out.sent == "centroids,counts"


def test_default_floors_are_at_least_three():
    assert DEFAULT_POLICY.nfilter_subset >= 3 and DEFAULT_POLICY.nfilter_tab >= 3
    assert DEFAULT_POLICY.allow_per_sample == ()


def test_suite_table_and_reasons():
    t = suite.run_suite(["km", "coxph", "admm"])
    assert list(t.columns) == suite.COLUMNS and len(t) == 3
    assert (t.recovered == 0).all() and (t.recovered_unprotected > 0).all()
    assert (t.numbers_in_reasons == 0).all()
    reasons = pd.DataFrame({"reason": ["a local cluster has 1 < m=5 samples", "below the floor"]})
    assert A.counts_in_reasons(reasons) == 1  # the attack on reasons works on the old text


def test_privacy_section_headline(tmp_path):
    from fedclust.io import read_json
    from fedclust.privacy import report as R

    t = suite.run_suite(["km", "sketches"])
    out = {k: str(tmp_path / f) for k, f in
           (("table", "attack_suite.tsv"), ("figure", "attack_suite.png"),
            ("section", "privacy.json"))}  # fmt: skip
    sec = R.build_section(out, table=t)
    assert read_json(out["section"])["headline"] == sec.headline
    assert (tmp_path / "attack_suite.png").stat().st_size > 0
    rows = {r["quantity"]: r for r in sec.headline["rows"]}
    total = rows["records recovered from protocols made non-disclosive (all attacks)"]
    assert total["ours"] == 0 and total["source"] == 0
    assert rows["survival_km_counts: records recovered of 40"]["ours"] == 0
    assert rows["hac.projection: records recovered of 20"]["source"] == "by design (opt-in)"
    assert "honest-but-curious" in sec.text[1]
