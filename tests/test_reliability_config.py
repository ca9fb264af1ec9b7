"""Issue 17, config items: every bad config fails at once with file/key, never a silent result.

Test names carry the issue item number (``test_item01_...``).
"""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from fedclust.config import load_yaml, validate_config
from fedclust.errors import ConfigError


@pytest.fixture(scope="module")
def default(repo):
    return load_yaml(repo / "config" / "config.yaml")


def _check(repo, cfg):
    return validate_config(copy.deepcopy(cfg), repo / "config" / "schema.yaml")


# ---- item 1: stage lists must name what the data section defines -----------------------------


@pytest.mark.parametrize(
    ("section", "key", "value", "match"),
    [
        ("hac", "cohorts", ["NOPE"], "hac.cohorts.*'NOPE'.*data.rnaseq.cohorts"),
        ("attacks", "cohorts", ["SIMA", "NOPE"], "attacks.cohorts.*'NOPE'"),
        ("dec", "splits", ["uniform10", "nosuch"], "dec.splits.*'nosuch'.*data.splits"),
        ("dec", "federated_datasets", ["mnist", "heart2"], "federated_datasets.*'heart2'"),
        ("dec", "datasets", {"mds": {"k": 6}, "euromds": {"k": 3}}, "dec.datasets.*'euromds'"),
    ],
)
def test_item01_stage_lists_must_be_defined_by_data(repo, default, section, key, value, match):
    cfg = copy.deepcopy(default)
    cfg[section][key] = value
    with pytest.raises(ConfigError, match=match):
        _check(repo, cfg)


def test_item01_dec_split_must_cover_federated_datasets(repo, default):
    cfg = copy.deepcopy(default)
    cfg["dec"]["splits"] = ["dirichlet10"]  # applies to mnist/bmnist only, dec federates mds
    with pytest.raises(ConfigError, match=r"dec.splits \(dirichlet10\).*'mds'"):
        _check(repo, cfg)


def test_item01_check_config_cli_rejects_unknown_cohort(repo, default, tmp_path, capsys):
    from fedclust.cli import main

    cfg = copy.deepcopy(default)
    cfg["hac"]["cohorts"] = ["NOPE"]
    path = tmp_path / "c.yaml"
    import yaml

    path.write_text(yaml.safe_dump(cfg))
    assert main(["check-config", str(path)]) == 2
    assert "NOPE" in capsys.readouterr().err


# ---- item 8: duplicate YAML keys --------------------------------------------------------------


