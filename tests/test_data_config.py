"""The data section of the config schema and the rule-file helpers built on it."""

from __future__ import annotations

import copy

import pytest

from fedclust.config import load_yaml, validate_config
from fedclust.data import workflow as W
from fedclust.errors import ConfigError


@pytest.fixture(scope="module")
def default(repo):
    return validate_config(load_yaml(repo / "config" / "config.yaml"), repo / "config/schema.yaml")


def _check(repo, cfg):
    return validate_config(cfg, repo / "config" / "schema.yaml")


def test_both_configs_validate_with_defaults(repo, default):
    thesis = _check(repo, load_yaml(repo / "config" / "thesis.yaml"))
    assert thesis["data"]["mds"]["simulate"]["n_samples"] == 2043  # default filled in
    assert thesis["data"]["rnaseq"]["cohorts"][0] == "BRCA"
    assert default["data"]["download"]["retries"] == 3


def test_unknown_key_and_bad_values(repo, default):
    cfg = copy.deepcopy(default)
    cfg["data"]["mnist"]["sorce"] = "idx"
    with pytest.raises(ConfigError, match="unknown config key 'sorce'.*did you mean 'source'"):
        _check(repo, cfg)
    cfg = copy.deepcopy(default)
    cfg["data"]["splits"]["x"] = {"kind": "equal", "n_centers": 3, "datasets": ["euromds"]}
    with pytest.raises(ConfigError, match="'euromds' is not an allowed value"):
        _check(repo, cfg)
    cfg = copy.deepcopy(default)
    cfg["data"]["splits"]["x"] = {"kind": "skewed", "datasets": ["mds"]}
    with pytest.raises(ConfigError, match="n_centers"):
        _check(repo, cfg)
    cfg = copy.deepcopy(default)
    cfg["data"]["heart"] = {"imputaton": "median"}  # data.heart is closed too
    with pytest.raises(ConfigError, match="did you mean 'imputation'"):
        _check(repo, cfg)


def test_workflow_helpers(default):
    data = default["data"]
    assert W.split_datasets(data, {"datasets": ["rnaseq", "mds"]}) == [
        "rnaseq/SIMA",
        "rnaseq/SIMB",
        "mds",
    ]
    assert W.rnaseq_raw(data, "clinical") == "results/data/raw/rnaseq/TCGA-{cohort}.clinical.tsv.gz"
    assert W.mds_inputs(data) == {} and W.mnist_inputs(data) == {}
    sources = W.sources(data)
    assert sources["rnaseq/SIMA"].startswith("simulated") and sources["mnist"].startswith("real")
    assert W.splits(data)["mds"]["skewed10"] == "results/data/mds/splits/skewed10.tsv"
