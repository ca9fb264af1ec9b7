"""benchmarks/compare_tables.py (fedclust.report.compare): two runs' tables, cell for cell."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from fedclust.io import write_json, write_table
from fedclust.report.compare import (
    compare_frames,
    compare_runs,
    exit_code,
    format_report,
    is_timing_column,
    main,
)


@pytest.mark.parametrize(
    "name", ["seconds", "pooled_seconds", "wall_s", "steps_per_s", "cpu_time", "init_seconds",
             "cpu_seconds_per_iteration", "Elapsed", "ETA", "runtime", "fit_time", "time_s", "s"],
)  # fmt: skip
def test_timing_columns_are_recognised(name):
    assert is_timing_column(name)


@pytest.mark.parametrize(
    "name", ["time", "theta", "beta_federated", "RUNX1", "run", "n_samples", "rounds", "s_min",
             "survival", "floats_per_center_max", "events", "S", "time_q25", "time_min"],
)  # fmt: skip
def test_result_columns_are_kept(name):
    assert not is_timing_column(name)


def _runs(tmp_path):
    a, b = tmp_path / "a" / "results", tmp_path / "b" / "results"
    base = pd.DataFrame({"method": ["x", "y", "z"], "ccc": [0.5, 0.25, np.nan], "k": [1, 2, 3]})
    rng = np.random.default_rng(0)
    for root in (a, b):
        write_table(root / "hac" / "same.tsv", base.assign(seconds=rng.random(3)), False)
        write_table(root / "data" / "m.parquet", pd.DataFrame({"g1": [1.0, 2.0]}, ["s1", "s2"]))
        write_table(root / "benchmarks" / "r" / "b.tsv", base.assign(k=rng.random(3)), False)
        (root / "logs").mkdir()
        (root / "logs" / "x.tsv").write_text(str(rng.random()))
    changed = base.copy()
    changed.loc[1, "ccc"] = 0.2
    changed.loc[2, "method"] = "w"
    write_table(a / "hac" / "diff.tsv.gz", base, False)
    write_table(b / "hac" / "diff.tsv.gz", changed, False)
    write_json(a / "dec" / "r.json", {"acc": [0.9, 0.8], "n": 3, "wall_s": 1.0, "name": "q"})
    write_json(b / "dec" / "r.json", {"acc": [0.9, 0.85], "n": 3, "wall_s": 9.0, "name": "q"})
    write_table(a / "old.csv", base, False)
    write_table(b / "new.csv", base, False)
    return a, b


def test_compare_runs_reports_every_table(tmp_path):
    a, b = _runs(tmp_path)
    diffs = {d.path: d for d in compare_runs(tmp_path / "a", b)}  # run folder or results/
    assert {p: d.status for p, d in diffs.items()} == {
        "data/m.parquet": "identical", "hac/same.tsv": "identical", "hac/diff.tsv.gz": "differs",
        "dec/r.json": "differs", "old.csv": "only_before", "new.csv": "only_after",
    }  # fmt: skip
    d = diffs["hac/diff.tsv.gz"]
    assert (d.cells, d.differing) == (9, 2)
    assert d.max_abs_diff == pytest.approx(0.05)
    assert [(r, c) for r, c, _, _ in d.examples] == [(1, "ccc"), (2, "method")]
    j = diffs["dec/r.json"]  # wall_s ignored, one leaf differs
    assert (j.cells, j.differing, j.examples[0][0]) == (8, 1, "acc[1]")
    assert j.max_abs_diff == pytest.approx(0.05)
    assert diffs["data/m.parquet"].cells == 4  # index reset: a column like any other
    assert diffs["hac/same.tsv"].ignored_columns == ["seconds"]
    assert exit_code(list(diffs.values())) == 1
    text = format_report(list(diffs.values()))
    assert "DIFFERS      hac/diff.tsv.gz: 2 of 9 cells, max abs diff 0.05" in text
    assert "row 2 column 'method': 'z' -> 'w'" in text
    assert "6 tables: 2 identical, 2 differ, 1 only before, 1 only after" in text
    only = compare_runs(a, b, include=["data/", "hac/same*"])
    assert [d.path for d in only] == ["data/m.parquet", "hac/same.tsv"]
    assert exit_code(only) == 0 and exit_code(compare_runs(a, b, include=["*.csv"])) == 0
    assert exit_code(compare_runs(a, b, include=["*.csv"]), strict=True) == 1


def test_shapes_nan_and_tolerance():
    a = pd.DataFrame({"x": [1.0, np.nan, 3.0], "y": ["a", None, "c"]})
    assert compare_frames("t", a, a.copy()).status == "identical"  # NaN == NaN
    b = a.assign(x=[1.0, np.nan, 3.0 + 1e-12])
    assert compare_frames("t", a, b).differing == 1
    assert compare_frames("t", a, b, atol=1e-9).status == "identical"
    c = pd.concat([a, a.iloc[:1]], ignore_index=True).assign(z=1)
    d = compare_frames("t", a, c)
    assert d.status == "differs" and d.differing == 2 + 4  # one extra row, one extra column
    assert d.notes == ["columns only after: z", "rows: 3 before vs 4 after"]
    assert compare_frames("t", a, a[["y", "x"]]).notes == ["same columns in a different order"]
    assert compare_frames("t", a, a.iloc[::-1], ignore_row_order=True).status == "identical"
    assert compare_frames("t", a.assign(k=1), a.assign(k=1.0)).status == "identical"


def test_json_leaves_are_aligned_by_key(tmp_path):
    from fedclust.report.compare import read_any

    write_json(tmp_path / "a.json", {"a": 1, "c": {"d": [1, 2]}, "e": "x", "seconds": 3})
    write_json(tmp_path / "b.json", {"a": 1, "b": 2, "c": {"d": [1, 5]}, "e": "x"})
    a, b = read_any(tmp_path / "a.json"), read_any(tmp_path / "b.json")
    d = compare_frames("j", a, b, json_rows=True)
    assert d.notes == ["keys only after: b"]
    assert (d.differing, d.max_abs_diff, d.examples[0][:2]) == (2, 3.0, ("c.d[1]", "value"))


def test_cli(tmp_path, repo, capsys):
    a, b = _runs(tmp_path)
    assert main([str(a), str(b), "--only", "hac/same.tsv"]) == 0
    assert "identical    hac/same.tsv (9 cells)" in capsys.readouterr().out
    proc = subprocess.run(
        [sys.executable, str(repo / "benchmarks" / "compare_tables.py"), str(a), str(b), "-q"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "identical" not in proc.stdout.splitlines()[0] and "DIFFERS" in proc.stdout
    assert json.loads((a / "dec" / "r.json").read_text())["n"] == 3
