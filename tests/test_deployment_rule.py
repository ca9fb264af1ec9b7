"""Issue 30 B.1: a deployment launched from a Snakemake rule (``deployment_run``, config
``deployment``, opt-in): consensus ADMM on the workflow's own centre split, each centre on its
own SuperNode (127.0.0.1), equal bit for bit to the in-process run of the same centre files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from fedclust import deployrun
from fedclust.config import load_config_file
from fedclust.errors import ConfigError


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
    cfg = {"deployment": {"enabled": True, "task": "nope"}, "admm": {"tasks": {"a": {}}}}
    with pytest.raises(ConfigError, match="deployment.task 'nope' is not a task of admm.tasks"):
        deployrun.check(cfg)
    first = {"deployment": {"enabled": True}, "admm": {"tasks": {"a": {}, "b": {}}}}
    assert deployrun.task_name(first) == "a"
    out = _snakemake(repo, tmp_path / "run", _config(repo, tmp_path, task="nope"), "-n")
    assert out.returncode != 0 and "deployment.task 'nope'" in out.stderr + out.stdout


@pytest.mark.slow
def test_the_rule_deploys_admm_on_the_workflow_split_equal_to_inprocess(repo, tmp_path):
    pytest.importorskip("flwr")
    work = tmp_path / "run"
    if not (shutil.which("openssl") and shutil.which("ssh-keygen")):  # pragma: no cover
        pytest.skip("the secure recipe needs openssl and ssh-keygen")
    # TLS and SuperNode authentication, as sites run it (this replaces the localhost test's own
    # ADMM case, tests/test_flower_deploy.py)
    out = _snakemake(repo, work, _config(repo, tmp_path, iterations=2, tls=True),
                     "results/deployment/admm/comparison.json")  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    res = json.loads((work / "results/deployment/admm/comparison.json").read_text())
    assert res["equal"] is True and all(res["equal_by_output"].values()), res
    assert len(res["centres"]) == 2 and res["tls"] is True and res["iterations"] == 2
    assert "wall_s" not in res  # timings: the benchmark twin only
    assert "wall_s" in json.loads((work / "results/benchmarks/deployment/admm.json").read_text())
    hist = pd.read_csv(work / "results/deployment/admm/history.tsv", sep="\t")
    assert len(hist) == 2
    z = pd.read_csv(work / "results/deployment/admm/coefficients.tsv", sep="\t")
    assert (z.deployed == z.inprocess).all() and len(z) == 11  # diabetes: 10 features + bias
    led = pd.read_csv(work / "results/deployment/admm/ledger.tsv", sep="\t")
    assert set(led.sender) - {"server"} == set(res["centres"])
