"""The report in a real browser (headless Chromium): every section renders, every image loads.

Skips when no Chromium/Chrome is installed (Debian: ``apt-get install chromium``). With
``FEDCLUST_REPORT_HTML=path/to/index.html`` it also checks that finished report.
"""

import base64
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedclust.report import Section, build_report, headline, row, write_section
from fedclust.report.browser import find_browser, inspect, problems

pytestmark = pytest.mark.skipif(find_browser() is None, reason="no Chromium/Chrome installed")


def _png(path: Path) -> str:

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(np.arange(5), np.arange(5) ** 2)
    fig.savefig(path, dpi=50)
    plt.close(fig)
    return str(path)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    tsv = tmp / "t.tsv"
    pd.DataFrame({"round": [1, 2, 3], "acc": [0.6, 0.7, 0.8]}).to_csv(tsv, sep="\t", index=False)
    files = []
    for i, sid in enumerate(["data", "hac", "perf"]):
        figs = [{"path": _png(tmp / f"{sid}{k}.png"), "caption": "c"} for k in range(2)]
        hl = headline(
            [row("accuracy", 0.82, 0.7), row("n", None, 3)],
            "Why: test.",
            # perf: no figure, the report draws the rows (inline PNG made at render time)
            figure=None if sid == "perf" else figs[0]["path"],
        )
        sec = Section(
            id=sid,
            title=sid.upper(),
            order=i,
            text=["a", "b"],
            figures=[] if sid == "perf" else figs,
            tables=[{"path": str(tsv), "caption": "Per round. Long shared note " * 3}],
            headline=hl,
        )
        write_section(tmp / f"{sid}.json", sec)
        files.append(tmp / f"{sid}.json")
    build_report(files, tmp / "index.html")
    return tmp / "index.html"


def test_every_section_renders_and_every_image_loads(report):
    result = inspect(report)
    assert [s["id"] for s in result["sections"]] == ["data", "hac", "perf"]
    # data/hac: headline figure + 1 more; perf: the drawn headline chart
    assert len(result["images"]) == 5
    assert problems(result, ["data", "hac", "perf"]) == []
    assert all(s["headline_rows"] == 2 for s in result["sections"])


def test_a_broken_image_and_a_missing_section_are_caught(report, tmp_path):
    page = report.read_text()
    head, rest = page.split("data:image/png;base64,", 1)
    broken = base64.b64encode(b"not a png").decode()
    bad = tmp_path / "bad.html"
    bad.write_text(head + "data:image/png;base64," + broken + rest[rest.index('"') :])
    found = problems(inspect(bad), ["data", "hac", "perf", "survival"])
    assert any("did not load" in p and "'data'" in p for p in found)
    assert "section 'survival' missing" in found


@pytest.mark.skipif(not os.environ.get("FEDCLUST_REPORT_HTML"), reason="FEDCLUST_REPORT_HTML unset")
def test_finished_report():
    result = inspect(os.environ["FEDCLUST_REPORT_HTML"], timeout=600)
    assert problems(result) == []
