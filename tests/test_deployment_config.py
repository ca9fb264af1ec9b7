"""Reliability probe of the workflow's deployment section (issue 30 C item 12 on the newer
code): `deployment.task` naming no ADMM task was 'valid' for `fedclust check-config` and
stopped only the Snakefile's parse; every check that needs only the config runs at config time."""

from __future__ import annotations

import copy

import pytest

from fedclust.config import load_yaml, validate_config
from fedclust.errors import ConfigError


@pytest.mark.parametrize("task", ["nosuch", "../x"])
def test_deployment_task_checked_at_config_time(repo, task):
    cfg = load_yaml(repo / "config" / "config.yaml")
    cfg["deployment"] = {"enabled": True, "task": task}
    with pytest.raises(ConfigError, match="deployment.task"):
        validate_config(copy.deepcopy(cfg), repo / "config" / "schema.yaml")
    cfg["deployment"]["task"] = None  # the first task: valid
    validate_config(cfg, repo / "config" / "schema.yaml")
