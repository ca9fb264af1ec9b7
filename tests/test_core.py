"""Core utilities: atomic writes, ledger, seeds, config validation, report assembly."""

from __future__ import annotations

import copy
import os
import stat

import numpy as np
import pandas as pd
import pytest

from fedclust.config import load_yaml, validate_config
from fedclust.errors import ConfigError, DisclosureError
from fedclust.federation import Ledger
from fedclust.io import atomic_path, read_table, write_table
from fedclust.report import Section, build_report, write_section
from fedclust.seeds import derive_seed, rng


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_renames_on_success(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with atomic_path(target) as tmp:
        tmp.write_text("done")
        assert not target.exists()
    assert target.read_text() == "done"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("name", ["t.parquet", "t.tsv", "t.tsv.gz", "t.csv"])
def test_table_roundtrip(tmp_path, name):
    df = pd.DataFrame({"a": [1.5, 2.0], "b": [3, 4]}, index=pd.Index(["x", "y"], name="id"))
    write_table(tmp_path / name, df)
    pd.testing.assert_frame_equal(read_table(tmp_path / name), df)


def test_ledger_counts_floats_and_rejects_non_plain():
    from fedclust.federation import Protocol

    led = Ledger(protocol=Protocol("t_core", {"w": "parameters", "n": "count", "meta": "aggregate",
                                              "data": "aggregate"}))  # fmt: skip
    msg = led.send("c1", "server", {"w": np.zeros((3, 4)), "n": 7, "meta": {"b": np.ones(2)}})
    assert msg["n"] == 7
    assert led.n_messages == 1 and led.n_floats == 12 + 1 + 2
    with pytest.raises(DisclosureError, match="privacy boundary"):
        led.send("c1", "server", {"data": pd.DataFrame({"x": [1]}), "n": 7})
    s = led.summary()
    assert s.loc[0, "messages"] == 1 and s.loc[0, "floats"] == 15


def test_seeds_stable_and_distinct():
    assert derive_seed(1, "split") == derive_seed(1, "split")
    assert derive_seed(1, "split") != derive_seed(1, "init")
    assert derive_seed(1, "split") != derive_seed(2, "split")
    np.testing.assert_array_equal(rng(3, "a").random(4), rng(3, "a").random(4))


def test_default_configs_validate(repo):
    for name in ["config.yaml", "thesis.yaml"]:
        validate_config(load_yaml(repo / "config" / name), repo / "config" / "schema.yaml")


def test_unknown_config_key_names_key_and_allowed(repo):
    cfg = load_yaml(repo / "config" / "config.yaml")
    bad = copy.deepcopy(cfg)
    bad["data"]["mirorr"] = "/tmp"
    with pytest.raises(ConfigError) as err:
        validate_config(bad, repo / "config" / "schema.yaml", source="my.yaml")
    msg = str(err.value)
    assert "'mirorr'" in msg and "did you mean 'mirror'" in msg and "my.yaml" in msg


def test_bad_enum_lists_allowed_values(repo):
    cfg = load_yaml(repo / "config" / "config.yaml")
    cfg["data"]["rnaseq"]["source"] = "gdc"
    with pytest.raises(ConfigError, match="'simulated', 'xena'"):
        validate_config(cfg, repo / "config" / "schema.yaml")


def test_report_embeds_figures_and_tables(tmp_path):

    import matplotlib.pyplot as plt

    from fedclust.io import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    save_figure(fig, tmp_path / "f.png")
    pd.DataFrame({"metric": ["ccc"], "value": [0.987654]}).to_csv(
        tmp_path / "t.tsv", sep="\t", index=False
    )
    write_section(
        tmp_path / "s.json",
        Section(
            id="x",
            title="X section",
            figures=[
                {
                    "path": str(tmp_path / "f.png"),
                    "caption": "cap",
                    "reproduces": "seed 001 Fig. 4.5",
                }
            ],
            tables=[{"path": str(tmp_path / "t.tsv"), "caption": "tab"}],
        ),
    )
    build_report([tmp_path / "s.json"], tmp_path / "index.html", title="T")
    page = (tmp_path / "index.html").read_text()
    assert "data:image/png;base64," in page and "seed 001 Fig. 4.5" in page and "0.9877" in page


def test_projection_orthogonal_preserves_distances_and_gaussian_is_unbiased():
    from scipy.spatial.distance import pdist

    from fedclust.hac.projection import project, projection_matrix

    x = rng(0, "t").standard_normal((20, 50))
    for k in (30, 80):  # orthonormal columns (k<d: only when x lies in span) / rows (k>=d: exact)
        q = projection_matrix(50, k, "orthogonal", seed=5)
        if k >= 50:
            np.testing.assert_allclose(q @ q.T, np.eye(50), atol=1e-12)
            np.testing.assert_allclose(pdist(project(x, q)), pdist(x), rtol=1e-10)
        else:
            np.testing.assert_allclose(q.T @ q, np.eye(k), atol=1e-12)
    np.testing.assert_array_equal(
        projection_matrix(50, 10, "gaussian", 1), projection_matrix(50, 10, "gaussian", 1)
    )
    q = projection_matrix(50, 4000, "gaussian", seed=2)
    ratio = pdist(project(x, q)) ** 2 / 4000 / pdist(x) ** 2
    assert abs(ratio.mean() - 1) < 0.03


def test_cli_check_config(repo, tmp_path, capsys):
    from fedclust.cli import main

    assert main(["check-config", str(repo / "config" / "config.yaml")]) == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 1\ndata: {}\nreport: {}\nhca: {enabled: true}\n")
    assert main(["check-config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "'hca'" in err and "did you mean 'hac'" in err and str(bad) in err
