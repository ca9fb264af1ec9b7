"""Issue 30, part A and the config items of part C: a clone alone passes the README's commands,
and every check that needs only the config (and data shapes) runs at config time.

Test names carry the part or item number of issue 30 (``test_issue30_a_...``,
``test_issue30_item04_...``); the ``test_item*`` tests of the other reliability files are
issue 17's items.
"""

from __future__ import annotations

import copy
import os

import pytest

from fedclust.config import data_mirror, load_yaml, validate_config
from fedclust.errors import ConfigError


@pytest.fixture(scope="module")
def default(repo):
    return load_yaml(repo / "config" / "config.yaml")


def _check(repo, cfg):
    return validate_config(copy.deepcopy(cfg), repo / "config" / "schema.yaml")


# ---- part A: the mirror is used only where it exists ------------------------------------------


def test_issue30_a_configured_mirror_that_does_not_exist_fails_at_config_time(
    repo, default, tmp_path, monkeypatch
):
    monkeypatch.delenv("FEDCLUST_DATA_MIRROR", raising=False)
    assert data_mirror(default) is None
    _check(repo, default)  # offline config, no mirror: valid
    missing = tmp_path / "shared" / "data"
    monkeypatch.setenv("FEDCLUST_DATA_MIRROR", str(missing))
    with pytest.raises(ConfigError, match="does not exist") as e:
        _check(repo, default)
    assert str(missing) in str(e.value) and "FEDCLUST_DATA_MIRROR" in str(e.value)
    monkeypatch.delenv("FEDCLUST_DATA_MIRROR")
    cfg = copy.deepcopy(default)
    cfg["data"]["mirror"] = str(missing)
    with pytest.raises(ConfigError, match="does not exist") as e:
        _check(repo, cfg)
    assert "data.mirror" in str(e.value)
    (tmp_path / "file").write_text("x")
    cfg["data"]["mirror"] = str(tmp_path / "file")
    with pytest.raises(ConfigError, match="is not a folder"):
        _check(repo, cfg)
    cfg["data"]["mirror"] = str(tmp_path)
    assert _check(repo, cfg) and data_mirror(cfg) == tmp_path.resolve()


def test_issue30_a_auto_survival_source_reads_ipssm_only_from_a_mirror_that_has_it(
    repo, default, tmp_path, monkeypatch
):
    from fedclust.generative import workflow as GW
    from fedclust.survival import workflow as SW

    cfg = _check(repo, default)
    cfg["generative"]["mds"]["source"] = "auto"
    monkeypatch.setenv("FEDCLUST_DATA_MIRROR", str(tmp_path))
    (tmp_path / "tcga").mkdir()  # a mirror with other datasets only: no IPSS-M download rule
    assert SW.source(cfg) == "simulated" and SW.cohort_inputs(cfg) == {}
    assert GW.mds_source(cfg) == "simulated"  # the generative stage decides the same way
    (tmp_path / "ipssm").mkdir()
    for name in SW.IPSSM_FILES:
        (tmp_path / "ipssm" / name).write_text("ID\n")
    assert SW.source(cfg) == "ipssm" and GW.mds_source(cfg) == "ipssm"


def test_issue30_a_test_script_uses_the_mirror_only_where_it_exists(repo, tmp_path):
    """scripts/test.sh: no mirror exported when ../shared/data is absent; the default end-to-end
    run (CI's newcomer path) never sees a mirror. The mirror lines are run in a fake clone."""
    import subprocess

    text = (repo / "scripts" / "test.sh").read_text()
    assert "FEDCLUST_DATA_MIRROR=${FEDCLUST_DATA_MIRROR:-" not in text  # the old blind export
    e2e = text.split('step "end-to-end run of the default config', 1)[1].split("step ", 1)[0]
    assert "env -u FEDCLUST_DATA_MIRROR snakemake" in e2e
    head = text.split('step "install', 1)[0].replace('cd "$(dirname "$0")/.."', "")
    clone = tmp_path / "clone"
    clone.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "FEDCLUST_DATA_MIRROR"}
    probe = head + '\necho "MIRROR=${FEDCLUST_DATA_MIRROR:-}"\n'
    run = lambda: subprocess.run(  # noqa: E731
        ["bash", "-c", probe], cwd=clone, env=env, capture_output=True, text=True, timeout=30
    )
    out = run()
    assert out.returncode == 0 and out.stdout.strip().endswith("MIRROR="), out.stdout + out.stderr
    (tmp_path / "shared" / "data").mkdir(parents=True)
    out = run()
    assert out.stdout.strip().endswith(f"MIRROR={tmp_path / 'shared' / 'data'}"), out.stdout


