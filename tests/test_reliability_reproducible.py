"""Issue 17 item 16, issue 30 item 7: the same config gives byte-identical result tables.

Two runs of a tiny config of EVERY stage (data, hac, attacks, dec, decentral, admm, perf,
fedcref, survival, bayes, generative, boosting, privacy, report) in two folders, run side by side
(one core each), on the in-process engine (Flower's engines carry the same messages; their
equality with in-process is tested in tests/test_flower*.py and tests/test_deployment.py;
a deployment is not a workflow stage but `fedclust deploy`); every result table
(tsv, tsv.gz, parquet, csv, json) must be byte-identical, the report section JSONs included.
Timing columns live in benchmark files under ``results/benchmarks/`` and logs under
``results/logs/``: both are excluded, and no result file may carry a timing column or key.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pandas as pd
import pytest
import yaml

TABLES = (".tsv", ".tsv.gz", ".parquet", ".csv", ".json")
STAGES = (
    "data", "hac", "attacks", "dec", "decentral", "admm", "perf", "fedcref", "survival", "bayes",
    "generative", "boosting", "privacy", "privacy_utility",
)  # fmt: skip


def tiny_config(repo) -> dict:
    """The default config at toy sizes, every stage on (a few CPU-seconds each)."""
    cfg = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    d = cfg["data"]
    d["rnaseq"].update(cohorts=["SIMA"], top_genes=100)
    d["rnaseq"]["simulate"].update(n_samples=150, n_genes=300)
    d["mds"]["simulate"]["n_samples"] = 400  # ADMM's 55-parameter model: >= 167 rows a centre
    d["mds"]["federated"]["split"] = "uniform5"  # the federated imputation's centres
    d["splits"] = {
        "region": d["splits"]["region"],
        "uniform5": {"kind": "uniform", "n_centers": 5, "datasets": ["mds"]},
        "equal2": {"kind": "equal", "n_centers": 2, "datasets": ["mds"]},
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
    a = cfg["attacks"]
    a["known_io"].update(max_genes=30, fractions=[0.5], n_seeds=1)
    a["property_inference"].update(max_genes=30, n_runs=1, gaussian_k=[10], d_nn=4,
                                   d_nn_small=2, small_input=5, epochs=1)  # fmt: skip
    a["reconstruction"].update(
        n_runs=1, max_genes_no_zero=30, max_genes_all=40, n_projections=1,
        fig4_17_projections=[{"kind": "orthogonal"}], fig4_18_k=[10], fig4_18_pinv_k=[10],
        fig4_19_k=[10], combined={"k": 10, "d_nn": 4, "lrs": [0.001], "epochs": 1,
                                  "batch_size": 32},
        decoders={"linear": {"optimizer": "adam", "lr": 0.001, "epochs": 1},
                  "mlp": {"lr": 0.001, "epochs": 1, "d_nn": 4}},
    )  # fmt: skip
    dec = cfg["dec"]
    dec.update(datasets={"mds": {"k": 4, "selection": "internal"}}, federated_datasets=["mds"],
               splits=["uniform5"], figures={"enabled": False},
               grid={"optimizers": ["adam"], "alphas": [1], "scalers": ["none"]})  # fmt: skip
    dec["tuning"]["enabled"] = False
    dec["model"]["arch"] = [16, 4]
    dec["autoencoder"]["epochs"] = 2
    dec["clustering"].update(max_epochs=2, n_init=2)
    dec["federated"].update(strategies=["fedavg"], centroid_aggregation=["max_min"],  # m >= floor 3
                            ae_rounds=2, dec_rounds=1, min_cluster_size=3)  # fmt: skip
    dec["evaluate"].update(tsne_max_points=60, survival=["OS"])
    d62 = dec["d62"]  # D6.2 ch. 7 at toy size; the HDP (tomotopy) cannot find 6 topics in it
    d62.update(local_epochs=1, autoencoder={"epochs": 2},
               clustering={**d62["clustering"], "epochs": 2})  # fmt: skip
    d62["hdp"]["enabled"] = False
    cfg["decentral"].update(splits=["hospitals"], rounds=1)
    cfg["decentral"]["centralized"]["best_epochs"] = 2  # 38 epochs: the second costliest job
    adm = cfg["admm"]
    adm["max_iter"] = 20
    adm["tasks"] = {
        "ridge_diabetes": adm["tasks"]["ridge_diabetes"],
        "logistic_mds_os": {**adm["tasks"]["logistic_mds_os"], "split": "equal2"},
    }
    cfg["perf"].update(samples=100, genes=200, sketch=20, gene_objects=20, repeat=1)
    f = cfg["fedcref"]
    f.update(repetitions=1, stopping={**f["stopping"], "max_iterations": 1},
             calibration={**f["calibration"], "repetitions": 1})  # fmt: skip
    f["system"]["n_clients"] = 3
    f["autoencoder"].update(hidden=[16, 8], epochs=1)
    f["federated"]["rounds"] = 1
    f["dec"].update(arch=[16, 4], ae_epochs=1, dec_epochs=1, n_init=2)
    f["global_dec"].update(k_max=4, tsne_max_points=60)
    f["experiments"]["exp2"]["dirtiness"] = [0.3]
    f["experiments"]["exp3"]["overlap"] = [0.0]
    f["experiments"]["exp4"]["n_clients"] = [3]
    # the θ-vs-S study trained 10 AEs of 20 epochs at S = 24, 60 and 500 (the run's costliest
    # job): one size, one epoch still runs fedcref_size end to end (issue 30 B.6)
    f["size_study"].update(sizes=[24], autoencoder={"epochs": 1, "batch_size": 32, "patience": 1})
    s = cfg["survival"]
    # 450 training patients, 38 covariates: 150 a centre, so nfilter_glm 0.33 lets the Cox sums out
    s.update(source="simulated", simulate_n=600, min_carriers=60, repetitions=1, n_centres=3,
             scenarios=["iid_balanced", "noniid_bm_blast"], isolated_folds=2,
             strategies=["isolated", "sequential", "weights_averaging", "centralized"],
             reference_scenarios=["iid_balanced"],
             grid={"federated_epochs": [1], "internal_epochs": [1], "batches": [1],
                   "lr": [0.01]})  # fmt: skip
    b = cfg["bayes"]
    b["model"]["hidden"] = [8]
    b["train"].update(epochs=1, mc_test=2)
    b["baselines"] = ["sgd"]
    bf = b["federated"]
    bf.update(n_clients=3, model={**bf["model"], "hidden": [8]},
              splits={"iid": bf["splits"]["iid"]})  # the headline unit's split  # fmt: skip
    bf["local"].update(epochs=1, mc_test=2)
    for method in bf["methods"].values():
        method["rounds"] = 1
    b["conjugate"].update(n=100, rounds=5)
    g = cfg["generative"]
    g["savae"].update(datasets={"mds": {"n_good": 60, "n_poor": 10, "n_test": 30,
                                        "rates": [0.5]}}, n_virtual=50)  # fmt: skip
    g["savae"]["train"].update(rounds=1, local_epochs=1)
    g["dgd"].update(datasets={"rnaseq": {"data": "rnaseq", "split": "column"}})
    g["dgd"]["rnaseq"]["max_genes"] = 50
    g["dgd"]["train"].update(rounds=1, local_epochs=1, test_steps=5)
    g["radialgan"].update(alpha=["d62"])
    g["radialgan"]["train"]["iterations"] = 5
    bo = cfg["boosting"]
    hospital = bo["datasets"]["heart"]["splits"]["hospital"]
    equal2 = {"kind": "data", "name": "equal2"}  # the data stage's split
    mds = {**bo["datasets"]["mds"], "splits": {"equal2": equal2}}
    bo.update(trees=3, vote={**bo["vote"], "top": [1, "all"]},
              datasets={"heart": {"splits": {"hospital": hospital}},
                        "mds": mds})  # fmt: skip
    pu = cfg["privacy_utility"]
    pu.update(epsilons=[1, None], seeds=1)
    for method in ("dp_lloyd", "km", "dec"):
        pu[method]["split"] = "uniform5"
    pu["dp_lloyd"]["k"] = pu["dec"]["n_init"] = 2
    pu["dec"]["ae_rounds"] = 1
    pu["known_io"]["genes"] = 20
    for stage in STAGES[1:]:
        cfg[stage]["enabled"] = True
    return cfg


def _start(repo, workdir):
    workdir.mkdir()
    (workdir / "c.yaml").write_text(yaml.safe_dump(tiny_config(repo)))
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    env.pop("FEDCLUST_DATA_MIRROR", None)
    return subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "1", "-q", "-s", str(repo / "Snakefile"),
         "--configfile", str(workdir / "c.yaml"), "--directory", str(workdir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip


def _tables(workdir):
    return {
        p.relative_to(workdir).as_posix(): p.read_bytes()
        for p in (workdir / "results").rglob("*")
        if p.is_file() and p.name.endswith(TABLES)
    }


def _keys(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _keys(v)


@pytest.fixture(scope="module")
def two_runs(repo, tmp_path_factory):
    """Two runs of the tiny all-stage config, side by side (the one pair every check reuses)."""
    root = tmp_path_factory.mktemp("repro")
    procs = [_start(repo, root / name) for name in ("a", "b")]
    try:
        for proc in procs:  # ~3 min on 2 idle cores; generous for a shared machine
            out = proc.communicate(timeout=3600)[0]
            assert proc.returncode == 0, out[-3000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return root / "a", root / "b"


@pytest.mark.slow
def test_item16_two_runs_give_byte_identical_result_tables(two_runs):
    from fedclust.io import TIMING_COLUMNS

    ra, rb = two_runs
    a, b = _tables(ra), _tables(rb)
    results = sorted(k for k in a if not k.startswith(("results/logs/", "results/benchmarks/")))
    assert sorted(a) == sorted(b)
    assert "results/hac/tables/table41.tsv" in results and len(results) > 100
    differ = [k for k in results if a[k] != b[k]]
    assert differ == []
    # the timing columns moved to the benchmark files, next to the same rows
    for name in ("hac/SIMA/gradual.tsv", "hac/SIMA/projection.tsv", "hac/tables/table41.tsv"):
        res = pd.read_csv(ra / "results" / name, sep="\t")
        bench_name = name.replace("tables/", "")
        bench = pd.read_csv(ra / "results" / "benchmarks" / bench_name, sep="\t")
        assert "seconds" in bench.columns and not set(TIMING_COLUMNS) & set(res.columns)
        pd.testing.assert_frame_equal(res, bench[res.columns])
    # gzip members carry no timestamp
    gz = ra / "results" / "data" / "raw" / "rnaseq" / "TCGA-SIMA.star_counts.tsv.gz"
    assert gz.read_bytes()[4:8] == b"\0\0\0\0" and gzip.decompress(gz.read_bytes())


@pytest.mark.slow
def test_issue30_item07_every_stage_and_report_section_is_byte_identical(two_runs):
    """Every stage ran and wrote its section; the section JSONs, the FedCRef / survival / ADMM
    tables and the per-unit result JSONs are identical (they held timing columns and a
    wall-time sentence before); their timings are in the benchmark twins."""
    ra, rb = two_runs
    a, b = _tables(ra), _tables(rb)
    sections = sorted(k for k in a if k.startswith("results/report/sections/"))
    assert sections == [f"results/report/sections/{s}.json" for s in sorted((*STAGES, "dec_d62"))]
    assert [k for k in sections if a[k] != b[k]] == []
    for stage in ("fedcref", "survival", "admm"):
        files = [k for k in a if k.startswith(f"results/{stage}/")]
        assert files and [k for k in files if a[k] != b[k]] == [], stage
    assert "Wall time" not in a["results/report/sections/survival.json"].decode()
    bench = ra / "results" / "benchmarks"
    assert "wall_s" in pd.read_csv(bench / "survival" / "all_results.tsv", sep="\t")
    assert "seconds" in pd.read_csv(bench / "admm" / "tables" / "summary.tsv", sep="\t")
    assert "s / iteration (wall)" in pd.read_csv(bench / "fedcref/tables/table3.tsv", sep="\t")
    assert "sentence" in json.loads((bench / "survival" / "wall_time.json").read_text())


@pytest.mark.slow
def test_issue30_item07_no_result_file_carries_a_timing_column_or_key(two_runs):
    """The guard for stages to come: no table or JSON outside results/benchmarks/ has a column
    or key that names a time measurement (fedclust.report.compare.is_timing_column)."""
    from fedclust.report.compare import is_timing_column

    ra, _ = two_runs
    found = []
    for p in (ra / "results").rglob("*"):
        rel = p.relative_to(ra).as_posix()
        if not p.is_file() or rel.startswith(("results/logs/", "results/benchmarks/")):
            continue
        if p.name.endswith(".json"):
            names = set(_keys(json.loads(p.read_text())))
        elif p.name.endswith(".parquet"):
            names = set(pd.read_parquet(p).columns)
        elif p.name.endswith((".tsv", ".tsv.gz", ".csv")):
            sep = "," if p.name.endswith(".csv") else "\t"
            try:
                names = set(pd.read_csv(p, sep=sep, nrows=0).columns)
            except pd.errors.EmptyDataError:  # a step that did not run (the HDP here)
                names = set()
        else:
            continue
        found += [(rel, n) for n in names if is_timing_column(n)]
    assert found == []


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
