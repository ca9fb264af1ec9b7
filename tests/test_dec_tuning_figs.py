"""Issue 16, second part: the tuning figures (seed 000 Figs 5.1–5.4, A.1–A.10), the batch grid's
activations fed forward (Table A.4), and BMNIST's reuse of MNIST's Step-2 selection."""

from __future__ import annotations

import copy

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from fedclust.config import load_yaml, validate_config
from fedclust.dec.pipeline import make_tsae
from fedclust.dec.tuning import reuse_settings, select, select_activations
from fedclust.dec.tuning_plots import (
    figure_caption,
    figure_panels,
    grid_figure,
    thesis_caption,
    tuning_figure,
)
from fedclust.dec.units import apply_settings
from fedclust.dec.workflow import (
    check_reuse,
    final_settings,
    reuse_inputs,
    step1_settings,
    tune_previous,
    tuned_grids,
    tuning_targets,
)
from fedclust.errors import ConfigError


class W:
    def __init__(self, **kw):
        self.__dict__.update(kw)


@pytest.fixture(scope="module")
def cfg(repo):
    c = validate_config(load_yaml(repo / "config" / "config.yaml"), repo / "config/schema.yaml")
    d = copy.deepcopy(c["dec"])
    d["datasets"] = {"mnist": {"k": 10, "selection": "accuracy"},
                     "bmnist": {"k": 10, "selection": "accuracy"},
                     "mds": {"k": 6, "selection": "internal"}}  # fmt: skip
    d["tuning"].update(datasets=["mnist", "bmnist", "mds"], apply=True,
                       optimizers=["sgd", "adam", "yogi"],
                       reuse={"bmnist": {"source": "mnist", "grids": ["cluster"]}})  # fmt: skip
    d["tuning"]["step1"]["schedulers"] = ["none", "plateau"]
    return d


def _lr_table() -> pd.DataFrame:
    rows = [
        ("sgd", "none", 0.1, 0.020), ("sgd", "none", 0.5, 0.014), ("sgd", "none", 1e-5, np.nan),
        ("adam", "none", 1e-4, 0.013), ("adam", "none", 3e-4, 0.011), ("adam", "none", 1e-2, 0.05),
        ("yogi", "none", 0.03, 0.016), ("yogi", "none", 0.01, 0.012),
        ("adam", "plateau", 7e-4, 0.001),  # another panel: never on the "none" figure
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["optimizer", "scheduler", "lr", "loss"])


def _gids(ax, prefix):
    return {a.get_gid().split(":", 1)[1]: a for a in ax.get_children()
            if isinstance(a.get_gid(), str) and a.get_gid().startswith(prefix)}  # fmt: skip


def test_lr_figure_has_a_series_and_a_best_line_per_optimizer_at_the_argmin():
    fig = grid_figure(_lr_table(), "mnist", "lr", "none", ["sgd", "adam", "yogi"])
    ax = fig.axes[0]
    points, best = _gids(ax, "points:"), _gids(ax, "best:")
    assert set(points) == set(best) == {"sgd", "adam", "yogi"}
    # the diverged sgd point is not drawn; the plateau row is on the other panel
    assert [len(points[o].get_offsets()) for o in ("sgd", "adam", "yogi")] == [2, 3, 2]
    assert [best[o].get_ydata()[0] for o in ("sgd", "adam", "yogi")] == [0.014, 0.011, 0.012]
    assert ax.get_xscale() == "log"
    labels = ax.get_legend_handles_labels()[1]
    assert "sgd (2 runs, 1 diverged)" in labels
    assert "thesis adam: 0.0003, loss 0.0122" in labels  # Table A.1, no scheduler (Fig. A.2)
    assert "Fig. A.2" in ax.get_title()
    plt.close(fig)


