"""Issue 16 (seed 000 §4.1, §3.8): the tuning grids, their selection order, the settings fed on."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import make_blobs

from fedclust.config import load_yaml, validate_config
from fedclust.dec.pipeline import check_features, train_central_tsae
from fedclust.dec.tuning import (
    grid_points,
    point_ids,
    run_cluster_point,
    run_tsae_point,
    select,
    with_thesis,
)
from fedclust.dec.units import apply_settings
from fedclust.dec.workflow import final_settings, step1_settings, tune_tsae


@pytest.fixture(scope="module")
def cfg(repo):
    c = validate_config(load_yaml(repo / "config" / "config.yaml"), repo / "config/schema.yaml")
    d = copy.deepcopy(c["dec"])
    d["datasets"] = {"toy": {"k": 3, "selection": "accuracy"},
                     "mds": {"k": 3, "selection": "internal"}}  # fmt: skip
    d["model"]["arch"] = [8, 3]
    d["clustering"].update(max_epochs=2, n_init=2)
    d["tuning"].update(datasets=["toy"], optimizers=["adam", "yogi"], apply=True)
    return d


class W:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_grids_are_seeded_and_sized_as_configured(cfg):
    assert len(grid_points(cfg, "toy", "lr", 1)) == 2 * 1 * 2  # optimizers × schedulers × LRs
    assert len(grid_points(cfg, "toy", "regularizers", 1)) == 2 * 4 * 2
    assert grid_points(cfg, "toy", "lr", 1) == grid_points(cfg, "toy", "lr", 1)
    assert grid_points(cfg, "toy", "lr", 1) != grid_points(cfg, "toy", "lr", 2)
    lrs = [p["lr"] for p in grid_points(cfg, "toy", "cluster", 1)]
    assert all(1e-4 <= v <= 1e-2 for v in lrs)
    assert list(point_ids(cfg, "toy", "batch", 1)) == ["all"]
    c = copy.deepcopy(cfg)
    c["fanout"] = {"tuning": "configuration"}
    assert list(point_ids(c, "toy", "batch", 1)) == ["p0000", "p0001", "p0002", "p0003"]


def test_lr_selection_keeps_the_no_scheduler_rows_and_the_lowest_loss(cfg):
    t = pd.DataFrame(
        [("adam", "none", 1e-3, 0.020), ("adam", "none", 3e-4, 0.012),
         ("adam", "plateau", 7e-4, 0.010),  # lower, but the thesis kept the no-scheduler LR
         ("yogi", "none", 0.04, 0.013), ("yogi", "none", 0.01, 0.015)],
        columns=["optimizer", "scheduler", "lr", "loss"],
    )  # fmt: skip
    settings, best = select("lr", t, cfg, "toy", {"autoencoder_lr": {"sgd": 0.5}})
    assert settings == {"autoencoder_lr": {"sgd": 0.5, "adam": 3e-4, "yogi": 0.04}}
    assert list(best.optimizer) == ["adam", "yogi"]


def test_batch_selection_gives_a_batch_size_per_optimizer(cfg):
    t = pd.DataFrame([("adam", 8, 0.02), ("adam", 16, 0.01), ("yogi", 8, 0.01), ("yogi", 16, 0.03)],
                     columns=["optimizer", "batch_size", "loss"])  # fmt: skip
    settings, _ = select("batch", t, cfg, "toy", {"autoencoder_lr": {"adam": 1e-3}})
    assert settings == {"autoencoder_lr": {"adam": 1e-3},
                        "autoencoder_batch_size": {"adam": 16, "yogi": 8}}  # fmt: skip


def _cluster_rows(rows):
    cols = ["optimizer", "batch_size", "lr", "accuracy", "cycle_accuracy", "recon_loss",
            "sil_data", "ch_data", "sil_feat", "ch_feat"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def test_cluster_selection_follows_the_euromds_order(cfg):
    """§3.8: Silh_data ↓, then CH_data ↓, Silh_feat ↓, CH_feat ↓, recon ↑ — accuracy ignored."""
    t = _cluster_rows([
        ("yogi", 64, 1e-3, 0.9, 1, 0.1, 0.23, 100, 0.9, 10),
        ("yogi", 32, 3e-3, 0.5, 1, 0.5, 0.23, 120, 0.1, 1),  # ties Silh_data, higher CH_data
        ("yogi", 8, 5e-3, 0.99, 1, 0.01, 0.22, 999, 0.99, 99),
        ("adam", 64, 1e-4, 0.6, 1, 0.2, 0.20, 50, 0.5, 5),
        ("adam", 16, 2e-4, 0.6, 1, 0.1, 0.20, 50, 0.5, 5),  # ties up to recon, lower recon
    ])  # fmt: skip
    settings, best = select("cluster", t, cfg, "mds", None)
    assert settings["clustering_lr"] == {"yogi": 3e-3, "adam": 2e-4}
    assert settings["clustering_batch_size"] == {"yogi": 32, "adam": 16}
    assert list(best.optimizer) == ["adam", "yogi"]  # in dec.tuning.optimizers order


def test_cluster_selection_follows_the_digits_order(cfg):
    """§3.8 digits: accuracy ↓, ties by reconstruction ↑, then cycle accuracy ↓."""
    t = _cluster_rows([
        ("adam", 64, 1e-4, 0.80, 0.5, 3.0, 0.9, 1, 0.9, 1),
        ("adam", 256, 1e-3, 0.85, 0.6, 2.8, 0.1, 1, 0.1, 1),
        ("adam", 128, 6e-4, 0.85, 0.9, 6.0, 0.1, 1, 0.1, 1),
    ])  # fmt: skip
    settings, _ = select("cluster", t, cfg, "toy", {"clustering_batch_size": 64})
    assert settings["clustering_lr"] == {"adam": 1e-3}
    assert settings["clustering_batch_size"] == {"sgd": 64, "adam": 256, "yogi": 64}


def test_thesis_values_sit_beside_ours():
    best = pd.DataFrame([("adam", "none", 4e-4, 0.011)], columns=["optimizer", "scheduler", "lr",
                                                                   "loss"])  # fmt: skip
    out = with_thesis(best, "mnist", "lr")
    assert out.loc[0, "thesis_lr"] == 0.0003 and out.loc[0, "thesis_loss"] == 0.0122
    assert out.loc[0, "source"] == "Table A.1"
    assert with_thesis(best, "toy", "lr").loc[0, "source"] == "not in the thesis"


def test_settings_files_are_wired_into_the_training_rules(cfg):
    w = W(dataset="toy", grid="cluster", unit="all")
    assert final_settings(cfg, w) == ["results/dec/toy/tuning/cluster_selected.json"]
    assert step1_settings(cfg, w) == ["results/dec/toy/tuning/batch_selected.json"]
    assert tune_tsae(cfg, w, 1) == ["results/dec/toy/centralized/tsae/adam.pt",
                                    "results/dec/toy/centralized/tsae/yogi.pt"]  # fmt: skip
    assert final_settings(cfg, W(dataset="mds")) == []  # not tuned
    off = copy.deepcopy(cfg)
    off["tuning"]["apply"] = False  # the default config: grids run, settings not applied
    assert final_settings(off, w) == [] and step1_settings(off, w) == []


def test_points_run_and_their_settings_reach_the_run(cfg):
    x, y = make_blobs(90, n_features=6, centers=3, random_state=2)
    x = ((x - x.min()) / (x.max() - x.min())).astype(np.float32)
    p = grid_points(cfg, "toy", "lr", 3)[0]
    row = run_tsae_point(x, cfg, "toy", "lr", p, 3)
    assert row["epochs"] == cfg["tuning"]["step1"]["epochs"] and row["loss"] > 0
    c = apply_settings(cfg, "toy", {"autoencoder_lr": {"adam": p["lr"]}})
    tsae, _ = train_central_tsae(torch.as_tensor(check_features(x, "toy")), c, "toy", "adam", 3)
    q = grid_points(cfg, "toy", "cluster", 3)[0]
    out = run_cluster_point(x, y.astype(str), tsae, cfg, "toy", q, 3)
    assert out["lr"] == q["lr"] and out["alpha"] == 1.0 and out["scaler"] == "none"
    assert 0 <= out["accuracy"] <= 1


def test_new_dec_keys_are_described_in_the_schema(repo):
    import yaml

    dec = yaml.safe_load((repo / "config" / "schema.yaml").read_text())["properties"]["dec"]

    def walk(node, path):
        assert node.get("description"), path
        for k, v in (node.get("properties") or {}).items():
            walk(v, f"{path}.{k}")

    for key in ("tuning", "fanout"):
        walk(dec["properties"][key], f"dec.{key}")
    ds = dec["properties"]["datasets"]["additionalProperties"]["properties"]
    assert "one per optimizer" in ds["autoencoder_batch_size"]["description"]


def test_a_diverging_point_is_recorded_not_fatal_and_never_selected(cfg):
    """An LR so large that the weights turn NaN: Dice + BCE stops with torch's range error; the
    point is kept as diverged (loss NaN) and the selection passes over it."""
    x, _ = make_blobs(90, n_features=6, centers=3, random_state=2)
    x = ((x - x.min()) / (x.max() - x.min())).astype(np.float32)
    c = copy.deepcopy(cfg)
    c["tuning"]["step1"]["epochs"] = 2
    p = {"optimizer": "adam", "kind": "beta", "value": 0.5}
    ok = run_tsae_point(x, c, "toy", "regularizers", p, 3)
    assert ok["diverged"] is False and np.isfinite(ok["loss"])
    c["datasets"]["toy"]["autoencoder_lr"] = {"adam": 1e30}
    c["datasets"]["toy"]["autoencoder_epochs"] = 2
    bad = run_tsae_point(x, c, "toy", "lr", {"optimizer": "adam", "scheduler": "none",
                                            "lr": 1e30}, 3)  # fmt: skip
    assert bad["diverged"] is True and np.isnan(bad["loss"])
    t = pd.DataFrame([{**bad, "scheduler": "none"}, {**ok, "scheduler": "none", "lr": 1e-3}])
    settings, _ = select("lr", t, c, "toy", None)
    assert settings["autoencoder_lr"]["adam"] == 1e-3


def test_per_optimizer_override_falls_back_to_the_global_value():
    """A grid tuned for some optimizers only (thesis-smoke: yogi) leaves the others on the
    global value; an optimizer that neither names is a ConfigError naming the key."""
    from fedclust.dec.pipeline import dataset_setting
    from fedclust.dec.units import apply_settings
    from fedclust.errors import ConfigError

    cfg = {
        "datasets": {"mds": {}},
        "autoencoder": {"batch_size": {"adam": 32, "yogi": 64}, "lr": 0.01},
        "model": {},
    }
    tuned = apply_settings(
        cfg, "mds", {"autoencoder_batch_size": {"yogi": 16}, "autoencoder_lr": {"yogi": 0.5}}
    )
    assert dataset_setting(tuned, "mds", "autoencoder.batch_size", "yogi") == 16
    assert dataset_setting(tuned, "mds", "autoencoder.batch_size", "adam") == 32
    assert dataset_setting(tuned, "mds", "autoencoder.lr", "adam") == 0.01  # scalar global
    assert dataset_setting(tuned, "mds", "autoencoder.lr", "yogi") == 0.5
    with pytest.raises(ConfigError, match="no autoencoder.batch_size for optimizer sgd"):
        dataset_setting(tuned, "mds", "autoencoder.batch_size", "sgd")
