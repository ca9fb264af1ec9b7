"""Flower deployment on localhost (issue 13): SuperLink + two SuperNodes (one per center file) +
``flwr run``, one FedAdam TSAE round; insecure, 127.0.0.1 only, every process killed afterwards.
The global TSAE equals the in-process engine's with the same seeds, and the ledger the same."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("flwr")

from sklearn.datasets import make_blobs

from fedclust.federation import Ledger


def test_localhost_deployment_one_round_equals_inprocess(tmp_path):
    from fedclust.dec.federated import make_strategy, run_rounds
    from fedclust.flower.deploy import (
        initial_parameters,
        load_center,
        train_config,
        write_center_file,
    )
    from fedclust.flower.localhost import run_localhost

    x, _ = make_blobs(200, n_features=12, centers=3, cluster_std=0.6, random_state=0)
    x = ((x - x.min()) / (x.max() - x.min())).astype(np.float32)
    files = [write_center_file(tmp_path / f"center_{c}.npz", x[i * 100:(i + 1) * 100],
                               f"center_{c}", i + 1) for i, c in enumerate("ab")]  # fmt: skip
    rc = {"rounds": 1, "features": 12, "arch": "16,4", "seed": 0, "strategy": "fedadam",
          "optimizer": "adam", "lr": 0.01, "batch-size": 16}  # fmt: skip
    done = run_localhost(tmp_path / "run", files, rc, timeout=150)
    assert done["centers"] == ["center_a", "center_b"] and done["messages"] == 4
    got = np.load(tmp_path / "run" / "out" / "weights.npz")
    got = [got[f"arr_{i}"] for i in range(len(got.files))]
    # the same round in-process: the same center files, seeds and core strategy
    torch.set_num_threads(1)
    clients = [load_center(f, [16, 4]) for f in files]
    w0 = initial_parameters(12, [16, 4], 0)
    server = {"eta": 0.01, "beta_1": 0.9, "beta_2": 0.999, "tau": 1e-3}
    led = Ledger()
    ref = run_rounds(clients, make_strategy("fedadam", server), w0, 1, train_config(rc), led, [])
    assert not np.allclose(ref[0], w0[0])
    for a, b in zip(ref, got, strict=True):
        assert a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-6)
    wire = pd.read_csv(tmp_path / "run" / "out" / "ledger.csv")
    assert wire.floats.sum() == led.n_floats and wire.kind.tolist() == led.table().kind.tolist()
