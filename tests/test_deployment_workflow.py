"""Issue 30 B.1: the workflow's deployment rule (``deployment_run``) for every stage with a
workflow hook — the fast path, no Flower: the rule's library function
(:func:`fedclust.deployrun.execute`) builds each stage's centres of the workflow's split from the
config and the rule's inputs, writes one folder per centre and runs the stage from those
folders in-process on both sides (engine ``inprocess``); the localhost deployment of the same
function: tests/test_deployment_rule.py. Config-time checks of ``deployment``."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from fedclust import deployment, deployrun
from fedclust.config import load_yaml, validate_config
from fedclust.errors import ConfigError
from fedclust.io import write_table


@pytest.fixture(scope="module")
def base(repo):
    cfg = validate_config(load_yaml(repo / "config" / "config.yaml"), repo / "config/schema.yaml")
    cfg["deployment"] = {**cfg["deployment"], "enabled": True, "iterations": 2}
    return cfg


def _config(base, stage, unit=None, **sections):
    cfg = copy.deepcopy(base)
    cfg["deployment"]["stages"] = [stage]
    cfg["deployment"]["units"] = {} if unit is None else {stage: unit}
    for k, v in sections.items():
        cfg[k] = {**cfg[k], **v}
    deployrun.check(cfg)
    return cfg


def _execute(cfg, stage, inputs, tmp_path):
    res = deployrun.execute(cfg, stage, inputs, engine="inprocess", workdir=tmp_path / "w")
    comp = res["comparison"]
    assert comp["equal"] is True and all(comp["equal_by_output"].values()), comp
    assert comp["engine"] == "inprocess" and comp["dropped"] == {}
    assert res["result"]["equal"].all() and len(res["result"]) > 0
    # every centre's folder holds only its own file of the stage
    sites = sorted((tmp_path / "w" / "sites").iterdir())
    assert [p.name for p in sites] == comp["centres"]
    assert all([f.name for f in p.iterdir()] == [f"{stage}.npz"] for p in sites)
    led = res["ledger"]
    assert set(led.sender) - {"server"} <= set(comp["centres"])
    assert comp["messages"] == int((led.kind != "abstain").sum())
    return res, comp


def test_admm_task_on_the_rule_equals_inprocess_and_caps_the_iterations(base, tmp_path):
    cfg = _config(base, "admm", "ridge_diabetes")
    res, comp = _execute(cfg, "admm", deployrun.inputs(cfg, "admm"), tmp_path)
    assert comp["unit"] == "ridge_diabetes" and comp["values"]["iterations"] == 2
    assert comp["equal_to_workflow"] is None  # no workflow reference for this stage
    z = res["result"][res["result"].output == "z"]
    assert len(z) == 11  # diabetes: 10 features + bias


def test_the_apps_engine_runs_the_deployments_own_apps(base, tmp_path):
    """``deployment.engine: apps``: the deployment's ServerApp and ClientApps in one process
    (:func:`fedclust.flower.deploy.simulate`), equal to in-process."""
    pytest.importorskip("flwr")
    cfg = _config(base, "admm")
    res = deployrun.execute(cfg, "admm", {}, engine="apps", workdir=tmp_path)
    assert res["comparison"]["equal"] is True and res["comparison"]["engine"] == "apps"
    assert (tmp_path / "run" / "done.json").is_file()  # the ServerApp's own record


def test_boosting_unit_on_the_rule_equals_inprocess(base, tmp_path):
    cfg = _config(base, "boosting", "breast_cancer/iid/vote_union_s5")
    res, comp = _execute(cfg, "boosting", deployrun.inputs(cfg, "boosting"), tmp_path)
    assert comp["values"]["n_trees"] == 2 and len(comp["centres"]) == 4  # iid: 4 centres
    with pytest.raises(ConfigError, match=r"(?s)not a unit of the config.*bre.*/iid/histogram"):
        _config(base, "boosting", "breast_cancer/iid/pooled")  # not federated


@pytest.fixture(scope="module")
def cohort(tmp_path_factory, base):
    from fedclust.survival.cohort import simulate_cohort

    root = tmp_path_factory.mktemp("cohort")
    s = base["survival"]
    x, obs = simulate_cohort(base["seed"], 600, int(s["min_carriers"]), list(s["clinical"]))
    write_table(root / "covariates.parquet", x)
    write_table(root / "outcomes.tsv", obs)
    return {"covariates": str(root / "covariates.parquet"), "outcomes": str(root / "outcomes.tsv")}


@pytest.mark.parametrize(
    ("stage", "unit", "key"),
    [("survival_km", "OS/noniid_bm_blast", "km.survival"),
     ("survival_coxph", "OS/noniid_bm_blast", "beta"),
     ("survival", "OS/iid_balanced/sequential", "model[0]")],
)  # fmt: skip
def test_survival_on_the_rule_equals_the_workflows_functions(
    base, cohort, tmp_path, stage, unit, key
):
    cfg = _config(base, stage, unit, survival={"n_centres": 3})
    assert deployrun.inputs(cfg, stage) == deployment.get(stage).workflow.inputs(cfg)
    res, comp = _execute(cfg, stage, cohort, tmp_path)
    # the deployed outputs equal the workflow's own: survival_reference's federated_km /
    # fit_federated_coxph, survival_job's train_strategy
    assert comp["equal_to_workflow"] is True, comp["equal_to_workflow_by_output"]
    assert len(comp["centres"]) == 3
    assert (res["result"].output == key).sum() > 0


def test_heart_fl_on_the_rule_equals_inprocess(base, tmp_path):
    from fedclust.data import heart

    raw, uci = heart.load_from_config(base["data"]["heart"])
    feats, obs, _ = heart.build(raw, uci, base["data"]["heart"]["imputation"])
    inputs = {"features": str(tmp_path / "f.parquet"), "obs": str(tmp_path / "obs.tsv")}
    write_table(inputs["features"], feats)
    write_table(inputs["obs"], obs)
    cfg = _config(base, "heart", "sources/FL_SMA", decentral={"epochs": 1})
    res, comp = _execute(cfg, "heart", inputs, tmp_path)
    # the UCI sources, "VA Long Beach" named for its folder
    assert comp["centres"] == sorted(["Cleveland", "Hungary", "Switzerland", "VA_Long_Beach"])
    metrics = res["result"][res["result"].output == "metrics.round"]
    assert sorted(set(metrics.deployed)) == [1, 2]  # deployment.iterations caps the rounds
    with pytest.raises(ConfigError, match="not a unit of the config"):
        _config(base, "heart", "hospitals/RAR")  # peer-to-peer: no server, not deployable


def test_dec_on_the_rule_equals_inprocess(base, tmp_path, dec_toy_cfg, toy_blobs):
    x, y = toy_blobs(120, 8, 0.6, 0)
    ids = [f"s{i:03d}" for i in range(len(x))]
    inputs = {k: str(tmp_path / f) for k, f in
              (("features", "f.parquet"), ("obs", "obs.tsv"), ("split", "split.tsv"))}  # fmt: skip
    write_table(inputs["features"], pd.DataFrame(x, index=pd.Index(ids, name="sample_id")))
    write_table(inputs["obs"], pd.DataFrame({"label": y.astype(str)},
                                            index=pd.Index(ids, name="sample_id")))  # fmt: skip
    write_table(inputs["split"], pd.DataFrame({"center": np.repeat([0, 1], 60)},
                                              index=pd.Index(ids, name="sample_id")))  # fmt: skip
    dec = dec_toy_cfg(strategies=["fedadam"], centroid_aggregation=["max_min"], ae_rounds=3,
                      dec_rounds=1, ae_batch_size=16)  # fmt: skip
    dec.update(federated_datasets=["toy"], splits=["s"])
    cfg = _config(base, "dec")
    cfg["dec"] = dec
    assert deployrun.unit(cfg, "dec") == "toy/s/fedadam/max_min"
    res, comp = _execute(cfg, "dec", inputs, tmp_path)
    assert comp["centres"] == ["center_0", "center_1"]
    curves = res["result"][res["result"].output == "curves.stage"]
    assert curves.deployed.tolist() == ["ae", "ae", "dec"]  # 3 TSAE rounds capped at 2


def test_a_difference_is_reported(base, tmp_path):
    """The comparison can fail: a workflow reference that differs, a result that differs."""
    from fedclust.admm import deployment as ad

    cfg = _config(base, "admm")
    wf = ad.workflow_run(cfg, {})
    res = deployrun.run("admm", wf.centres, wf.params, engine="inprocess",
                        reference={"z": [np.zeros(11)]})  # fmt: skip
    assert res["equal"]["z"] is True and res["workflow"] == {"z": False}
    got = {**res["deployed"], "z": [res["deployed"]["z"][0] + 1e-15]}
    table = deployrun.result_table(got, res["inprocess"])
    assert not table[table.output == "z"]["equal"].any()
    assert table[table.output != "z"]["equal"].all()


def test_config_time_checks_name_the_choices(base):
    def bad(**dep):
        cfg = copy.deepcopy(base)
        cfg["deployment"] = {**cfg["deployment"], **dep}
        return cfg

    with pytest.raises(ConfigError, match=r"'nope' is not a registered deployed stage(.|\n)*"
                       r"registered: \[.*'bayes'.*\]"):  # fmt: skip
        deployrun.check(bad(stages=["admm", "nope"]))
    with pytest.raises(ConfigError, match=r"'check' cannot be launched from the workflow(.|\n)*"
                       r"one of \['admm', 'boosting'"):  # fmt: skip
        deployrun.check(bad(stages=["check"]))
    with pytest.raises(ConfigError, match=r"deployment.units.admm 'nope' is not a unit"):
        deployrun.check(bad(units={"admm": "nope"}))
    with pytest.raises(ConfigError, match="names stages not deployed"):
        deployrun.check(bad(stages=["admm"], units={"dec": None}))
    with pytest.raises(ConfigError, match="twice"):
        deployrun.check(bad(stages=["admm", "admm"]))
    deployrun.check(bad(enabled=False, stages=["nope"]))  # off: not checked
    cfg = bad(stages=list(deployrun.STAGES))
    assert deployrun.targets(cfg) == [f"results/deployment/{s}/comparison.json"
                                      for s in deployrun.STAGES]  # fmt: skip


def test_fedclust_check_config_checks_the_deployment(repo, tmp_path, capsys):
    from fedclust.cli import main

    path = tmp_path / "c.yaml"
    path.write_text(f"base: {repo / 'config' / 'config.yaml'}\n"
                    "deployment: {enabled: true, stages: [admm, check]}\n")  # fmt: skip
    assert main(["check-config", str(path)]) == 2
    assert "'check' cannot be launched from the workflow" in capsys.readouterr().err


def test_the_launchable_stages_are_the_registered_ones_with_a_hook():
    hooked = {s for s in deployment.MODULES if deployment.get(s).workflow is not None}
    assert hooked == set(deployrun.STAGES)


def _split_file(path, ids, centres):
    write_table(path, pd.DataFrame({"center": centres}, index=pd.Index(ids, name="sample_id")))
    return str(path)


def test_fedprep_tables_mds_on_the_rule_equals_the_workflows_imputation(base, tmp_path):
    rng = np.random.default_rng(0)
    ids = [f"p{i:03d}" for i in range(60)]
    raw = pd.DataFrame(rng.integers(0, 2, (60, 5)).astype(float), columns=list("abcde"),
                       index=pd.Index(ids, name="sample_id"))  # fmt: skip
    raw[raw.index.isin(ids[::7])] = np.nan  # missing values to impute
    inputs = {
        "raw": str(tmp_path / "raw.parquet"),
        "split": _split_file(tmp_path / "split.tsv", ids, np.repeat(["c0", "c1", "c2"], 20)),
    }
    write_table(inputs["raw"], raw)
    cfg = _config(base, "fedprep_tables", "mds")
    assert deployrun.inputs(cfg, "fedprep_tables")["split"].startswith("results/data/mds/splits/")
    res, comp = _execute(cfg, "fedprep_tables", inputs, tmp_path)
    assert comp["equal_to_workflow"] is True, comp["equal_to_workflow_by_output"]
    assert comp["centres"] == ["c0", "c1", "c2"]
    fill = res["result"][res["result"].output == "fill"].inprocess.to_numpy(float)
    np.testing.assert_allclose(fill, raw.mean().to_numpy())  # a ratio of sums: the pooled mean
    with pytest.raises(ConfigError, match="not a unit of the config"):
        _config(base, "fedprep_tables", "rnaseq")


def test_fedprep_tables_heart_on_the_rule_equals_inprocess(base, tmp_path):
    cfg = _config(base, "fedprep_tables", "heart")
    inputs = deployrun.inputs(cfg, "fedprep_tables")
    assert set(inputs) == {"raw", "uci"}
    res, comp = _execute(cfg, "fedprep_tables", inputs, tmp_path)
    assert len(comp["centres"]) == 5 and all(" " not in c for c in comp["centres"])
    assert res["result"][res["result"].output == "classes"].inprocess.tolist() == [0, 1]


def test_fedprep_on_the_rule_equals_the_workflows_rnaseq_fit(base, tmp_path):
    rng = np.random.default_rng(1)
    ids = [f"s{i:03d}" for i in range(36)]
    mu = rng.gamma(2.0, 50.0, 40)
    counts = pd.DataFrame(rng.negative_binomial(5, 5 / (5 + mu), (36, 40)),
                          index=pd.Index(ids, name="sample_id"),
                          columns=[f"g{j}" for j in range(40)])  # fmt: skip
    inputs = {
        "counts": str(tmp_path / "counts.parquet"),
        "split": _split_file(tmp_path / "split.tsv", ids, np.repeat(["r0", "r1", "r2"], 12)),
    }
    write_table(inputs["counts"], counts)
    cfg = _config(base, "fedprep")
    cfg["data"] = {**cfg["data"], "rnaseq": {**cfg["data"]["rnaseq"], "top_genes": 10}}
    assert deployrun.unit(cfg, "fedprep") == cfg["data"]["rnaseq"]["federated"]["compare"][0]
    res, comp = _execute(cfg, "fedprep", inputs, tmp_path)
    assert comp["equal_to_workflow"] is True, comp["equal_to_workflow_by_output"]
    genes = res["result"][res["result"].output == "selected_genes"]
    assert len(genes) == 10


def test_fedcref_on_the_rule_equals_the_workflows_run(base, tmp_path):
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    np.savez(tmp_path / "digits.npz", x=(x / 16.0).astype(np.float32), y=y)
    f = copy.deepcopy(base["fedcref"])
    f["system"].update(samples_per_class=6)
    f["autoencoder"].update(hidden=[16, 8], epochs=2)
    f["federated"].update(rounds=1, first_epochs=1, later_epochs=1)
    f["association"]["theta"] = 0.5
    cfg = _config(base, "fedcref", "exp4/digits_n004")
    cfg["fedcref"] = f
    assert deployrun.inputs(cfg, "fedcref") == {"data": "results/fedcref/data/digits.npz"}
    res, comp = _execute(cfg, "fedcref", {"data": str(tmp_path / "digits.npz")}, tmp_path)
    assert comp["equal_to_workflow"] is True, comp["equal_to_workflow_by_output"]
    assert comp["centres"] == ["c000", "c001", "c002", "c003"]
    assert comp["values"]["iterations"] <= 2  # deployment.iterations caps Algorithm 1


@pytest.mark.parametrize("unit", ["pvi_synchronous__noniid", "fedavg__iid"])
def test_bayes_on_the_rule_equals_the_workflows_unit(base, tmp_path, unit):
    from fedclust.bayes import data

    d = data.build_dataset("digits", 1, 0.5, 0.0)
    d = {**d, "x_train": d["x_train"][:240], "y_train": d["y_train"][:240], "val": d["val"][:240]}
    np.savez(tmp_path / "data.npz", **d)
    b = copy.deepcopy(base["bayes"])
    b["federated"].update(n_clients=3, model={"hidden": [8], "bias": True})
    b["federated"]["local"].update(epochs=1, mc_test=2)
    cfg = _config(base, "bayes", unit)
    cfg["bayes"] = b
    assert deployrun.inputs(cfg, "bayes") == {"data": "results/bayes/data.npz"}
    res, comp = _execute(cfg, "bayes", {"data": str(tmp_path / "data.npz")}, tmp_path)
    # the rounds equal rule bayes_federated's run_federated_unit (rounds capped at 2)
    assert comp["equal_to_workflow"] is True, comp["equal_to_workflow_by_output"]
    assert comp["centres"] == ["c000", "c001", "c002"]
    assert sorted(set(res["result"][res["result"].output == "rounds.round"].deployed)) == [1, 2]


@pytest.fixture(scope="module")
def gen_inputs(tmp_path_factory, base):
    """The data stage's mnist table (scikit-learn's digits, pixels in [0, 1]) and heart table."""
    from sklearn.datasets import load_digits

    from fedclust.data import heart

    root = tmp_path_factory.mktemp("gen")
    x, y = load_digits(return_X_y=True)
    ids = pd.Index([f"d{i:04d}" for i in range(len(x))], name="sample_id")
    pixels = pd.DataFrame(x / 16.0, index=ids, columns=[f"p{j}" for j in range(64)])
    write_table(root / "mnist.parquet", pixels)
    write_table(root / "mnist_obs.tsv", pd.DataFrame({"label": y}, index=ids))
    raw, uci = heart.load_from_config(base["data"]["heart"])
    feats, obs, _ = heart.build(raw, uci, base["data"]["heart"]["imputation"])
    write_table(root / "heart.parquet", feats)
    write_table(root / "heart_obs.tsv", obs)
    return {"mnist_features": str(root / "mnist.parquet"), "mnist_obs": str(root / "mnist_obs.tsv"),
            "heart_features": str(root / "heart.parquet"),
            "heart_obs": str(root / "heart_obs.tsv")}  # fmt: skip


@pytest.mark.parametrize(
    ("stage", "unit", "centres"),
    [("savae", "mnist_r0.5", ["good", "poor"]),
     ("savae_virtual", "mnist_r0.5", ["good", "poor"]),
     ("dgd", "mnist", ["c00", "c01", "c02"]),
     ("radialgan", "heart_d62", ["Cleveland", "Hungary", "Switzerland", "VA_Long_Beach"])],
)  # fmt: skip
def test_generative_on_the_rule_equals_inprocess(base, gen_inputs, tmp_path, stage, unit, centres):
    from fedclust.federation import disclosure

    g = copy.deepcopy(base["generative"])
    g["savae"]["datasets"]["mnist"].update(n_good=60, n_poor=20, n_test=30)
    g["savae"]["model"].update(latent=2, hidden=[8])
    g["savae"]["train"].update(local_epochs=1)
    g["savae"]["n_virtual"] = 20
    g["dgd"]["datasets"]["mnist"]["n_samples"] = 90
    g["dgd"]["model"]["hidden"] = [8]
    g["dgd"]["train"].update(local_epochs=1)
    cfg = _config(base, stage, unit)
    cfg["generative"] = g
    want = deployrun.inputs(cfg, stage)
    assert set(want) <= set(gen_inputs), want  # the data stage's tables of the unit
    # the job's disclosure section (the rule script sets it): the good site's opt-in to send
    # virtual patients
    disclosure.configure(cfg["disclosure"])
    try:
        res, comp = _execute(cfg, stage, {k: gen_inputs[k] for k in want}, tmp_path)
    finally:
        disclosure.configure(None)
    assert comp["unit"] == unit and comp["centres"] == centres
    assert comp["equal_to_workflow"] is None
    if stage == "savae_virtual":  # the good site's own training: 2 rounds x 1 epoch
        assert comp["values"]["n_virtual"] == g["savae"]["n_virtual"]
    elif stage != "radialgan":  # FedAvg: rounds capped at 2
        assert res["result"][res["result"].output == "rounds.round"].deployed.tolist() == [1, 2]


@pytest.fixture(scope="module")
def hac_inputs(tmp_path_factory):
    """A small cohort as the data stage writes it: sf / vst matrices and obs.tsv's regions."""
    root = tmp_path_factory.mktemp("hac")
    g = np.random.default_rng(3)
    ids = pd.Index([f"s{i:03d}" for i in range(60)], name="sample_id")
    centre = np.repeat(["r0", "r1", "r2"], [24, 20, 16])
    x = g.normal(size=(60, 30)) + (np.arange(60) % 3)[:, None]
    out = {"obs": str(root / "obs.tsv")}
    write_table(out["obs"], pd.DataFrame({"center": centre}, index=ids))
    for prep, m in (("sf", np.exp(x)), ("vst", x)):
        out[prep] = str(root / f"{prep}.parquet")
        write_table(out[prep], pd.DataFrame(m, index=ids, columns=[f"g{j}" for j in range(30)]))
    return out