def test_regularizer_figure_is_linear_and_names_the_thesis_figure():
    t = pd.DataFrame([("adam", "dropout", 0.3, 0.005), ("adam", "dropout", 0.1, 0.004),
                      ("yogi", "dropout", 0.2, 0.006), ("yogi", "sigma", 0.1, 0.001)],
                     columns=["optimizer", "kind", "value", "loss"])  # fmt: skip
    fig = grid_figure(t, "mds", "regularizers", "dropout")
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear" and "Fig. 5.1" in ax.get_title()
    assert {o: b.get_ydata()[0] for o, b in _gids(ax, "best:").items()} == {
        "adam": 0.004,
        "yogi": 0.006,
    }
    plt.close(fig)


def test_tuning_figure_takes_any_column_and_no_thesis():
    t = pd.DataFrame({"optimizer": ["a", "a", "b"], "x": [1, 2, 3], "loss": [3.0, 1.0, 2.0]})
    fig = tuning_figure(t, "x")
    assert {o: b.get_ydata()[0] for o, b in _gids(fig.axes[0], "best:").items()} == {
        "a": 1.0,
        "b": 2.0,
    }
    plt.close(fig)


def test_captions_put_the_thesis_best_beside_ours():
    cap = figure_caption(_lr_table(), "mnist", "lr", "none", "digits")
    assert "Fig. A.2" in cap and "8×8 digits" in cap
    assert "adam: ours learning rate 0.0003, loss 0.011 | thesis 0.0003, loss 0.0122" in cap
    th = thesis_caption("mds", "regularizers", "sigma", "ipssm")
    assert "Fig. 5.3" in th and "standing in for the private EUROMDS" in th
    assert "adam Gaussian noise σ 0.181, loss 0.00274" in th  # Table A.7, DEC
    assert "prints no best values" in thesis_caption("mnist", "regularizers", "beta")


def test_figures_are_stage_targets_and_reused_grids_are_not(cfg):
    assert figure_panels(cfg, "mds", "lr") == ["none", "plateau"]
    assert figure_panels(cfg, "mds", "cluster") == []
    targets = tuning_targets(cfg)
    assert "results/dec/mnist/tuning/figures/lr_plateau.png" in targets  # Fig. A.1
    assert "results/dec/mds/tuning/figures/regularizers_beta.png" in targets  # Fig. 5.4
    assert "results/dec/bmnist/tuning/figures/lr_none.png" in targets  # Fig. A.4
    assert "results/dec/bmnist/tuning/cluster_best.tsv" not in targets
    assert "results/dec/mnist/tuning/cluster_best.tsv" in targets
    assert len([t for t in targets if t.endswith(".png")]) == 3 * (2 + 4)


def test_batch_grid_activation_is_selected_and_reaches_the_model(cfg):
    t = pd.DataFrame([
        ("sgd", 8, "sigmoid", "sigmoid", 0.010),  # sgd alone prefers sigmoid/sigmoid
        ("sgd", 16, "relu", "sigmoid", 0.020),
        ("sgd", 32, "relu", "sigmoid", 0.015),
        ("adam", 8, "relu", "sigmoid", 0.012), ("adam", 16, "sigmoid", "sigmoid", 0.013),
        ("yogi", 8, "relu", "sigmoid", 0.011), ("yogi", 16, "relu", "sigmoid", 0.009),
    ], columns=["optimizer", "batch_size", "hidden_act", "final_act", "loss"])  # fmt: skip
    assert select_activations(t) == {"hidden_act": "relu", "final_act": "sigmoid"}  # 2 votes of 3
    settings, best = select("batch", t, cfg, "mds", {"autoencoder_lr": {"adam": 1e-3}})
    assert settings["model"] == {"hidden_act": "relu", "final_act": "sigmoid"}
    # the batch per optimizer is chosen at the selected pair: sgd's 32, not its sigmoid 8
    assert settings["autoencoder_batch_size"] == {"sgd": 32, "adam": 8, "yogi": 16}
    # the Step-2 selection carries it on (cluster_selected.json is what the training reads)
    rows = pd.DataFrame(
        [("adam", 64, 1e-3, 0.8, 0.9, 1.0, 0.2, 5, 0.5, 5)],
        columns=[
            "optimizer",
            "batch_size",
            "lr",
            "accuracy",
            "cycle_accuracy",
            "recon_loss",
            "sil_data",
            "ch_data",
            "sil_feat",
            "ch_feat",
        ],
    )
    final, _ = select("cluster", rows, cfg, "mds", settings)
    assert final["model"] == settings["model"]
    c = apply_settings(cfg, "mds", final)
    assert c["model"]["final_act"] == "sigmoid" and cfg["model"]["final_act"] == "relu"
    tsae = make_tsae(c, 6)
    assert tsae.final_act is torch.sigmoid
    with torch.no_grad():
        out = tsae(torch.full((4, 6), 50.0))
    out = out[0] if isinstance(out, tuple) else out
    assert float(out.min()) > 0 and float(out.max()) < 1  # sigmoid output, not ReLU
    # tie (one vote each): the lower best loss wins
    tie = t[t.optimizer != "yogi"].copy()
    assert select_activations(tie) == {"hidden_act": "sigmoid", "final_act": "sigmoid"}