# ---- item 2: survival covariates: never the outcome; the simulated cohort honours the list ------


@pytest.mark.parametrize("source", ["simulated", "ipssm"])
def test_issue30_item02_outcome_as_covariate_rejected_at_config_time(repo, default, source):
    cfg = copy.deepcopy(default)
    cfg["survival"].update(source=source, clinical=["OS_YEARS", "OS_STATUS", "AGE"])
    with pytest.raises(ConfigError, match="outcome column.*OS_YEARS, OS_STATUS") as e:
        _check(repo, cfg)
    assert "survival.clinical" in str(e.value)


def test_issue30_item02_outcome_as_covariate_rejected_by_the_reader(tmp_path):
    from test_reliability_issue30_data import _ipssm

    from fedclust.survival.cohort import load_ipssm_survival

    paths = _ipssm(tmp_path / "f")
    with pytest.raises(ConfigError, match="outcome column.*LFS_STATUS"):
        load_ipssm_survival(*paths, ["AGE", "LFS_STATUS"])


def test_issue30_item02_simulated_cohort_honours_survival_clinical(repo, default):
    from fedclust.survival.cohort import simulate_cohort

    x, _ = simulate_cohort(seed=1, n=200, min_carriers=5, clinical=["AGE", "complex"])
    assert list(x.columns[:2]) == ["AGE", "complex"] and "SEX" not in x.columns
    full, obs = simulate_cohort(
        seed=1, n=200, min_carriers=5, clinical=default["survival"]["clinical"]
    )
    assert list(full.columns[:11]) == default["survival"]["clinical"]
    same, obs2 = simulate_cohort(seed=1, n=200, min_carriers=5, clinical=["AGE", "complex"])
    pd_testing = pytest.importorskip("pandas").testing
    pd_testing.assert_frame_equal(obs, obs2)  # the outcome model does not depend on the list
    pd_testing.assert_frame_equal(full[["AGE", "complex"]], same[["AGE", "complex"]])
    cfg = copy.deepcopy(default)
    cfg["survival"].update(source="simulated", clinical=["AGE", "IPSSM_SCORE"])
    with pytest.raises(ConfigError, match="IPSSM_SCORE.*simulated") as e:
        _check(repo, cfg)
    assert "AGE" in e.value.fix
    cfg["survival"]["clinical"] = ["AGE", "NOPE"]
    cfg["survival"]["source"] = "ipssm"
    with pytest.raises(ConfigError, match="'NOPE'.*IPSS-M"):
        _check(repo, cfg)


# ---- item 3: a disclosure floor is never lowered silently ----------------------------------------


def test_issue30_item03_nmin_grid_never_adds_a_floor_below_the_configured_ones(caplog):
    from fedclust.hac.experiments import nmin_grid

    assert nmin_grid(250, [2, 5, 10, 15, 25, 40], 0.1) == [2, 5, 10, 15, 25]  # thesis grid
    assert nmin_grid(120, [2, 5, 10, 15], 0.1) == [2, 5, 10, 12]  # + ⌊10 %⌋ itself
    with pytest.raises(ConfigError, match=r"n_min 2, 5, 10 .*above ⌊fraction × n⌋ = 0") as e:
        nmin_grid(250, [2, 5, 10], 0.001)  # was: n_min = 1, every sample shared
    assert "hac.gradual" in str(e.value)
    with pytest.raises(ConfigError, match=r"n_min 50 .*= 25"):
        nmin_grid(250, [50], 0.1)  # was: silently 25
    with caplog.at_level("WARNING"):
        assert nmin_grid(250, [2, 50], 0.1) == [2, 25]  # 25 ≥ the smallest floor: the 10 % point
    assert "n_min 50" in caplog.text and "not run" in caplog.text


