"""DEC stage end to end on tiny data: centralized grid, federated grid, config, input errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from fedclust.config import load_yaml, validate_config
from fedclust.dec.pipeline import check_features, run_centralized, run_federated
from fedclust.errors import ConfigError, InputDataError


@pytest.fixture(scope="module")
def cfg(dec_toy_cfg):
    return dec_toy_cfg(
        epochs=15,
        grid=True,
        strategies=["fedavg", "fedyogi"],
        ae_rounds=3,
        dec_rounds=2,
        ae_batch_size=16,
    )


@pytest.fixture(scope="module")
def toy(toy_blobs):
    return toy_blobs(300, 12, 0.6, 0)


def test_both_configs_validate(repo):
    for name in ("config.yaml", "thesis.yaml"):
        c = validate_config(load_yaml(repo / "config" / name), repo / "config/schema.yaml")
        assert c["dec"]["clustering"]["n_init"] == 20
    thesis = load_yaml(repo / "config" / "thesis.yaml")["dec"]
    assert thesis["model"]["arch"] == "DEC" and thesis["federated"]["dec_rounds"] == 25
    assert thesis["federated"]["server"] == {
        "eta": 0.01,
        "beta_1": 0.9,
        "beta_2": 0.999,
        "tau": 0.001,
    }


def test_bad_dec_config_is_rejected(repo):
    c = load_yaml(repo / "config" / "config.yaml")
    c["dec"]["grid"]["scalers"] = ["minmax"]
    with pytest.raises(ConfigError, match="minmax"):
        validate_config(c, repo / "config/schema.yaml")


def test_centralized_grid_beats_chance_and_is_deterministic(cfg, toy):
    x, y = toy
    r1 = run_centralized(x, y, cfg, "toy", 7)
    assert len(r1.table) == 2 and set(r1.table.alpha) == {1.0, 9.0}
    assert r1.table.accuracy.max() > 0.9  # three well-separated blobs
    assert (r1.table.cycle_accuracy > 0.5).all()
    assert {"sil_data", "ln_ch_feat", "ari", "nmi", "delta_label"} <= set(r1.table.columns)
    r2 = run_centralized(x, y, cfg, "toy", 7)
    assert np.allclose(r1.table.accuracy, r2.table.accuracy)
    assert np.allclose(r1.table.recon_loss, r2.table.recon_loss)


def test_federated_grid_and_ledger(cfg, toy):
    x, y = toy
    centers = np.repeat(["a", "b", "c"], 100)
    res = run_federated(x, y, centers, cfg, "toy", "s", 3)
    assert len(res.table) == 2 * 4  # strategies × centroid aggregations
    assert set(res.table.centroids) == {"max_min", "random", "random_weighted", "double_kmeans"}
    assert res.table.accuracy.max() > 0.6
    led = res.ledger
    ups = led[led.kind == "ae_update"]
    assert len(ups) == 2 * 3 * 3  # strategies × rounds × centers
    assert (led.sender.isin(["server", "center_a", "center_b", "center_c"])).all()
    # an update carries the TSAE parameters + n + loss
    n_params = 12 * 16 + 16 * 4 + 16 + 4 + 12 + 16
    assert (ups.floats == n_params + 2).all()
    from fedclust.dec.report import ledger_summary

    summ = ledger_summary({("toy", "s"): led}).set_index(["strategy", "centroids", "kind"])
    assert summ.loc[("fedavg", "shared", "ae_update"), "floats_per_center_round"] == n_params + 2
    assert summ.loc[("fedyogi", "max_min", "global_centroids"), "messages"] == 3
    assert summ.loc[("fedyogi", "shared", "kmeans_centroids"), "floats"] == 3 * (3 * 4 + 3)


def test_bad_features_fail_clearly():
    with pytest.raises(InputDataError, match="NaN"):
        check_features(np.array([[np.nan, 0.5]]), "f.parquet")
    with pytest.raises(InputDataError, match=r"\[0, 1\]"):
        check_features(np.array([[3.0, 0.5]]), "f.parquet")


def test_missing_reference_label_is_kept_as_na_and_left_out(tmp_path):
    import pandas as pd

    from fedclust.dec.io import load_centers, load_dataset
    from fedclust.dec.pipeline import reference_mask

    ids = pd.Index(["s1", "s2", "s3"], name="sample_id")
    pd.DataFrame({"f": [0.0, 1.0, 0.5]}, index=ids).to_parquet(tmp_path / "features.parquet")
    pd.DataFrame({"label": ["Low", None, "High"]}, index=ids).to_csv(tmp_path / "obs.tsv", sep="\t")
    x, obs, cols = load_dataset(str(tmp_path / "features.parquet"), str(tmp_path / "obs.tsv"))
    assert obs.label.tolist() == ["Low", "NA", "High"] and cols == ["f"]
    assert reference_mask(obs.label.to_numpy()).tolist() == [True, False, True]
    pd.DataFrame({"center": ["a", "b"]}, index=ids[:2]).to_csv(tmp_path / "s.tsv", sep="\t")
    with pytest.raises(InputDataError, match="1 samples have no center"):
        load_centers(str(tmp_path / "s.tsv"), obs.index)


def test_per_dataset_federated_overrides(cfg, toy):
    """dec.datasets.<d>.federated_* replace dec.federated.* for that dataset only (full MNIST runs
    with MNIST-sized batches and fewer rounds while MDS keeps the thesis' 8 / 500)."""
    x, y = toy
    c = copy.deepcopy(cfg)
    c["federated"].update(strategies=["fedavg"], centroid_aggregation=["max_min"])
    c["datasets"]["toy"].update(federated_ae_rounds=2, federated_dec_rounds=1,
                                federated_ae_batch_size=300)  # fmt: skip
    res = run_federated(x[:200], y[:200], np.repeat(["a", "b"], 100), c, "toy", "s", 3)
    curves = res.curves
    assert curves[curves.stage == "ae"]["round"].max() == 2
    assert curves[curves.stage == "dec"]["round"].max() == 1
    assert len(res.ledger[res.ledger.kind == "ae_update"]) == 2 * 2  # rounds × centers


def test_k_sample_center_abstains_and_the_report_ledger_shows_it(cfg, toy):
    """A center with exactly k samples must not send its k "centroids" (its samples)."""
    from fedclust.dec.report import ledger_summary

    x, y = toy
    c = copy.deepcopy(cfg)
    c["federated"].update(strategies=["fedavg"], centroid_aggregation=["max_min"], ae_rounds=1,
                          dec_rounds=1)  # fmt: skip
    centers = np.array(["a"] * 150 + ["b"] * 147 + ["tiny"] * 3)  # k = 3
    res = run_federated(x, y, centers, c, "toy", "s", 3)
    led = res.ledger
    ab = led[led.kind == "abstain"]
    assert ab.sender.tolist() == ["center_tiny"] and ab.reason.tolist() == [
        "no more samples than clusters"
    ]  # no counts leave
    ups = led[led.kind == "kmeans_centroids"]
    assert sorted(ups.sender) == ["center_a", "center_b"]
    assert (led[led.kind == "dec_update"].floats < led[led.kind == "ae_update"].floats.max()).all()
    summ = ledger_summary({("toy", "s"): led}).set_index("kind")
    assert summ.loc["abstain", "abstentions"] == 1 and summ.loc["abstain", "messages"] == 0
    assert summ.loc["abstain", "abstained"] == "center_tiny x1"
