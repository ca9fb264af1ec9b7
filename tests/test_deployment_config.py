"""Reliability probe of the workflow's deployment section (issue 30 C item 12 on the newer
code): a deployed unit naming no ADMM task, or a stage that is not launchable, was 'valid' for
`fedclust check-config` and stopped only the Snakefile's parse; every check that needs only
the config runs at config time."""

from __future__ import annotations

import copy

import pytest
import yaml

from fedclust import deployrun
from fedclust.cli import main as cli_main
from fedclust.config import load_yaml, validate_config
from fedclust.errors import ConfigError


@pytest.mark.parametrize(
    "dep, match",
    [({"units": {"admm": "nosuch"}}, "nosuch"), ({"stages": ["check"]}, "deployment.stages")],
)
def test_deployment_checked_at_config_time(repo, tmp_path, capsys, dep, match):
    """`fedclust check-config` (and `fedclust run`, and the Snakefile's deployment rules) run the
    deployment section's own check: a bad stage or unit is a config error before any job."""
    cfg = load_yaml(repo / "config" / "config.yaml")
    cfg["deployment"] = {"enabled": True, **dep}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    assert cli_main(["check-config", str(bad)]) == 2
    assert match in capsys.readouterr().err
    cfg["deployment"] = {"enabled": True}  # the default stage and unit: valid
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(cfg))
    assert cli_main(["check-config", str(good)]) == 0
    with pytest.raises(ConfigError, match=match):  # the library check the Snakefile calls
        deployrun.check(
            validate_config(
                copy.deepcopy({**cfg, "deployment": {"enabled": True, **dep}}),
                repo / "config" / "schema.yaml",
            )
        )


@pytest.mark.parametrize("dep", [{"stages": ["../x"]}, {"units": {"../x": None}}])
def test_deployment_stage_names_are_path_safe(repo, dep):
    """deployment.stages became results/deployment/<stage>/ without the name pattern."""
    cfg = load_yaml(repo / "config" / "config.yaml")
    cfg["deployment"] = {"enabled": True, **dep}
    with pytest.raises(ConfigError, match="file path"):
        validate_config(cfg, repo / "config" / "schema.yaml")