def test_issue30_item03_floor_checked_at_config_time(repo, default):
    cfg = copy.deepcopy(default)
    cfg["hac"]["gradual"]["fraction"] = 0.001
    with pytest.raises(ConfigError, match=r"hac.gradual: n_min 2.*cohort SIMA"):
        _check(repo, cfg)
    cfg = copy.deepcopy(default)
    cfg["hac"]["gradual"]["n_min"] = [500]
    with pytest.raises(ConfigError, match="n_min 500"):
        _check(repo, cfg)


# ---- item 4: every config name that becomes a path follows ^[A-Za-z0-9_-]+$ ---------------------


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c["fedcref"]["datasets"].update({"../../../../../X": {"source": "digits"}}),
        lambda c: c["fedcref"]["experiments"]["exp1"].update(datasets=["../x"]),
        lambda c: c["fedcref"]["experiments"]["exp3"].update(dataset="a/b"),
        lambda c: c["dec"]["tuning"].update(reuse={"../m": {"source": "mnist", "grids": ["lr"]}}),
        lambda c: c["dec"]["tuning"]["step1"].update(architectures={"a b": ["DEC"]}),
        lambda c: c["attacks"].update(exclude_for_sex=["../PRAD"]),
    ],
    ids=[
        "fedcref_datasets",
        "exp1_datasets",
        "exp3_dataset",
        "tuning_reuse",
        "architectures",
        "exclude_for_sex",
    ],  # fmt: skip
)
def test_issue30_item04_path_names_restricted(repo, default, mutate):
    cfg = copy.deepcopy(default)
    mutate(cfg)
    with pytest.raises(ConfigError, match="file path"):
        _check(repo, cfg)


#: free names in the schema that never become part of a path
NOT_PATHS = {
    "resources.rules.*": "rule names (resources per rule)",
    "survival.clinical[]": "column names of df_clinical.tsv, checked by item 2",
    "disclosure.centres.*": "centre ids, looked up, never written as names of files",
    "disclosure.default.allow_per_sample[]": "protocol names",
    "disclosure.centres.*.allow_per_sample[]": "protocol names",
    "generative.mds.clinical[]": "column names",
    "generative.mds.categorical[]": "column names",
    "generative.mds.log1p[]": "column names",
    "generative.radialgan.testbeds.*.drop.*": "centre names whose columns are dropped",
    "generative.radialgan.testbeds.*.drop.*[]": "column names",
}


def _free_names(node, path=()):
    """(dotted place, its name schema) of every mapping with free keys and list of strings."""
    if not isinstance(node, dict):
        return
    extra, items = node.get("additionalProperties"), node.get("items")
    if isinstance(extra, dict):
        yield ".".join(path) + ".*", node.get("propertyNames", {})
    item_types = items.get("type") if isinstance(items, dict) else None
    if isinstance(items, dict) and "string" in (item_types or "") and "enum" not in items:
        yield ".".join(path) + "[]", items
    for key, sub in node.get("properties", {}).items():
        if path and path[-1].startswith("exp") and key == "dataset":
            yield ".".join((*path, key)), sub
        yield from _free_names(sub, (*path, key))
    if isinstance(extra, dict):
        yield from _free_names(extra, (*path, "*"))
    if isinstance(items, dict):
        yield from _free_names(items, (*path, "[]"))


def test_issue30_item04_every_free_name_in_the_schema_is_path_safe(repo):
    """The mechanism: each mapping with free keys and each list of names in the schema carries a
    pattern within ^[A-Za-z0-9_-]+$ (or an enum), unless it is listed in NOT_PATHS; a new one
    without either fails here."""
    import re

    from fedclust.config import NAME_RE

    schema = load_yaml(repo / "config" / "schema.yaml")
    places = dict(_free_names(schema))
    assert "fedcref.datasets.*" in places and "data.splits.*" in places
    assert set(NOT_PATHS) <= set(places)
    bad = ["../x", "a/b", "a b", "", ".", "é"]  # "x\n": the schema lets it through, see below
    for place, spec in places.items():
        if place in NOT_PATHS or "enum" in spec:
            continue
        pattern = spec.get("pattern")
        assert pattern, f"{place}: names become paths but have no pattern"
        for name in bad:
            assert not re.search(pattern, name), f"{place}: {pattern} lets {name!r} through"
        for name in ("SIMA", "mds", "uniform10", "exp_1"):
            if re.search(pattern, name):
                assert NAME_RE.match(name)


