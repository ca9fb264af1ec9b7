"""The exact federated Cox-PH / KM reference of the survival stage (seed 003 §7.2, §11.2) on the
simulated cohort: equal to lifelines on the pooled data, and refused (a clear error, not a crash)
when the coefficients exceed what the centres' nfilter_glm lets them release."""

import numpy as np
import pytest
import yaml

from fedclust.errors import FedclustError
from fedclust.survival.cohort import simulate_cohort
from fedclust.survival.reference import cox_covariates, reference_checks

CFG = yaml.safe_load(open("config/config.yaml"))["survival"]
SEED = 7


@pytest.fixture(scope="module")
def cohort():
    return simulate_cohort(SEED, 1200, 20, list(CFG["clinical"]))


def test_default_check_fits_the_clinical_covariates_exactly(cohort):
    x, obs = cohort
    assert x.shape[1] > 40  # clinical + lesions: more than 8 centres of ~110 patients may fit
    coef, km, check, _ = reference_checks(x, obs, "OS", "iid_balanced", CFG, SEED)
    assert check["coxph_covariates"] == len(CFG["clinical"]) == len(coef)
    assert set(coef["covariate"]) == set(CFG["clinical"])
    assert check["coxph_max_abs_diff"] < 1e-6
    assert check["coxph_abstentions"] == 0
    assert abs(check["coxph_loglik_federated"] - check["coxph_loglik_lifelines"]) < 1e-6
    # KM on the public 0.25-year grid with the centres' small cells merged into later ones (the
    # disclosure cost, reported as km_max_abs_diff): same log-rank verdict as lifelines
    assert 0 < check["km_max_abs_diff"] < 0.3 and check["km_abstentions"] == 0
    assert check["logrank_p"] < 1e-3 and check["logrank_chi2_lifelines"] > 20
    assert not km.empty


def test_every_covariate_is_refused_by_small_centres(cohort):
    x, obs = cohort
    cfg = {**CFG, "coxph_covariates": "all"}
    with pytest.raises(FedclustError, match="every centre refused"):
        reference_checks(x, obs, "OS", "iid_balanced", cfg, SEED)


def test_cox_covariates_selection():
    names = ["AGE", "SEX", "TP53", "HB"]
    assert cox_covariates(names, {"clinical": ["HB", "AGE"]}) == (["AGE", "HB"], [0, 3])
    assert cox_covariates(names, {"coxph_covariates": "all"})[1] == [0, 1, 2, 3]
    with pytest.raises(FedclustError, match="no clinical covariate"):
        cox_covariates(names, {"clinical": ["WBC"]})
    np.testing.assert_array_equal(cox_covariates(names, {"clinical": names})[1], [0, 1, 2, 3])