def test_bmnist_reads_mnist_step2_selection(cfg):
    w = W(dataset="bmnist", grid="cluster", unit="all")
    assert tuned_grids(cfg, "bmnist") == ["lr", "batch", "regularizers"]
    assert final_settings(cfg, w) == ["results/dec/bmnist/tuning/cluster_reused.json"]
    assert step1_settings(cfg, w) == ["results/dec/bmnist/tuning/batch_selected.json"]
    assert reuse_inputs(cfg, w) == {
        "settings": ["results/dec/bmnist/tuning/batch_selected.json"],
        "source": ["results/dec/mnist/tuning/cluster_selected.json"],
    }
    assert final_settings(cfg, W(dataset="mnist")) == [
        "results/dec/mnist/tuning/cluster_selected.json"
    ]
    own = {
        "autoencoder_lr": {"adam": 2e-4},
        "autoencoder_batch_size": {"adam": 256},
        "model": {"hidden_act": "relu", "final_act": "relu"},
    }
    mnist = {
        "autoencoder_lr": {"adam": 3e-4},
        "autoencoder_batch_size": {"adam": 128},
        "clustering_lr": {"adam": 1.02e-3},
        "clustering_batch_size": {"adam": 256},
    }
    out = reuse_settings(own, mnist, "cluster")
    assert out == {
        **own,
        "clustering_lr": {"adam": 1.02e-3},
        "clustering_batch_size": {"adam": 256},
    }  # BMNIST's own Step-1 LR kept
    # a reused Step-1 grid: the next grid starts from the reused file
    c = copy.deepcopy(cfg)
    c["tuning"]["reuse"] = {"bmnist": {"source": "mnist", "grids": ["lr", "cluster"]}}
    assert tune_previous(c, W(dataset="bmnist", grid="batch")) == [
        "results/dec/bmnist/tuning/lr_reused.json"
    ]
    assert reuse_settings(None, {"autoencoder_lr": {"sgd": 0.48}}, "lr") == {
        "autoencoder_lr": {"sgd": 0.48}
    }


def test_reuse_needs_a_tuned_source(cfg):
    c = copy.deepcopy(cfg)
    c["tuning"]["datasets"] = ["bmnist", "mds"]
    with pytest.raises(ConfigError, match="reuse.bmnist"):
        check_reuse(c)
    c["tuning"]["datasets"] = ["mds"]  # bmnist not tuned: the entry is ignored
    check_reuse(c)
    assert final_settings(c, W(dataset="bmnist")) == []
    c["tuning"]["datasets"] = ["mnist", "bmnist"]
    c["tuning"]["reuse"]["mnist"] = {"source": "bmnist", "grids": ["cluster"]}
    with pytest.raises(ConfigError, match="reuses too"):
        check_reuse(c)