def test_issue30_item04_trailing_newline_rejected_by_check_name(repo, default):
    """JSON Schema's ``$`` matches before a trailing newline: check_name (fullmatch) closes it."""
    cfg = copy.deepcopy(default)
    cfg["data"]["splits"]["x\n"] = {"kind": "uniform", "n_centers": 2, "datasets": ["mds"]}
    with pytest.raises(ConfigError, match="cannot be used in a file path") as e:
        _check(repo, cfg)
    assert "data.splits" in str(e.value)


# ---- item 6: names that select nothing, a command-line base, duplicated Xena genes ---------------


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda t: t.update(datasets=["mnsit"]), r"dec.tuning.datasets.*'mnsit'.*dec.datasets"),
        (lambda t: t["step1"].update(architectures={"mds_": ["DEC"]}),
         r"dec.tuning.step1.architectures.*'mds_'"),
        (lambda t: t.update(reuse={"bmnsit": {"source": "mnist", "grids": ["cluster"]}}),
         r"dec.tuning.reuse.*'bmnsit'"),
    ],
    ids=["datasets", "architectures", "reuse"],
)  # fmt: skip
def test_issue30_item06_dec_tuning_names_must_be_dec_datasets(repo, default, mutate, match):
    cfg = copy.deepcopy(default)
    cfg["dec"]["tuning"]["enabled"] = True
    mutate(cfg["dec"]["tuning"])
    with pytest.raises(ConfigError, match=match):
        _check(repo, cfg)


def test_issue30_item06_privacy_stage_override_names_a_stage(repo, default):
    """federation.privacy.stages: a misspelt stage was silently ignored (no mask, no noise)."""
    cfg = copy.deepcopy(default)
    cfg.setdefault("federation", {})["privacy"] = {"stages": {"dek": {"secure_aggregation": True}}}
    with pytest.raises(ConfigError, match=r"federation.privacy.stages.*'dek'"):
        _check(repo, cfg)
    cfg["federation"]["privacy"]["stages"] = {"dec": {"secure_aggregation": True}}
    _check(repo, cfg)


def test_issue30_item06_command_line_base_is_loaded_or_refused(repo, tmp_path):
    """``--config base=FILE`` (a key only a config file may hold) is loaded like a file's base;
    ``fedclust check-config`` and the Snakefile share :func:`resolve_bases`."""
    from fedclust.config import resolve_bases

    base = tmp_path / "b.yaml"
    base.write_text("seed: 7\nreport: {title: from base}\n")
    cfg = {"seed": 1}
    with pytest.raises(ConfigError, match="base.*command line") as e:
        resolve_bases(cfg, [], [], {"base": str(base)})
    assert "--configfile" in e.value.fix


# ---- item 8: a base that is not YAML, a list, or a symlink loop ----------------------------------


@pytest.mark.parametrize(
    ("base_bytes", "match"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not UTF-8 text"),
        (b"- seed\n- 1\n", "must be a mapping of keys.*list"),
        (b"just a string\n", "must be a mapping of keys.*str"),
        (b"seed: [1, 2\n", "invalid YAML"),
    ],
    ids=["binary", "list", "string", "syntax"],
)
def test_issue30_item08_bad_base_names_the_file(tmp_path, base_bytes, match):
    from fedclust.config import load_config_file

    (tmp_path / "base.yaml").write_bytes(base_bytes)
    (tmp_path / "c.yaml").write_text("base: base.yaml\nseed: 2\n")
    with pytest.raises(ConfigError, match=match) as e:
        load_config_file(tmp_path / "c.yaml")
    assert str(tmp_path / "base.yaml") in str(e.value)


