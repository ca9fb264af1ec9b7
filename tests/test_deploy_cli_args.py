"""Reliability probes of `fedclust deploy` / `python -m fedclust.flower.localhost` (issue 30 C,
items 9 and 12 on the newer CLI): a parameters file that is missing, not JSON or not an object,
a timeout ≤ 0, a centre folder that is missing, lacks the stage's file or is given twice (the
same patients counted twice) — each a message naming the option and the fix, exit status 2,
before any SuperLink is started (before: tracebacks, or a deployment started and failing
later). No Flower process is started here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedclust import cli
from fedclust import deployment as D


@pytest.fixture
def sites(tmp_path, monkeypatch):
    from fedclust.flower import localhost
    from fedclust.survival.km import KMCentre

    def no_start(self):  # a check that comes after the start is a failure of this test
        raise AssertionError("a SuperLink was started")

    monkeypatch.setattr(localhost.LocalFederation, "start", no_start)
    rng = np.random.default_rng(0)
    edges = np.arange(0, 10.5, 0.5)
    centres = [KMCentre(c, rng.exponential(3, 20), rng.random(20) < 0.7, None, edges)
               for c in ("A", "B")]  # fmt: skip
    dirs = D.write_centres(D.get("survival_km"), centres, tmp_path / "sites")
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"km_grid": {"step": 0.5, "max": 10.0}}))
    return tmp_path, [str(d) for d in dirs], params


def _deploy(capsys, *args):
    code = cli.main(["deploy", "--", *map(str, args)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "content, match",
    [(None, "does not exist|cannot be read"), ("{not json", "not JSON"), ("[1, 2]", "object")],
    ids=["missing", "not-json", "list"],
)
def test_bad_params_file(sites, capsys, content, match):
    work, dirs, params = sites
    if content is None:
        params.unlink()
    else:
        params.write_text(content)
    code, err = _deploy(capsys, work / "run", *dirs, "--stage", "survival_km", "--params", params)
    assert code == 2 and "--params" in err
    assert __import__("re").search(match, err), err


@pytest.mark.parametrize("timeout", ["0", "-5", "nan"])
def test_timeout_must_be_positive(sites, capsys, timeout):
    work, dirs, params = sites
    code, err = _deploy(capsys, work / "run", *dirs, "--stage", "survival_km", "--params", params,
                        "--timeout", timeout)  # fmt: skip
    assert code == 2 and "--timeout" in err


def test_centre_folder_without_the_stages_file(sites, capsys):
    work, dirs, params = sites
    code, err = _deploy(capsys, work / "run", dirs[0], work / "nowhere", "--stage", "survival_km",
                        "--params", params)  # fmt: skip
    assert code == 2 and "nowhere" in err and "survival_km.npz" in err


def test_same_centre_twice(sites, capsys):
    """Two SuperNodes on one folder: the centre's patients would be counted twice."""
    work, dirs, params = sites
    code, err = _deploy(capsys, work / "run", dirs[0], dirs[1], dirs[0] + "/", "--stage",
                        "survival_km", "--params", params)  # fmt: skip
    assert code == 2 and "twice" in err


def test_workdir_that_is_a_file(sites, capsys):
    work, dirs, params = sites
    (work / "afile").write_text("x")
    code, err = _deploy(capsys, work / "afile", *dirs, "--stage", "survival_km", "--params", params)
    assert code == 2 and "afile" in err


def test_module_entry_point_gives_a_message(tmp_path):
    """`python -m fedclust.flower.localhost` printed a ConfigError traceback."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "fedclust.flower.localhost", str(tmp_path / "w"),
                          str(tmp_path), "--stage", "survival_km", "--params",
                          str(tmp_path / "none.json")], capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--params" in res.stderr