def test_architecture_axis_of_the_lr_grid(cfg):
    """Table A.3 / Figs A.5–A.10: EUROMDS' LR grid per architecture; the LR is selected from the
    model's architecture rows, the other architectures are reported."""
    from fedclust.dec.tuning import _point_cfg, grid_points

    c = copy.deepcopy(cfg)
    c["tuning"]["step1"]["architectures"] = {"mds": ["DEC", "CURVES", "GOOGLE"]}
    c["model"]["arch"] = "DEC"
    pts = grid_points(c, "mds", "lr", 1)
    n = c["tuning"]["step1"]["n_lr"] * 2  # × schedulers
    assert len(pts) == 3 * 3 * n and len(grid_points(c, "mnist", "lr", 1)) == 3 * n
    assert _point_cfg(c, "mds", pts[n], "lr")["model"]["arch"] == pts[n]["architecture"]
    t = pd.DataFrame([("adam", "DEC", "none", 1e-4, 0.004), ("adam", "CURVES", "none", 3e-3, 0.001),
                      ("adam", "DEC", "none", 5e-4, 0.003)],
                     columns=["optimizer", "architecture", "scheduler", "lr", "loss"])  # fmt: skip
    settings, best = select("lr", t, c, "mds", None)
    assert settings["autoencoder_lr"] == {"adam": 5e-4} and list(best.architecture) == ["DEC"]
    c["model"]["arch"] = "CURVES"
    assert select("lr", t, c, "mds", None)[0]["autoencoder_lr"] == {"adam": 3e-3}
    c["model"]["arch"] = [16, 6]  # a reduced shape (thesis-smoke): the first listed one
    assert select("lr", t, c, "mds", None)[0]["autoencoder_lr"] == {"adam": 5e-4}
    c["tuning"]["step1"]["architectures"] = {"mds": ["CURVES"]}
    c["model"]["arch"] = "GOOGLE"
    with pytest.raises(ConfigError, match="architectures"):
        select("lr", t, c, "mds", None)
    c["tuning"]["step1"]["architectures"] = {"mds": ["DEC", "GOOGLE"]}
    assert figure_panels(c, "mds", "lr") == ["none_dec", "plateau_dec", "none_google",
                                             "plateau_google"]  # fmt: skip
    fig = grid_figure(t.assign(architecture=["DEC", "GOOGLE", "GOOGLE"]), "mds", "lr",
                      "none_google")  # fmt: skip
    ax = fig.axes[0]
    assert "Fig. A.10" in ax.get_title() and set(_gids(ax, "best:")) == {"adam"}
    assert _gids(ax, "best:")["adam"].get_ydata()[0] == 0.001
    assert "thesis adam: 0.0001, loss 0.0042" in ax.get_legend_handles_labels()[1]  # GOOGLE row
    plt.close(fig)


def test_report_section_lists_the_figures_with_both_best_values(tmp_path, monkeypatch):
    from fedclust.dec.report import tuning_entries

    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/dec/mnist/tuning").mkdir(parents=True)
    _lr_table().to_csv("results/dec/mnist/tuning/lr.tsv", sep="\t", index=False)
    paths = ["results/dec/mnist/tuning/lr_best.tsv",
             "results/dec/mnist/tuning/figures/lr_plateau.png"]  # fmt: skip
    figures, tables = tuning_entries(paths, {"mnist": "idx"}, False)
    assert [t["path"] for t in tables] == paths[:1] and len(figures) == 1
    assert figures[0]["reproduces"] == "seed 000 Fig. A.1"
    assert (
        "adam: ours learning rate 0.0007, loss 0.001 | thesis 0.0007, loss 0.0113"
        in (figures[0]["caption"])
    )
    assert "MNIST (the 60 000 training images)" in figures[0]["caption"]
