"""config/thesis-smoke.yaml (issue 14): thesis.yaml's DAG at tiny sizes, via `base:`."""

from __future__ import annotations

import copy
import re
import subprocess
import sys

import pytest
import yaml

from fedclust.config import SCHEMA, load_config_file, load_yaml, merge_config, validate_config
from fedclust.errors import ConfigError

# the thesis DAG's shape: these keys must equal thesis.yaml's (variants, strategies, splits, ...)
SHAPE = [
    "data.splits", "data.rnaseq.cohorts", "hac.linkages", "hac.gradual.panels",
    "hac.gradual.average_delta", "hac.projection.panels", "hac.projection.compare_median",
    "hac.projection.estimator", "attacks.known_io.preprocessings", "attacks.exclude_for_sex",
    "attacks.property_inference.lrs", "dec.federated_datasets", "dec.splits", "dec.grid",
    "dec.federated.strategies", "dec.federated.centroid_aggregation", "dec.evaluate.survival",
    "decentral.splits", "decentral.modes", "decentral.approaches", "admm.modes",
    "fedcref.variants", "fedcref.experiments.exp1", "fedcref.experiments.exp2",
    "fedcref.experiments.exp3", "survival.scenarios",
    "survival.strategies", "survival.reference_scenarios", "bayes.baselines",
    "bayes.federated.splits", "bayes.fanout", "bayes.priors.gaussian.neg_log_sigma",
    "bayes.priors.mixture.pi", "bayes.priors.mixture.neg_log_sigma1",
    "bayes.priors.mixture.neg_log_sigma2",
]  # fmt: skip


def _get(cfg, dotted):
    for key in dotted.split("."):
        cfg = cfg[key]
    return cfg


def test_merge_config_merges_mappings_and_replaces_lists():
    into = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    assert merge_config(into, {"a": {"y": [3]}, "c": {"z": 1}}) == {
        "a": {"x": 1, "y": [3]}, "b": 1, "c": {"z": 1}}  # fmt: skip


def test_base_chain_resolves_relative_to_the_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.yaml").write_text("seed: 1\nd: {x: 1, y: [1]}\n")
    (tmp_path / "sub" / "b.yaml").write_text("base: ../a.yaml\nd: {y: [2]}\n")
    (tmp_path / "c.yaml").write_text("base: sub/b.yaml\nseed: 3\n")
    assert load_config_file(tmp_path / "c.yaml") == {"seed": 3, "d": {"x": 1, "y": [2]}}
    (tmp_path / "a.yaml").write_text("base: c.yaml\n")
    with pytest.raises(ConfigError, match="name each other as base"):
        load_config_file(tmp_path / "c.yaml")
    (tmp_path / "d.yaml").write_text("base: nothere.yaml\n")
    with pytest.raises(ConfigError, match="base config 'nothere.yaml' not found"):
        load_config_file(tmp_path / "d.yaml")


def test_smoke_config_is_thesis_shaped_small_and_offline(repo):
    thesis = load_yaml(repo / "config" / "thesis.yaml")
    smoke = load_config_file(repo / "config" / "thesis-smoke.yaml")
    assert load_yaml(repo / "config" / "thesis-smoke.yaml")["base"] == "thesis.yaml"
    assert "base" not in smoke
    validate_config(copy.deepcopy(smoke), SCHEMA, source="thesis-smoke.yaml")
    fewer = (
        "data.rnaseq.cohorts",
        "survival.endpoints",
        "dec.federated.centroid_aggregation",
        "bayes.priors.gaussian.neg_log_sigma",
        "bayes.priors.mixture.pi",
        "bayes.priors.mixture.neg_log_sigma1",
        "bayes.priors.mixture.neg_log_sigma2",
    )
    for key in SHAPE:
        if key not in fewer and key != "dec.grid":
            assert _get(smoke, key) == _get(thesis, key), key
    for key in fewer:  # fewer values, same wildcard
        assert 0 < len(_get(smoke, key)) and set(_get(smoke, key)) <= set(_get(thesis, key))
    for axis, values in _get(thesis, "dec.grid").items():  # every grid axis, fewer points
        ours = smoke["dec"]["grid"][axis]
        assert 0 < len(ours) and set(ours) <= set(values)
    for key in ("dec.datasets", "fedcref.datasets", "admm.tasks", "bayes.federated.methods"):
        assert set(_get(smoke, key)) == set(_get(thesis, key)), key
    # offline: nothing to download (IPSS-M comes from the data mirror in CI)
    assert smoke["data"]["rnaseq"]["source"] == "simulated"
    assert smoke["data"]["mnist"]["source"] == "digits"
    assert smoke["bayes"]["data"]["source"] == "digits"
    assert {d["source"] for d in smoke["fedcref"]["datasets"].values()} <= {"digits", "synthetic"}
    # tiny
    assert smoke["survival"]["repetitions"] == 1 and smoke["fedcref"]["repetitions"] == 1
    assert smoke["dec"]["autoencoder"]["epochs"] <= 2 and smoke["decentral"]["rounds"] <= 2
    # one thread per job, so that CI's 2 cores run two jobs at once (a rule left at thesis.yaml's
    # 4-8 threads takes both cores per job: the smoke run went one job at a time, issue 30)
    res = smoke["resources"]
    threads = {r: {**res["default"], **spec}.get("threads", 1) for r, spec in res["rules"].items()}
    assert res["default"]["threads"] == 1 and set(threads.values()) == {1}, threads
    for key in ("data.rnaseq.threads", "hac.projection.threads", "decentral.threads"):
        assert _get(smoke, key) == 1, key


def _job_stats(repo, tmp_path, config):
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "-s", str(repo / "Snakefile"),
         "--directory", str(tmp_path / config), "--configfile", str(repo / "config" / config)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = proc.stdout.split("Job stats:")[1].split("total")[0]
    return dict(re.findall(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M))


@pytest.mark.slow
def test_smoke_dag_has_every_thesis_rule(repo, tmp_path):
    """The Snakefile resolves `base:`: every rule of the thesis DAG runs in the smoke DAG,
    except the downloads the offline sources replace."""
    thesis = _job_stats(repo, tmp_path, "thesis.yaml")
    smoke = _job_stats(repo, tmp_path, "thesis-smoke.yaml")
    downloads = {"download_tcga", "download_tcga_sites", "download_mnist", "download_emnist",
                 "download_kmnist", "download_kmnist49"}  # fmt: skip
    assert set(smoke) == set(thesis) - downloads | {"simulate_rnaseq", "simulate_tss_sites"}
    assert int(smoke["survival_job"]) < int(thesis["survival_job"])
    # every thesis rule, tiny: keep it small (with D6.2 ch. 7's units, the ADMM Boston tasks and
    # the second centralized bound)
    assert 50 < sum(map(int, smoke.values())) < 450
    assert yaml.safe_load((repo / "config" / "thesis-smoke.yaml").read_text())["base"]
