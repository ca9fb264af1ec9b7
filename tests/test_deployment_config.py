"""Reliability probe of the workflow's deployment section (issue 30 C item 12 on the newer
code): a deployed unit naming no ADMM task, or a stage that is not launchable, was 'valid' for
`fedclust check-config` and stopped only the Snakefile's parse; every check that needs only
the config runs at config time."""

from __future__ import annotations

import copy

import pytest

from fedclust.config import load_yaml, validate_config
from fedclust.errors import ConfigError


@pytest.mark.parametrize(
    "dep, match",
    [({"units": {"admm": "nosuch"}}, "nosuch"), ({"stages": ["check"]}, "deployment.stages")],
)
def test_deployment_checked_at_config_time(repo, dep, match):
    cfg = load_yaml(repo / "config" / "config.yaml")
    cfg["deployment"] = {"enabled": True, **dep}
    with pytest.raises(ConfigError, match=match):
        validate_config(copy.deepcopy(cfg), repo / "config" / "schema.yaml")
    cfg["deployment"] = {"enabled": True}  # the default stage and unit: valid
    validate_config(cfg, repo / "config" / "schema.yaml")


@pytest.mark.parametrize("dep", [{"stages": ["../x"]}, {"units": {"../x": None}}])
def test_deployment_stage_names_are_path_safe(repo, dep):
    """deployment.stages became results/deployment/<stage>/ without the name pattern."""
    cfg = load_yaml(repo / "config" / "config.yaml")
    cfg["deployment"] = {"enabled": True, **dep}
    with pytest.raises(ConfigError, match="file path"):
        validate_config(cfg, repo / "config" / "schema.yaml")
