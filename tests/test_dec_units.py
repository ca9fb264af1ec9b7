"""Issue 14 fan-out of the DEC stage: per-unit results merged equal the all-in-one run."""

from __future__ import annotations

import copy
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import make_blobs

from fedclust.config import load_yaml, validate_config
from fedclust.dec.merge import (
    best_record,
    concat,
    load_pt,
    load_tsae,
    merge_central,
    save_pt,
    tsae_record,
)
from fedclust.dec.pipeline import (
    FedTSAEState,
    check_features,
    fed_dec_run,
    fed_tsae_stage,
    restore_clients,
    run_central_unit,
    run_centralized,
    run_federated,
    run_federated_unit,
    sort_results,
    train_central_tsae,
)
from fedclust.dec.units import apply_settings, central_units, federated_units
from fedclust.errors import ConfigError


@pytest.fixture(scope="module")
def cfg(repo):
    c = validate_config(load_yaml(repo / "config" / "config.yaml"), repo / "config/schema.yaml")
    d = copy.deepcopy(c["dec"])
    d["datasets"] = {"toy": {"k": 3, "selection": "accuracy"}}
    d["model"]["arch"] = [8, 3]
    d["autoencoder"].update(epochs=3, batch_size=16)
    d["clustering"].update(max_epochs=2, n_init=2)
    d["grid"] = {"optimizers": ["sgd", "adam"], "alphas": [1, 9], "scalers": ["none"]}
    d["federated"].update(
        strategies=["fedavg", "fedyogi"],
        centroid_aggregation=["max_min", "random", "double_kmeans"],
        ae_rounds=2,
        dec_rounds=2,
        ae_batch_size=16,
    )
    return d


@pytest.fixture(scope="module")
def toy():
    x, y = make_blobs(120, n_features=6, centers=3, cluster_std=0.8, random_state=1)
    x = (x - x.min()) / (x.max() - x.min())
    return x.astype(np.float32), y.astype(str)


def _level(cfg, **levels):
    c = copy.deepcopy(cfg)
    c["fanout"] = levels
    return c


def test_unit_enumeration_follows_the_loop_order(cfg):
    assert list(central_units(cfg)) == ["all"]  # default: one job per dataset
    # α as the config spells it: the seeds derive from it (1 and 1.0 give different seeds)
    assert [type(c[1]) for c in central_units(cfg)["all"]] == [int] * 4
    per_opt = central_units(_level(cfg, centralized="optimizer"))
    assert list(per_opt) == ["sgd", "adam"] and len(per_opt["adam"]) == 2
    per_cfg = central_units(_level(cfg, centralized="configuration"))
    assert list(per_cfg) == ["sgd__a1__none", "sgd__a9__none", "adam__a1__none", "adam__a9__none"]
    fed = federated_units(_level(cfg, federated="aggregation"))
    assert len(fed) == 6 and list(fed)[1] == "fedavg__random"
    with pytest.raises(ConfigError, match="dec.fanout.centralized"):
        central_units(_level(cfg, centralized="seed"))


def test_centralized_units_merged_equal_the_all_in_one_run(cfg, toy, tmp_path):
    x, y = toy
    whole = run_centralized(x, y, cfg, "toy", 5)
    c = _level(cfg, centralized="configuration")
    xt = torch.as_tensor(check_features(x, "toy"))
    records = {}
    for opt in c["grid"]["optimizers"]:  # one dec_tsae job each, through a hand-over file
        save_pt(tmp_path / f"{opt}.pt", tsae_record(*train_central_tsae(xt, c, "toy", opt, 5)))
        records[opt] = load_pt(tmp_path / f"{opt}.pt")
    units, bests = [], []
    for unit, configs in reversed(list(central_units(c).items())):  # job order does not matter
        tsaes = {configs[0][0]: load_tsae(records[configs[0][0]], c, x.shape[1])}
        res = run_central_unit(x, y, c, "toy", 5, configs, tsaes)
        assert res.ae_curves.empty  # the TSAE curve comes from the dec_tsae job
        save_pt(tmp_path / f"{unit}.pt", best_record(res))
        units.insert(0, {"table": res.table, "ae_curves": res.ae_curves,
                         "dec_curves": res.dec_curves})  # fmt: skip
        bests.insert(0, load_pt(tmp_path / f"{unit}.pt"))
    merged = merge_central(units, records, bests, x, c, "toy")
    pd.testing.assert_frame_equal(merged.table, whole.table)
    pd.testing.assert_frame_equal(merged.ae_curves, whole.ae_curves)
    pd.testing.assert_frame_equal(merged.dec_curves, whole.dec_curves)
    assert merged.best["key"] == whole.best["key"]
    np.testing.assert_array_equal(merged.best["labels"], whole.best["labels"])
    np.testing.assert_array_equal(merged.best["features"], whole.best["features"])


def test_federated_units_merged_equal_the_all_in_one_run(cfg, toy, tmp_path):
    x, y = toy
    centers = np.repeat(["a", "b", "c"], 40)
    whole = run_federated(x, y, centers, cfg, "toy", "s", 3)
    c = _level(cfg, federated="aggregation")
    states = {}
    for strategy in c["federated"]["strategies"]:  # one dec_fed_tsae job each
        _, state = fed_tsae_stage(x, centers, c, "toy", "s", strategy, 3)
        save_pt(tmp_path / f"{strategy}.pt", asdict(state))
        states[strategy] = FedTSAEState(**load_pt(tmp_path / f"{strategy}.pt"))
    parts = {}
    for unit, runs in reversed(list(federated_units(c).items())):  # last aggregation first
        parts[unit] = run_federated_unit(x, y, centers, c, "toy", "s", 3, runs, states)
    parts = [parts[u] for u in federated_units(c)]
    table = sort_results(concat([p.table for p in parts]), "accuracy")
    pd.testing.assert_frame_equal(table, whole.table)
    pd.testing.assert_frame_equal(concat([p.curves for p in parts]), whole.curves)
    pd.testing.assert_frame_equal(concat([p.ledger for p in parts]), whole.ledger)
    # the replay matters: without the earlier aggregation's minibatch draws "random" differs
    clients = restore_clients(x, centers, c, "toy", "s", states["fedavg"], 3, skip_runs=0)
    row, curve, _ = fed_dec_run(x, y, clients, states["fedavg"], c, "toy", "s", "random", 3)
    ref = whole.curves.query("strategy == 'fedavg' and centroids == 'random'")["loss"].to_numpy()
    assert not np.array_equal([r["loss"] for r in curve], ref)


def test_settings_file_overrides_per_dataset_keys(cfg):
    c = copy.deepcopy(cfg)
    c["datasets"]["toy"]["clustering_lr"] = {"sgd": 0.5}
    out = apply_settings(c, "toy", {"clustering_lr": {"adam": 0.002}, "autoencoder_epochs": 7})
    assert out["datasets"]["toy"]["clustering_lr"] == {"sgd": 0.5, "adam": 0.002}
    assert out["datasets"]["toy"]["autoencoder_epochs"] == 7
    assert "autoencoder_epochs" not in c["datasets"]["toy"]  # the input is not modified
