"""Reliability probes of the privacy–utility stage's config (issue 30 C, items 4, 3 and 12 on the
newer code): names that become paths, names that must refer to another section, a floor below
the centres' own — each a ConfigError at config time (`fedclust check-config`), not a
MissingInputException, a KeyError in the job or a floor lowered without a word. Config only."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from fedclust.config import load_yaml, validate_config
from fedclust.errors import ConfigError


@pytest.fixture(scope="module")
def default(repo):
    return load_yaml(repo / "config" / "config.yaml")


def _check(repo, default, method, over, **top):
    cfg = copy.deepcopy(default)
    cfg["privacy_utility"] = {"enabled": True, "methods": [method], method: over}
    for key, value in top.items():
        cfg[key] = {**cfg.get(key, {}), **value}
    return validate_config(cfg, repo / "config" / "schema.yaml")


@pytest.mark.parametrize(
    "method, key",
    [("dp_lloyd", "split"), ("km", "split"), ("dec", "split"), ("fedprep", "split"),
     ("hac", "cohort"), ("known_io", "cohort"), ("fedprep", "cohort"),
     ("property_inference", "cohort"), ("reconstruction", "cohort")],
)  # fmt: skip
def test_path_names_restricted(repo, default, method, key):
    """`split: ../../../x` became results/data/mds/splits/../../../x.tsv (valid before)."""
    with pytest.raises(ConfigError, match="file path"):
        _check(repo, default, method, {key: "../../../x"})


@pytest.mark.parametrize(
    "method, over, match",
    [("dp_lloyd", {"split": "nosuch"}, "data.splits"),
     ("km", {"split": "region"}, "mds"),  # a split of the RNA-seq cohorts, not of MDS
     ("dec", {"split": "nosuch"}, "data.splits"),
     ("fedprep", {"split": "uniform10"}, "rnaseq"),
     ("hac", {"cohort": "BRCA"}, "data.rnaseq.cohorts"),
     ("known_io", {"cohort": "nosuch"}, "data.rnaseq.cohorts"),
     ("fedprep", {"cohort": "nosuch"}, "data.rnaseq.cohorts"),
     ("property_inference", {"cohort": "nosuch"}, "data.rnaseq.cohorts"),
     ("fedcref", {"dataset": "mnsit"}, "offline glyph"),
     ("bayes", {"method": "nosuch"}, "PVI"),
     ("bayes", {"method": "fedavg"}, "PVI"),
     ("bayes", {"split": "nosuch"}, "bayes.federated.splits")],
)  # fmt: skip
def test_references_checked_at_config_time(repo, default, method, over, match):
    """Each was 'valid' for check-config; the run failed later (MissingInputException, a
    ConfigError or KeyError in the job)."""
    with pytest.raises(ConfigError, match=match):
        _check(repo, default, method, over)


def test_no_methods_refused(repo, default):
    cfg = copy.deepcopy(default)
    cfg["privacy_utility"] = {"enabled": True, "methods": []}
    with pytest.raises(ConfigError, match="methods"):
        validate_config(cfg, repo / "config" / "schema.yaml")


def test_fedprep_floor_not_below_the_data_stage(repo, default):
    """fedprep.min_samples is the federated preprocessing's floor (data.federated.min_samples):
    set lower it measured a run at a floor the data stage never uses, without a word."""
    with pytest.raises(ConfigError, match="min_samples"):
        _check(repo, default, "fedprep", {"min_samples": 2}, data={"federated": {"min_samples": 5}})


def test_hac_n_min_not_below_the_centres_floor(repo, default):
    with pytest.raises(ConfigError, match="n_min"):
        _check(repo, default, "hac", {"n_min": 1})


def test_defaults_pass(repo, default):
    for m in ("dp_lloyd", "km", "dec", "hac", "known_io", "fedcref", "bayes", "fedprep"):
        _check(repo, default, m, {})


def test_hac_centre_keeps_its_floor_against_the_servers_n_min():
    """The cluster release's n_min came from the server's request only: a curious server asking
    n_min = 1 got one-patient clusters (at ε = ∞ each a patient's clipped row). The centre cuts
    at no fewer than its own nfilter_subset."""
    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.privacy_utility.centre import Centre as PrivateCentre

    x = np.random.default_rng(0).normal(size=(12, 3))
    c = PrivateCentre("A", x, bound=100.0)
    c.disclosure = DisclosurePolicy(nfilter_subset=4)
    out = c.cluster_release([np.zeros(3)], {"n_min": 1, "k": 0})
    assert out["counts"].min() >= 4
    small = PrivateCentre("B", x[:3], bound=100.0)
    small.disclosure = DisclosurePolicy(nfilter_subset=4)
    assert type(small.cluster_release([np.zeros(3)], {"n_min": 1, "k": 0})).__name__ == "Abstain"


def test_known_io_attacker_needs_more_known_rows_than_genes():
    """With fewer known (x, y) pairs than genes the Procrustes fit is underdetermined: the attack
    looked weak (privacy looked better) without a word."""
    from fedclust.privacy_utility.experiment import run_known_io

    x = np.random.default_rng(0).normal(size=(40, 20))
    cfg = {"known_io": {"bound": 50.0, "fraction": 0.3}, "delta": 1e-5, "seeds": 1,
           "epsilons": [None]}  # fmt: skip
    with pytest.raises(ConfigError, match="fraction"):
        run_known_io(x, cfg, 0)
    curve, _ = run_known_io(x[:, :10], cfg, 0)  # 12 known rows ≥ 10 genes: exact at ε = ∞
    assert curve.loc[curve.metric == "median_rel_error", "value"].max() < 1e-8


def test_known_io_simulated_cohort_checked_at_config_time(repo, default):
    sim = {"rnaseq": {**default["data"]["rnaseq"], "simulate": {
        **default["data"]["rnaseq"]["simulate"], "n_samples": 100}}}  # fmt: skip
    with pytest.raises(ConfigError, match="known_io"):
        _check(repo, default, "known_io", {"genes": 50, "fraction": 0.3}, data=sim)


@pytest.mark.parametrize("local, match", [({"optimiser": "sgd"}, "optimiser"),
                                          ({"lr": "fast"}, "lr")])  # fmt: skip
def test_bayes_local_overrides_checked(repo, default, local, match):
    """A misspelt override (optimiser) was merged and ignored: the run trained with the
    section's optimiser without a word."""
    with pytest.raises(ConfigError, match=match):
        _check(repo, default, "bayes", {"local": local})


def test_bayes_local_override_keys_are_the_sections(repo):
    from fedclust.config import load_yaml as load

    props = load(repo / "config" / "schema.yaml")["properties"]
    section = props["bayes"]["properties"]["federated"]["properties"]["local"]["properties"]
    pu = props["privacy_utility"]["properties"]["bayes"]["properties"]["local"]
    assert set(pu["propertyNames"]["enum"]) == set(section)


@pytest.mark.parametrize("problem, dataset", [("logistic", "diabetes"), ("svm", "boston")])
def test_admm_classifier_on_a_continuous_target(repo, default, problem, dataset):
    """Valid for check-config; the job failed with 'needs a binary target' (both the
    privacy–utility run and an admm.tasks entry)."""
    with pytest.raises(ConfigError, match="binary target"):
        _check(repo, default, "admm", {"problem": problem, "dataset": dataset})
    cfg = copy.deepcopy(default)
    cfg["admm"]["tasks"] = {"x": {"problem": problem, "dataset": dataset, "lam": 0.1}}
    with pytest.raises(ConfigError, match="admm.tasks.x"):
        validate_config(cfg, repo / "config" / "schema.yaml")


@pytest.mark.parametrize("eps", [[1, 1], [1, 1.0, None], [None, None]])
def test_repeated_epsilon_refused(repo, default, eps):
    """A repeated ε repeats its seeds' noise draws (derive_seed per ε): the summary's spread
    counted the same runs twice, without a word."""
    cfg = copy.deepcopy(default)
    cfg["privacy_utility"] = {"enabled": True, "methods": ["km"], "epsilons": eps}
    with pytest.raises(ConfigError, match="epsilons"):
        validate_config(cfg, repo / "config" / "schema.yaml")
