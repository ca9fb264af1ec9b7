"""Section headlines (fedclust.report.headline / headlines) and the report layout, plain Python."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from fedclust.admm.report import HEADLINE as ADMM
from fedclust.dec.figures_report import HEADLINE as DEC_FIGURES
from fedclust.hac.report import HEADLINE as HAC
from fedclust.perf.report import HEADLINE as PERF
from fedclust.report import Section, build_report, headline, row, write_section
from fedclust.report import headlines as H
from fedclust.report.headline import (
    MISSING_OURS,
    MISSING_SOURCE,
    difference,
    ref,
    table_rows,
    verdict,
)
from fedclust.report.html import shared_captions
from fedclust.survival.report import HEADLINE as SURVIVAL


def test_difference_is_ours_minus_source_for_numbers():
    assert difference(0.75, 0.7499).value == pytest.approx(-0.0001)
    assert difference(2043, 1797).value == -246
    assert difference("0.882", np.float32(0.801)).value == pytest.approx(-0.081, abs=1e-6)
    assert difference("≈ 0.4", 0.34).value == pytest.approx(-0.06)
    assert difference("0.75 ± 0.02", 0.8).value == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("source", "ours", "value", "status"),
    [
        ("> 0.95", 0.539, 0.539 - 0.95, "misses"),
        ("> 0.95", 0.97, 0.0, "meets"),
        ("≥ 0.5", 0.5, 0.0, "meets"),
        ("> 0.5", 0.5, 0.0, "misses"),
        ("< 0.1", 0.3, 0.2, "misses"),
        ("0.4–0.6", 0.516, 0.0, "inside"),
        ("0.4–0.6", 0.30, -0.1, "below"),
        ("22-58", 60, 2.0, "above"),
    ],
)
def test_difference_to_bounds_and_ranges(source, ours, value, status):
    d = difference(source, ours)
    assert d.value == pytest.approx(value) and d.status == status


def test_missing_values_are_shown_as_missing_not_zero():
    rows = [
        row("no source", None, 0.5),
        row("nan ours", 0.5, float("nan")),
        row("not a number", "O(n²(d+n))", 2.1),
        row("both", 0.82, 0.688),
    ]
    shown = table_rows(headline(rows, "Why: test."))
    assert shown[0]["source"] == MISSING_SOURCE and shown[0]["difference"].startswith("—")
    assert shown[1]["ours"] == MISSING_OURS and "no value of ours" in shown[1]["difference"]
    assert shown[2]["source"] == "O(n²(d+n))" and shown[2]["difference"].startswith("—")
    assert shown[3]["difference"] == "−0.132"
    assert table_rows(headline([row("n", 60000, 1797)]))[0]["difference"] == "−58203"
    assert [r["verdict"] for r in shown] == ["not compared"] * 3 + ["differs"]
    assert rows[1]["ours"] is None  # NaN stored as JSON null, not NaN


def test_verdict_tolerances_and_sentence():
    assert verdict(row("a", 0.75, 0.76)) == "match"  # default 5 % of |source|
    assert verdict(row("b", 0.75, 0.70)) == "differs"
    assert verdict(row("c", 0.62, 0.719, tol=0.06)) == "differs"
    assert verdict(row("d", 0, 1e-13, tol=1e-8)) == "match"
    assert verdict(row("e", 0, 1e-3)) == "differs"  # source 0: default tolerance 1e-9
    assert verdict(row("f", "≈ 0.4", 0.41)) == "match"
    h = headline([row("x", 1, 1), row("y", 1, 2, cause="a reduced run"), row("z", None, 3)])
    assert h["sentence"] == (
        "1 of 3 rows match the source (x); 1 differ: y (a reduced run); "
        "1 not compared: z (no source value)."
    )
    assert headline([row("x", 1, 1)])["sentence"] == "All 1 rows match the source."
    # a differing row without a documented cause says so; rows sharing a cause are grouped
    h = headline([row("a", 1, 2), row("b", 1, 3, cause="c"), row("d", 1, 4, cause="c")])
    assert h["sentence"] == (
        "3 of 3 rows differ from the source: a (cause not documented), b and d (c)."
    )
    h = headline([row(f"t{i}", "O(n)", 1.0, cause="no run time printed") for i in range(5)])
    assert h["sentence"] == "5 not compared (no run time printed)."


def test_shared_captions_said_once():
    long = "REDUCED run of the default config, not the thesis' 100 x 38: numbers are far off."
    caps = [f"Table 4.1: loss. {long}", f"Table 4.2: accuracy. {long}", "Thesis beside."]
    out, shared = shared_captions(caps + ["Thesis beside."])
    assert shared == [long]
    assert out[:2] == ["Table 4.1: loss.", "Table 4.2: accuracy."]
    assert out[2] == "Thesis beside."  # short repeated sentences stay where they are
    same = "Federated Kaplan–Meier of the marrow-blast groups over the training centres."
    assert shared_captions([same, same])[1] == []  # a caption's first sentence stays in it


def _fig(path):

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [0, 1])
    fig.savefig(path)
    plt.close(fig)
    return str(path)


def test_report_renders_headline_collapsible_tables_and_shared_note(tmp_path):
    f1, f2 = _fig(tmp_path / "a.png"), _fig(tmp_path / "b.png")
    tsv = tmp_path / "t.tsv"
    pd.DataFrame({"round": range(1, 31), "acc": np.linspace(0.5, 0.8, 30)}).to_csv(
        tsv, sep="\t", index=False
    )
    shared = "REDUCED run of the default config (3 rounds): numbers are far from converged here."
    hl = headline(
        [row("accuracy", 0.82, 0.688, "round 3"), row("loss", None, 4.46)],
        "Why: reduced run.",
        figure=f1,
        figure_caption="Fig 4.1",
        source_label="thesis (seed 004)",
    )
    sec = Section(
        id="heart",
        title="Heart",
        text=["First paragraph.", "Second paragraph."],
        figures=[{"path": f1, "caption": "c1"}, {"path": f2, "caption": f"Fig 4.3. {shared}"}],
        tables=[
            {"path": str(tsv), "caption": f"Table 4.2: accuracy. {shared}"},
            {"path": str(tsv), "caption": f"Table 4.1: loss. {shared}"},
        ],
        headline=hl,
    )
    write_section(tmp_path / "s.json", sec)
    write_section(tmp_path / "n.json", Section(id="plain", title="Plain", order=99))
    build_report([tmp_path / "s.json", tmp_path / "n.json"], tmp_path / "index.html")
    page = (tmp_path / "index.html").read_text()
    hl_html = page[page.index("<div class=headline>") : page.index("<p class=verdict>")]
    assert "<th>thesis (seed 004)</th>" in hl_html
    assert "<td>0.82</td><td>0.688</td><td>−0.132</td><td>round 3</td>" in hl_html
    assert f"<td>{MISSING_SOURCE}</td><td>4.46</td>" in hl_html
    assert page.count(shared) == 1  # said once, not per table/figure
    assert page.count("<details class=tbl-block>") == 2 and "(30 rows)" in page
    assert page.count("data:image/png") == 2  # headline figure not repeated below
    assert "<details><summary>Method, data and deviations (1 more paragraphs)" in page
    assert "No headline for this section." in page  # the plain section says so


def _write(path, df):
    df.to_csv(path, sep="\t", index=False)
    return {"path": str(path), "caption": "t"}


def test_stage_headline_reads_its_tables_and_survives_missing_ones(tmp_path):
    summ = pd.DataFrame(
        {
            "task": ["ridge", "ridge"],
            "mode": ["centralized", "distributed"],
            "iterations": [73, 226],
            "centers": [1, 4],
            "objective": [0.499047875281, 0.499047876415],
            "reference_objective": [0.499047875227] * 2,
            "relative_gap": [1e-10, 2.4e-9],
        }
    )
    h = H.build(ADMM, [_write(tmp_path / "summary.tsv", summ)], [])
    (r,) = h["rows"]
    assert r["source"] == pytest.approx(0.499047875227) and r["ours"] == pytest.approx(
        0.499047876415
    )
    assert table_rows(h)[0]["difference"] == "+1.19e−09" and verdict(r) == "match"
    # a missing table: every row is 'not in this run', nothing raises
    h = H.build(HAC, [{"path": str(tmp_path / "absent_table41.tsv")}], [])
    assert h["rows"] and all(r["ours"] is None for r in h["rows"])
    assert all(t["ours"] == MISSING_OURS for t in table_rows(h))
    # survival: D6.2's SD is the tolerance
    t81 = pd.DataFrame({"Case": ["Centralized case (Upper bound)",
                                 "Centralized, K × batches minibatches per epoch"],
                        "Concordance (ours)": [0.7499, 0.7601]})  # fmt: skip
    t82 = pd.DataFrame(
        {
            "IID centres": ["Isolated nodes (Lower bound)", "Weights Averaging"],
            "Balanced sizes: Concordance (ours)": [0.719, 0.749],
            "Balanced sizes: SD (D6.2)": [0.06, 0.01],
            "Balanced sizes: Concordance (D6.2)": [0.62, 0.75],
        }
    )
    tabs = [_write(tmp_path / "table_8_1.tsv", t81), _write(tmp_path / "table_8_2.tsv", t82)]
    rows = {r["quantity"]: r for r in H.build(SURVIVAL, tabs, [])["rows"]}
    assert verdict(rows["IID balanced: Weights Averaging"]) == "match"
    assert verdict(rows["IID balanced: Isolated nodes"]) == "differs"
    assert rows["IID balanced: Isolated nodes"]["tol"] == 0.06
    assert rows["non-IID times: Weights Averaging"]["ours"] is None  # table 8.3 not written
    assert math.isclose(rows["centralized C-index"]["ours"], 0.7499)


def test_referenced_values_are_read_at_render_time_and_stay_out_of_the_json(tmp_path):
    bench = tmp_path / "hac.tsv"
    pd.DataFrame({"method": ["gradual", "genewise"], "ratio": [2.15, 1.1]}).to_csv(
        bench, sep="\t", index=False
    )
    h = headline(
        [
            row("gradual time / pooled", 2, ref(bench, "ratio", {"method": "gradual"})),
            row("absent", 1, ref(bench, "ratio", {"method": "perturbation"})),
        ],
        "Why: timings.",
    )
    assert "2.15" not in json.dumps(h)
    shown = table_rows(h)
    assert shown[0]["ours"] == "2.15" and shown[0]["difference"] == "+0.15"
    assert shown[1]["ours"] == MISSING_OURS
    assert H.build(PERF, [{"path": str(bench)}])["rows"][0]["ours"]["column"] == "ratio"


def test_dec_figures_headline_reads_the_rerun_tables(tmp_path):
    """Fig 5.5 / B.1 / 5.15 rows: accuracies from the re-run and the confusion matrix."""
    states = tmp_path / "mnist" / "states.tsv"
    states.parent.mkdir()
    states.write_text(
        "dataset\tsubset_mse_tsae\tsubset_mse_dec\taccuracy_rerun\nmnist\t0.02\t0.2\t0.75\n"
    )
    conf = tmp_path / "bmnist" / "confusion.tsv"
    conf.parent.mkdir()
    conf.write_text("true\t0\t1\n0\t8\t2\n1\t1\t9\n")  # 17 of 20 on the diagonal
    tables = [{"path": str(states)}, {"path": str(conf)}]
    h = H.build(DEC_FIGURES, tables, [{"path": "x/mnist/confusion.png"}])
    ours = {r["quantity"].split(":")[0]: r["ours"] for r in h["rows"]}
    assert ours["Fig 5.5"] == 0.75 and ours["Fig B.1"] == 0.85
    assert [r["ours"] for r in h["rows"][2:4]] == [0.02, 0.2]
    assert h["figure"] == "x/mnist/confusion.png"
    trend = tmp_path / "size_curve" / "trend.tsv"
    trend.parent.mkdir()
    trend.write_text("schedule\tpoints\taccuracy_at\na\t9\t0.71\nb\t6\t0.65\n")
    h = H.build(DEC_FIGURES, [*tables, {"path": str(trend)}], [])
    assert h["rows"][4]["ours"] == 0.71  # the schedule with the most points