def test_issue30_item08_base_symlink_loop_names_the_link(tmp_path):
    from fedclust.config import load_config_file

    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    (tmp_path / "c.yaml").write_text("base: loop.yaml\nseed: 2\n")
    with pytest.raises(ConfigError, match="symlink loop") as e:
        load_config_file(tmp_path / "c.yaml")
    assert "loop.yaml" in str(e.value)


def test_issue30_item08_mirror_symlink_loop_is_a_config_error(repo, default, tmp_path, monkeypatch):
    (tmp_path / "m").symlink_to(tmp_path / "m")
    monkeypatch.setenv("FEDCLUST_DATA_MIRROR", str(tmp_path / "m"))
    with pytest.raises(ConfigError, match="symlink loop") as e:
        _check(repo, default)
    assert str(tmp_path / "m") in str(e.value)


# ---- item 9: fedclust run / check-config: no traceback, snakemake from this environment -------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda p: p.mkdir(), "is a folder"),
        (lambda p: None, "not found"),
        (lambda p: p.write_bytes(b"\x00\x01\x02\xff\xfe binary"), "not UTF-8 text"),
        (lambda p: p.write_bytes("seed: 1\nreport: {title: caf\xe9}\n".encode("latin-1")),
         "not UTF-8 text"),
        (lambda p: p.write_text("hello\n"), "must be a mapping of keys"),
    ],
    ids=["directory", "missing", "binary", "latin1", "plain_string"],
)  # fmt: skip
def test_issue30_item09_check_config_gives_a_message_not_a_traceback(tmp_path, capsys, make, match):
    import re

    from fedclust.cli import main

    path = tmp_path / "c.yaml"
    make(path)
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert re.search(match, err) and str(path) in err and "Traceback" not in err


def test_issue30_item09_run_uses_this_environments_snakemake(repo, tmp_path, monkeypatch):
    """`fedclust run` starts Snakemake with the running interpreter (`python -m snakemake`),
    so it works outside an activated venv (no `snakemake` on PATH)."""
    import subprocess
    import sys

    from fedclust import cli

    seen = {}
    monkeypatch.setattr(subprocess, "call", lambda cmd, **kw: seen.setdefault("cmd", cmd) and 0)
    monkeypatch.setenv("PATH", str(tmp_path))  # no snakemake on PATH
    monkeypatch.delenv("FEDCLUST_DATA_MIRROR", raising=False)
    assert cli.main(["--workflow", str(repo), "run", "-n"]) == 0
    assert seen["cmd"][:3] == [sys.executable, "-m", "snakemake"]


# ---- item 13: a huge config is refused at once ---------------------------------------------------


def test_issue30_item13_oversized_config_refused_quickly(tmp_path, capsys):
    import time

    from fedclust.cli import main
    from fedclust.config import MAX_CONFIG_BYTES

    path = tmp_path / "huge.yaml"
    with open(path, "w") as fh:  # ~2 MB of valid YAML (a 50 MB one took minutes and 2.1 GB)
        fh.write("seed: 1\nreport:\n")
        for i in range(MAX_CONFIG_BYTES // 20 + 1000):
            fh.write(f"  k{i:09d}: {i}\n")
    assert path.stat().st_size > MAX_CONFIG_BYTES
    t0 = time.perf_counter()
    assert main(["check-config", str(path)]) == 2
    assert main(["run", "--config", str(path), "-n"]) == 2
    assert time.perf_counter() - t0 < 2.0
    err = capsys.readouterr().err
    assert "more than the 1,000,000" in err and str(path) in err
    with pytest.raises(ConfigError, match="bytes"):
        load_yaml(path)


# ---- item 10: impossible values fail at config time, not as a traceback later ----------------


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda c: c["survival"].update(n_centres=1), "survival.n_centres"),
        (lambda c: c["dec"]["tuning"].update(enabled=True, optimizers=[]), "dec.tuning.optimizers"),
        (lambda c: c["dec"]["tuning"]["step1"].update(schedulers=[]), "step1.schedulers"),
        (lambda c: c["dec"]["tuning"]["step1"].update(batch_sizes=[]), "step1.batch_sizes"),
        (lambda c: c["dec"]["tuning"]["step1"].update(activations=[]), "step1.activations"),
        (lambda c: c["dec"]["tuning"]["step2"].update(batch_sizes=[]), "step2.batch_sizes"),
        (lambda c: c["admm"]["tasks"]["logistic_mds_os"].update(positive="nope"),
         r"admm.tasks.logistic_mds_os.positive.*'nope'"),
    ],
    ids=["survival_one_centre", "tuning_optimizers", "schedulers", "step1_batches",
         "activations", "step2_batches", "admm_positive"],
)  # fmt: skip
def test_issue30_item10_impossible_values_rejected_at_config_time(repo, default, mutate, match):
    cfg = copy.deepcopy(default)
    mutate(cfg)
    with pytest.raises(ConfigError, match=match):
        _check(repo, cfg)


