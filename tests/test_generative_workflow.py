"""Parse-time helpers of rules/generative.smk and the fan-out invariant: a job running several
units gives each unit the numbers of a job running it alone (seeds derive from the unit)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from fedclust.config import SCHEMA, load_config_file, validate_config
from fedclust.data.mnist import as_tables, load_source
from fedclust.generative import experiment as X
from fedclust.generative import workflow as GW


@pytest.fixture(scope="module")
def configs(repo):
    out = {}
    for name in ("config.yaml", "thesis.yaml", "thesis-smoke.yaml"):
        cfg = load_config_file(repo / "config" / name)
        out[name] = validate_config(copy.deepcopy(cfg), SCHEMA, source=name)
    return out


def test_units_outputs_and_inputs(configs):
    thesis = configs["thesis.yaml"]
    gen = thesis["generative"]
    assert GW.units(gen, "savae") == ["mnist_r0.5", "mnist_r0.7", "mnist_r0.9", "mds_r0.5"]
    assert GW.parse_savae_unit("mnist_r0.7") == ("mnist", 0.7)
    assert GW.units(gen, "radialgan") == ["heart_d62", "heart_authors", "mds_d62", "mds_authors"]
    assert GW.fanout(gen) == "unit" and GW.fanout(configs["config.yaml"]["generative"]) == "model"
    one = GW.unit_outputs("dgd", None)
    assert one["metrics"] == "results/generative/dgd/{unit}/metrics.tsv"
    grouped = GW.unit_outputs("savae", ["a_r0.5", "b_r0.5"])
    assert grouped["examples"] == ["results/generative/savae/a_r0.5/examples.npz",
                                   "results/generative/savae/b_r0.5/examples.npz"]  # fmt: skip
    # the job of a unit reads only its data set's files
    assert set(GW.inputs(thesis, "savae", ["mnist_r0.5"])) == {"mnist_features", "mnist_obs"}
    heart = GW.inputs(thesis, "radialgan", ["heart_d62"])
    assert set(heart) == {"heart_features", "heart_obs"}
    rna = GW.inputs(thesis, "dgd", ["rnaseq"])
    assert rna["vst"][0].endswith("BRCA/vst.parquet") and len(rna["vst"]) == 5
    # a change to one model's settings does not touch another model's params
    assert "dgd" not in GW.model_cfg(gen, "savae") and "mds" in GW.model_cfg(gen, "savae")
    assert "mds" not in GW.model_cfg(gen, "dgd")
    # every per-sample protocol is opted in by the configs' disclosure section
    for cfg in configs.values():
        allowed = set(cfg["disclosure"]["default"]["allow_per_sample"])
        assert {"savae_virtual_patients", "radialgan_codes", "radialgan_code_grads"} <= allowed


def test_a_grouped_job_gives_each_unit_its_own_numbers(tmp_path, configs):
    x, y = load_source("digits")
    feats, obs = as_tables(x, y, "d")
    feats.to_parquet(tmp_path / "f.parquet")
    obs.to_csv(tmp_path / "o.tsv", sep="\t")
    gen = copy.deepcopy(configs["config.yaml"]["generative"])
    gen["savae"]["datasets"] = {"mnist": {"n_good": 60, "n_poor": 12, "n_test": 40,
                                          "rates": [0.5, 0.7]}}  # fmt: skip
    gen["savae"]["train"].update(rounds=2, local_epochs=1)
    gen["savae"]["n_virtual"] = 20
    files = {"mnist_features": str(tmp_path / "f.parquet"), "mnist_obs": str(tmp_path / "o.tsv")}
    src = {"mnist": "digits"}
    both = X.run_savae_units(gen, ["mnist_r0.5", "mnist_r0.7"], files, 5, src)
    alone = X.run_savae_units(gen, ["mnist_r0.7"], files, 5, src)
    pd.testing.assert_frame_equal(both[1]["metrics"], alone[0]["metrics"])
    assert not np.allclose(both[0]["metrics"]["value"], both[1]["metrics"]["value"])