@pytest.mark.parametrize(
    "unit",
    ["SIMA/projection/vst-cityblock-geometric-run0", "SIMA/gradual/vst-euclidean-average",
     "SIMB/simultaneous/ward"],
)  # fmt: skip
def test_hac_unit_on_the_rule_equals_the_workflows_functions(base, hac_inputs, tmp_path, unit):
    """A HAC unit of the workflow on the deployment rule: the deployed run equals in-process
    and the workflow's own function (projection_clustering / gradual_sharing; simultaneous:
    the centres that took part)."""
    cfg = _config(base, "hac", unit)
    cohort, variant, _ = unit.split("/")
    prep = "sf" if variant == "simultaneous" else "vst"
    assert deployrun.inputs(cfg, "hac") == {
        prep: f"results/data/rnaseq/{cohort}/{prep}.parquet",
        "obs": f"results/data/rnaseq/{cohort}/obs.tsv",
    }
    res, comp = _execute(cfg, "hac", {prep: hac_inputs[prep], "obs": hac_inputs["obs"]}, tmp_path)
    assert comp["equal_to_workflow"] is True, comp["equal_to_workflow_by_output"]
    assert comp["unit"] == unit and comp["centres"] == ["center0", "center1", "center2"]
    if variant == "projection":  # the server names the sketch and the run, never Q's seed
        led = res["ledger"]
        assert set(led[led.sender == "server"].fields) == {"dtype,k,kind,run"}
    with pytest.raises(ConfigError, match="not a unit of the config"):
        _config(base, "hac", f"{cohort}/{variant}/nope")
