"""The SLURM path, run for real against stand-in SLURM commands (tests/slurm_stubs/).

`sbatch`, `sacct`, `sacctmgr`, `squeue`, `scontrol`, `sinfo` and `srun` stand-ins on PATH record
their arguments and answer as SLURM would (the stand-in sbatch runs the job at once), so a
`snakemake --profile profiles/slurm` run submits real jobs through the installed
snakemake-executor-plugin-slurm and the test sees exactly what reached sbatch.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
STUBS = Path(__file__).resolve().parent / "slurm_stubs"
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"

pytest.importorskip("snakemake_executor_plugin_slurm", reason="SLURM executor plugin absent")
pytest.importorskip("snakemake_executor_plugin_slurm_jobstep", reason="jobstep plugin absent")

# Two independent jobs, so both are submitted at once (the GPU rule's input is built locally first).
CPU_RULE, CPU_TARGET = "mds", "results/data/mds/features.parquet"
GPU_RULE, GPU_TARGET = "decentral_centralized", "results/decentral/centralized/result.json"
GPU_INPUT = "results/data/heart/features.parquet"


def _opt(argv: list[str], flag: str) -> str | None:
    """Value of ``flag`` in an sbatch argv (``-t 15`` or ``--cpus-per-task=2`` forms)."""
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def _run(cmd: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """Run ``cmd`` in its own process group; on timeout kill the group (nested jobs included)."""
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"timed out after {timeout} s: {shlex.join(cmd)}\n{out[-4000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, "")


def _expected(config: dict, profile: dict, rule: str, threads: int) -> dict[str, str | None]:
    """What the profile + config `resources` promise for ``rule`` (set-resources win)."""
    res = config["resources"]
    spec = {**res["default"], **res["rules"].get(rule, {})}
    spec.update(profile["set-resources"].get(rule, {}))
    default = profile["default-resources"]
    return {
        "-A": default["slurm_account"],
        "-p": spec.get("slurm_partition", default["slurm_partition"]),
        "-t": str(spec["runtime"]),
        "--mem": str(spec["mem_mb"]),
        "--cpus-per-task": str(threads),
        "--gpus": str(spec["gpu"]) if spec.get("gpu") else None,
    }


def test_profile_asks_for_gpus_through_resources_not_slurm_extra():
    """Plugin 2.x rejects --gres/--gpus in slurm_extra at submission: the profile avoids it."""
    profile = yaml.safe_load(PROFILE.read_text())
    every = [profile["default-resources"], *profile["set-resources"].values()]
    assert not [r for r in every if "slurm_extra" in r]
    # cpus_per_task in default-resources would override every rule's threads
    assert "cpus_per_task" not in profile["default-resources"]


def test_profile_heavy_rules_match_thesis_resources():
    """profiles/slurm set-resources and config/thesis.yaml `resources` carry the same figures."""
    profile = yaml.safe_load(PROFILE.read_text())
    thesis = yaml.safe_load((REPO / "config" / "thesis.yaml").read_text())["resources"]
    for rule, res in profile["set-resources"].items():
        cfg = {**thesis["default"], **thesis["rules"].get(rule, {})}
        for key in ("mem_mb", "runtime"):
            assert res.get(key, cfg[key]) == cfg[key], (rule, key)
        # every rule sent to the GPU partition asks for a GPU, and vice versa
        assert (res.get("slurm_partition") == "gpu") == bool(cfg.get("gpu")), rule


def test_slurm_profile_submits_cpu_and_gpu_rule(tmp_path: Path):
    state, work = tmp_path / "slurm", tmp_path / "work"
    state.mkdir()
    work.mkdir()
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    # a thread count of its own, so --cpus-per-task is seen to come from the config
    config["resources"]["rules"].setdefault(CPU_RULE, {})["threads"] = 3
    config["decentral"]["threads"] = 1
    config["decentral"]["centralized"]["best_epochs"] = 1  # the job only has to finish
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_"))}
    env.update(
        PATH=os.pathsep.join([str(STUBS), str(Path(sys.executable).parent), env["PATH"]]),
        FEDCLUST_STUB_STATE=str(state),
        PYTHONPATH=str(REPO / "src"),
        MPLBACKEND="Agg",
        OMP_NUM_THREADS="1",
    )
    common = [
        "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(work),
        "--configfile", str(configfile),
    ]  # fmt: skip
    local = [sys.executable, "-m", "snakemake", GPU_INPUT, "--cores", "1", *common]
    proc = _run(local, env, timeout=60)
    assert proc.returncode == 0, proc.stdout[-4000:]
    cmd = [
        sys.executable, "-m", "snakemake", GPU_TARGET, CPU_TARGET,
        "--profile", str(PROFILE.parent),
        *common,
        "--slurm-init-seconds-before-status-checks", "1",
        "--latency-wait", "5",
    ]  # fmt: skip
    proc = _run(cmd, env, timeout=150)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert (work / GPU_TARGET).exists() and (work / CPU_TARGET).exists()

    calls = [json.loads(line) for line in (state / "sbatch_calls.jsonl").read_text().splitlines()]
    by_rule = {_opt(c["argv"], "--comment"): c["argv"] for c in calls}
    assert sorted(by_rule) == sorted([f"rule_{CPU_RULE}", f"rule_{GPU_RULE}"]), by_rule

    profile = yaml.safe_load(PROFILE.read_text())
    want = {
        CPU_RULE: _expected(config, profile, CPU_RULE, threads=3),
        GPU_RULE: _expected(config, profile, GPU_RULE, threads=1),
    }
    for rule, expected in want.items():
        argv = by_rule[f"rule_{rule}"]
        got = {flag: _opt(argv, flag) for flag in expected}
        assert got == expected, f"{rule}: sbatch {shlex.join(argv)}"
        assert not [a for a in argv if a.startswith("--gres")], argv
    # what the assertions above pin down, stated plainly
    assert want[CPU_RULE]["--gpus"] is None and want[GPU_RULE]["--gpus"] == "1"
    assert want[CPU_RULE]["-p"] == "cpu" and want[GPU_RULE]["-p"] == "gpu"
    # both jobs ran their step through srun inside the allocation
    assert len((state / "srun_calls.jsonl").read_text().splitlines()) == 2


def test_every_rule_takes_threads_and_resources_from_config():
    """Each rule block in rules/*.smk declares threads and **job_resources (docs/RESOURCES.md)."""
    missing = []
    for path in sorted((REPO / "rules").glob("*.smk")):
        blocks = re.split(r"^\s*rule\b", path.read_text(), flags=re.M)[1:]
        for block in blocks:
            name = block.split(":", 1)[0].strip() or block.split("\n")[2].strip()
            if "**job_resources(" not in block or "threads:" not in block:
                missing.append(f"{path.name}: {name}")
    assert not missing, (
        'add `threads: job_threads("<rule>")` (or a stage threads key) and '
        f'`resources: **job_resources("<rule>")` to: {missing}'
    )