def test_issue30_item10_admm_positive_value_not_in_the_outcome(tmp_path):
    import pandas as pd

    from fedclust.admm.data import load_table_task
    from fedclust.errors import InputDataError

    ids = [f"s{i}" for i in range(6)]
    pd.DataFrame({"g": range(6)}, index=pd.Index(ids, name="sample_id")).to_parquet(
        tmp_path / "f.parquet"
    )
    pd.DataFrame({"OS_STATUS": [0, 1] * 3}, index=pd.Index(ids, name="sample_id")).to_csv(
        tmp_path / "obs.tsv", sep="\t"
    )
    with pytest.raises(InputDataError, match=r"positive.*'nope'.*0, 1"):
        load_table_task(str(tmp_path / "f.parquet"), str(tmp_path / "obs.tsv"), "OS_STATUS", "nope")


# ---- item 12: every check that needs only the config and data shapes runs at config time ---------


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda c: c["fedcref"]["system"].update(k_max=12), r"fedcref dataset .digits.*10 classes"),
        (lambda c: c["fedcref"]["experiments"]["exp2"].update(datasets=["digtis"]),
         r"'digtis'.*fedcref.datasets"),
        (lambda c: c["admm"]["tasks"]["logistic_mds_os"].update(split="equal9"),
         r"admm.tasks.logistic_mds_os.split.*'equal9'"),
        (lambda c: c["admm"]["tasks"]["logistic_mds_os"].update(outcome="OS_STATSU"),
         r"admm.tasks.logistic_mds_os.outcome.*'OS_STATSU'"),
        (lambda c: c["admm"].update(min_samples=300), r"admm.min_samples.*300.*ridge_diabetes"),
        (lambda c: c["dec"]["datasets"]["mds"].update(k=300),
         r"dec.*k = 300.*uniform10.*abstain"),
        (lambda c: c["data"]["splits"]["uniform10"].update(n_centers=2500),
         r"data.splits.uniform10.*2500 centers.*mds.*2043 samples"),
        (lambda c: c["data"]["mds"]["simulate"].update(n_samples=30, n_clusters=6),
         r"data.splits.skewed10.*zero samples"),
    ],
    ids=["fedcref_k_max", "fedcref_dataset_typo", "admm_split_typo", "admm_outcome_typo",
         "admm_floor", "dec_k_above_centres", "n_centers_above_samples", "skewed_empty_centre"],
)  # fmt: skip
def test_issue30_item12_late_checks_run_at_config_time(
    repo, default, tmp_path, mutate, match, capsys
):
    import yaml

    from fedclust.cli import main

    cfg = copy.deepcopy(default)
    mutate(cfg)
    with pytest.raises(ConfigError, match=match):
        _check(repo, cfg)
    path = tmp_path / "c.yaml"  # `fedclust check-config` says the same, not "valid"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["check-config", str(path)]) == 2
    assert "valid" not in capsys.readouterr().out


def test_issue30_item12_default_and_thesis_configs_pass_the_config_time_checks(repo, tmp_path):
    from fedclust.config import SCHEMA, load_config_file

    for name in ("config.yaml", "thesis.yaml", "thesis-smoke.yaml"):
        validate_config(load_config_file(repo / "config" / name), SCHEMA, source=name)