def test_item08_duplicate_yaml_key_rejected_with_line(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("seed: 1\ndata:\n  mirror: null\nseed: 2\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'seed' \(first defined on line 1\)") as e:
        load_yaml(path)
    assert f"{path}:4:1" in str(e.value)
    nested = tmp_path / "nested.yaml"
    nested.write_text("a:\n  b: 1\n  c: 2\n  b: 3\n")
    with pytest.raises(ConfigError, match="duplicate key 'b'"):
        load_yaml(nested)
    ok = tmp_path / "ok.yaml"  # the same key in different mappings is fine; merges still work
    ok.write_text("x: &base {k: 1}\ny: {<<: *base, j: 2}\nz: {k: 3}\n")
    assert load_yaml(ok) == {"x": {"k": 1}, "y": {"k": 1, "j": 2}, "z": {"k": 3}}


# ---- item 11: YAML syntax errors name file, line and column ------------------------------------


def test_item11_yaml_syntax_error_names_file_line_column(tmp_path, capsys):
    from fedclust.cli import main

    path = tmp_path / "broken.yaml"
    path.write_text("seed: 1\ndata:\n  mirror: [a, b\nreport: {}\n")
    with pytest.raises(ConfigError, match="invalid YAML") as e:
        load_yaml(path)
    assert f"{path}:4:" in str(e.value)
    assert main(["check-config", str(path)]) == 2  # a message, not a parser traceback
    err = capsys.readouterr().err
    assert "invalid YAML" in err and f"{path}:4:" in err and "Traceback" not in err
    assert main(["run", "--config", str(path), "-n"]) == 2


def test_item08_snakemake_run_rejects_duplicate_key_with_line(repo, tmp_path):
    """Through Snakemake itself (its own loader keeps the last key): the Snakefile rechecks."""
    path = tmp_path / "dup.yaml"
    path.write_text((repo / "config" / "config.yaml").read_text() + "\nseed: 5\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--cores",
            "1",
            "-s",
            str(repo / "Snakefile"),
            "--configfile",
            str(path),
            "--directory",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "duplicate key 'seed'" in proc.stderr + proc.stdout
    assert f"{path}:" in proc.stderr + proc.stdout


# ---- item 12: simulated cohorts with more clusters than samples --------------------------------


@pytest.mark.parametrize("section", ["rnaseq", "mds"])
def test_item12_more_clusters_than_samples_rejected(repo, default, section):
    cfg = copy.deepcopy(default)
    cfg["data"][section]["simulate"].update(n_samples=12, n_clusters=20)
    with pytest.raises(ConfigError, match=f"data.{section}.simulate: more clusters"):
        _check(repo, cfg)


# ---- item 14: defaults filled recursively, additionalProperties included ----------------------


def test_item14_defaults_filled_under_additional_properties(repo, default):
    cfg = copy.deepcopy(default)
    equal8 = cfg["data"]["splits"]["equal8"]  # the ADMM MDS task's split (checked too)
    cfg["data"]["splits"] = {"s": {"kind": "skewed", "n_centers": 3, "datasets": ["mds"]},
                             "equal8": equal8}  # fmt: skip
    cfg["dec"]["splits"] = ["s"]
    cfg["privacy_utility"]["enabled"] = False  # its splits are gone from data.splits too
    out = _check(repo, cfg)
    spec = out["data"]["splits"]["s"]
    assert (spec["skewness"], spec["alpha"], spec["column"]) == (4, 0.5, "center")
    assert out["dec"]["datasets"]["mds"]["selection"] == "internal"  # given value kept
    cfg["dec"]["datasets"]["mds"].pop("selection")
    assert _check(repo, cfg)["dec"]["datasets"]["mds"]["selection"] == "accuracy"


def test_item14_split_defaults_come_from_schema_only(repo):
    """data/split.py repeats no default: the schema value decides (a changed schema is seen)."""
    from fedclust.data import split

    src = (repo / "src" / "fedclust" / "data" / "split.py").read_text()
    assert 'spec.get("skewness"' not in src and 'spec.get("alpha"' not in src
    assert 'spec.get("column"' not in src
    import pandas as pd

    obs = pd.DataFrame({"center": ["a", "b", "a"]}, index=["x", "y", "z"])
    t = split.split_table(obs, {"kind": "column", "centers": ["a", "b"]}, seed=1)
    assert t["center"].tolist() == ["a", "b", "a"]  # column default 'center' from the schema


# ---- item 15: names that become paths -----------------------------------------------------------


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c["data"]["splits"].update({"../../../../../X": {"kind": "equal"}}),
        lambda c: c["data"]["splits"]["region"].update(centers=["ok", "../evil"]),
        lambda c: c["data"]["splits"]["region"].update(centers=["a b"]),
        lambda c: c["hac"].update(cohorts=["../SIMA"]),
        lambda c: c["dec"]["datasets"].update({"x/../y": {"k": 2}}),
    ],
)
def test_item15_path_names_restricted(repo, default, mutate):
    cfg = copy.deepcopy(default)
    mutate(cfg)
    with pytest.raises(ConfigError, match="file path"):
        _check(repo, cfg)


def test_item15_generated_center_names_checked():
    from fedclust.data.split import spec_centers

    assert spec_centers({"kind": "equal", "n_centers": 2}) == ["c00", "c01"]
    with pytest.raises(ConfigError, match="file path"):
        spec_centers({"kind": "column", "centers": ["North", "../../etc"]})


# ---- item 13: a non-editable install finds the schema and the workflow ------------------------


def test_item13_find_workflow_from_cwd_flag_or_error(repo, tmp_path):
    from fedclust import cli

    assert cli.find_workflow(cwd=repo / "config") == repo  # a parent of the working directory
    assert cli.find_workflow(str(repo), cwd=tmp_path) == repo  # --workflow
    with pytest.raises(ConfigError, match="does not point to a fedclust workflow"):
        cli.find_workflow(str(tmp_path))
    old = cli.CHECKOUT
    try:  # as installed in site-packages: no checkout above the package
        cli.CHECKOUT = tmp_path / "site-packages"
        with pytest.raises(ConfigError, match="--workflow DIR"):
            cli.find_workflow(cwd=tmp_path)
    finally:
        cli.CHECKOUT = old


def test_item13_wheel_install_check_config_and_where(repo, tmp_path):
    """Build a wheel (no isolation, ~5 s), install it in a folder, run the CLI outside the repo."""
    import shutil

    src = tmp_path / "src"
    shutil.copytree(
        repo / "src",
        src / "src",
        symlinks=True,
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    shutil.copytree(repo / "config", src / "config")
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(repo / f, src / f)
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "w"), str(src)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    site = tmp_path / "site"
    wheel = next((tmp_path / "w").glob("*.whl"))
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    run = lambda *a, cwd=tmp_path: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "fedclust.cli", *a],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )
    out = run("check-config", str(repo / "config" / "config.yaml"))
    assert out.returncode == 0, out.stderr
    assert (site / "fedclust" / "schema.yaml").read_text() == (
        repo / "config" / "schema.yaml"
    ).read_text()
    out = run("where")  # outside any checkout: a clear error, not a site-packages path
    assert out.returncode == 2 and "--workflow" in out.stderr
    assert run("where", cwd=repo / "rules").stdout.strip() == str(repo)
    assert run("--workflow", str(repo), "where").stdout.strip() == str(repo)
