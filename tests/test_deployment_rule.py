"""Issue 30 B.1: deployments launched from a Snakemake rule (``deployment_run``, config
``deployment``, opt-in, one job per stage of ``deployment.stages``): a dry run planning every
launchable stage, and consensus ADMM on the workflow's own centre split, each centre on its own
SuperNode (127.0.0.1), equal bit for bit to the in-process run of the same centre files (the
one localhost test; every stage through the rule's library function in-process:
tests/test_deployment_workflow.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from fedclust import deployrun
from fedclust.config import load_config_file


def _config(repo, tmp_path, **dep):
    cfg = {"base": str(repo / "config" / "config.yaml"),
           "admm": {"tasks": {"ridge_diabetes": {"problem": "ridge", "dataset": "diabetes",
                                                 "lam": 0.1, "n_blocks": 2}}},
           "deployment": {"enabled": True, **dep}}  # fmt: skip
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _snakemake(repo, workdir, config, *args):
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    env.pop("FEDCLUST_DATA_MIRROR", None)
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "-s", str(repo / "Snakefile"),
         "--configfile", str(config), "--directory", str(workdir), *args],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip


def test_the_rule_is_off_by_default_and_checked_at_config_time(repo, tmp_path):
    for name in ("config.yaml", "thesis.yaml", "thesis-smoke.yaml"):
        cfg = load_config_file(repo / "config" / name)
        assert not cfg.get("deployment", {}).get("enabled", False), name
    out = _snakemake(repo, tmp_path / "run", _config(repo, tmp_path, units={"admm": "nope"}), "-n")
    assert out.returncode != 0 and "deployment.units.admm 'nope'" in out.stderr + out.stdout


def test_a_dry_run_plans_one_job_per_stage(repo, tmp_path):
    """``deployment.stages``: one ``deployment_run`` job per stage (the ``{stage}`` wildcard),
    each after the data rules its centres come from; ``rule all`` asks for every comparison."""
    stages = list(deployrun.STAGES)
    out = _snakemake(repo, tmp_path / "run", _config(repo, tmp_path, stages=stages), "-n")
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    text = out.stdout + out.stderr
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", text, re.M))
    assert jobs["deployment_run"] == str(len(stages)), jobs
    for s in stages:
        assert f"results/deployment/{s}/comparison.json" in text
    # each stage's inputs: the data stage's tables its workflow rule reads
    for rule in ("data_heart", "survival_cohort", "mds"):
        assert rule in jobs, jobs


@pytest.mark.slow
def test_the_rule_deploys_admm_on_the_workflow_split_equal_to_inprocess(repo, tmp_path):
    pytest.importorskip("flwr")
    work = tmp_path / "run"
    if not (shutil.which("openssl") and shutil.which("ssh-keygen")):  # pragma: no cover
        pytest.skip("the secure recipe needs openssl and ssh-keygen")
    # TLS and SuperNode authentication, as sites run it (this replaces the localhost test's own
    # ADMM case, tests/test_flower_deploy.py); the other stages through the same library
    # function in-process: tests/test_deployment_workflow.py
    out = _snakemake(repo, work, _config(repo, tmp_path, iterations=2, tls=True),
                     "results/deployment/admm/comparison.json")  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    res = json.loads((work / "results/deployment/admm/comparison.json").read_text())
    assert res["equal"] is True and all(res["equal_by_output"].values()), res
    assert res["engine"] == "localhost" and res["unit"] == "ridge_diabetes"
    assert len(res["centres"]) == 2 and res["tls"] is True and res["values"]["iterations"] == 2
    assert "wall_s" not in res  # timings: the benchmark twin only
    assert "wall_s" in json.loads((work / "results/benchmarks/deployment/admm.json").read_text())
    result = pd.read_csv(work / "results/deployment/admm/result.tsv", sep="\t")
    assert result["equal"].all()
    z = result[result.output == "z"]
    assert (z.deployed == z.inprocess).all() and len(z) == 11  # diabetes: 10 features + bias
    assert (result.output == "history.objective").sum() == 2
    led = pd.read_csv(work / "results/deployment/admm/ledger.tsv", sep="\t")
    assert set(led.sender) - {"server"} == set(res["centres"])
