"""Issue 17 item 16: the same config gives byte-identical result tables.

Two runs of a tiny config (data stage + the hac stage) in two folders; every result table
(tsv, tsv.gz, parquet, csv, json) must be byte-identical. Timing columns live in benchmark
files under ``results/benchmarks/`` and logs under ``results/logs/``: both are excluded.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pandas as pd
import pytest
import yaml

TABLES = (".tsv", ".tsv.gz", ".parquet", ".csv", ".json")
TARGETS = ("results/data/summary.tsv", "results/report/sections/hac.json")


def tiny_config(repo) -> dict:
    """The default config at toy sizes, only the data and hac stages."""
    cfg = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    d = cfg["data"]
    d["rnaseq"].update(cohorts=["SIMA"], top_genes=100)
    d["rnaseq"]["simulate"].update(n_samples=150, n_genes=300)
    d["mds"]["simulate"]["n_samples"] = 150
    d["mds"]["federated"]["split"] = "uniform5"  # the federated imputation's centres
    d["splits"] = {
        "region": d["splits"]["region"],
        "uniform5": {"kind": "uniform", "n_centers": 5, "datasets": ["mds"]},
    }
    h = cfg["hac"]
    h["linkages"] = ["average", "ward"]
    h["gradual"].update(panels=[["vst", "euclidean"]], n_min=[2, 5])
    h["simultaneous"]["n_min"] = [2, 3]  # 2: refused by the centres' floor (a skipped row)
    h["projection"].update(
        panels=[["vst", "euclidean"], ["vst", "cityblock"]], sketch_sizes=[10], seeds=1
    )
    h["exact"]["genes"] = 50
    h["toy"].update(runs=1, n_min=[2, 5], sketch_sizes=[5, 10], n=30, dim=40, spreads=[0.1],
                    spread_points=30, spread_runs=1)  # fmt: skip
    for stage, section in cfg.items():  # every stage but data and hac off
        if stage != "hac" and isinstance(section, dict) and "enabled" in section:
            section["enabled"] = False
    return cfg


def _run(repo, workdir):
    workdir.mkdir()
    (workdir / "c.yaml").write_text(yaml.safe_dump(tiny_config(repo)))
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", *TARGETS, "--cores", "1", "-q", "-s",
         str(repo / "Snakefile"), "--configfile", str(workdir / "c.yaml"),
         "--directory", str(workdir)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {
        p.relative_to(workdir).as_posix(): p.read_bytes()
        for p in (workdir / "results").rglob("*")
        if p.is_file() and p.name.endswith(TABLES)
    }


@pytest.mark.slow
def test_item16_two_runs_give_byte_identical_result_tables(repo, tmp_path):
    from fedclust.io import TIMING_COLUMNS

    a, b = _run(repo, tmp_path / "a"), _run(repo, tmp_path / "b")
    results = sorted(k for k in a if not k.startswith(("results/logs/", "results/benchmarks/")))
    assert sorted(a) == sorted(b)
    assert "results/hac/tables/table41.tsv" in results and len(results) > 20
    differ = [k for k in results if a[k] != b[k]]
    assert differ == []
    # the timing columns moved to the benchmark files, next to the same rows
    for name in ("hac/SIMA/gradual.tsv", "hac/SIMA/projection.tsv", "hac/tables/table41.tsv"):
        res = pd.read_csv(tmp_path / "a" / "results" / name, sep="\t")
        bench_name = name.replace("tables/", "")
        bench = pd.read_csv(tmp_path / "a" / "results" / "benchmarks" / bench_name, sep="\t")
        assert "seconds" in bench.columns and not set(TIMING_COLUMNS) & set(res.columns)
        pd.testing.assert_frame_equal(res, bench[res.columns])
    # gzip members carry no timestamp
    gz = tmp_path / "a" / "results" / "data" / "raw" / "rnaseq" / "TCGA-SIMA.star_counts.tsv.gz"
    assert gz.read_bytes()[4:8] == b"\0\0\0\0" and gzip.decompress(gz.read_bytes())


def test_item16_gzip_tables_carry_no_time_or_name(tmp_path):
    import time

    from fedclust.data.simulate import _write_gz_tsv
    from fedclust.io import write_table

    df = pd.DataFrame({"x": [1.5, 2.0]}, index=["a", "b"])
    write_table(tmp_path / "one.tsv.gz", df)
    _write_gz_tsv(str(tmp_path / "three.tsv.gz"), df, index=True)
    time.sleep(1.1)
    write_table(tmp_path / "two.tsv.gz", df)
    one, two = (tmp_path / "one.tsv.gz").read_bytes(), (tmp_path / "two.tsv.gz").read_bytes()
    assert one == two == (tmp_path / "three.tsv.gz").read_bytes()
    assert one[4:8] == b"\0\0\0\0" and one[3] & 0x08 == 0  # mtime 0, no FNAME field
    assert gzip.decompress(one).decode() == "\tx\na\t1.5\nb\t2.0\n"


def test_item16_timing_columns_go_to_the_benchmark_file(tmp_path):
    from fedclust.io import write_result_and_benchmark

    df = pd.DataFrame({"n_min": [2, 5], "ccc": [0.9, 0.8], "seconds": [0.1, 0.2],
                       "pooled_seconds": [0.3, 0.3]})  # fmt: skip
    write_result_and_benchmark(tmp_path / "r.tsv", tmp_path / "bench" / "r.tsv", df)
    assert list(pd.read_csv(tmp_path / "r.tsv", sep="\t").columns) == ["n_min", "ccc"]
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "bench" / "r.tsv", sep="\t"), df)
