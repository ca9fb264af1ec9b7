"""Shared fixtures. ``mirror`` is the offline data mirror (../shared/data) when present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("MPLBACKEND", "Agg")  # figures without a display (as scripts/_common.py)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def mirror() -> Path:
    env = os.environ.get("FEDCLUST_DATA_MIRROR")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"offline data mirror not found at {path}")
    return path


@pytest.fixture(scope="session")
def dec_toy_cfg(repo):
    """Factory of tiny DEC configs (the set-up the DEC pipeline/figures/flower tests share): the
    validated default ``dec`` block on one dataset ``toy`` (k 3, selection accuracy), arch
    [16, 4], the toy learning rates, 3 clustering epochs × 3 inits. ``epochs``: TSAE epochs (batch
    16); ``grid=True``: Adam only, α ∈ {1, 9}, no scaler; ``federated``: updates dec.federated."""
    import copy

    from fedclust.config import load_yaml, validate_config

    base = validate_config(load_yaml(repo / "config" / "config.yaml"), repo / "config/schema.yaml")

    def make(epochs: int | None = None, grid: bool = False, **federated) -> dict:
        d = copy.deepcopy(base["dec"])
        d["datasets"] = {"toy": {"k": 3, "selection": "accuracy"}}
        d["model"]["arch"] = [16, 4]
        if epochs is not None:
            d["autoencoder"].update(epochs=epochs, batch_size=16)
        d["autoencoder"]["lr"] = {"sgd": 0.1, "adam": 0.01, "yogi": 0.01}
        d["clustering"].update(max_epochs=3, n_init=3)
        if grid:
            d["grid"] = {"optimizers": ["adam"], "alphas": [1, 9], "scalers": ["none"]}
        d["federated"].update(federated)
        return d

    return make


@pytest.fixture(scope="session")
def toy_blobs():
    """Factory: ``make_blobs(n, d, 3 centers, std, seed)`` min-max scaled to [0, 1], as float32,
    with its labels."""
    import numpy as np
    from sklearn.datasets import make_blobs

    def make(n: int, d: int, std: float, seed: int) -> tuple:
        x, y = make_blobs(n, n_features=d, centers=3, cluster_std=std, random_state=seed)
        return ((x - x.min()) / (x.max() - x.min())).astype(np.float32), y

    return make


@pytest.fixture
def synthetic_centres():
    """Centres holding generated points, not patients: the ``disclosure`` section of
    :data:`fedclust.hac.boundary.SYNTHETIC` (floors 1, every per-sample protocol allowed) for one
    test, so algorithm tests exercise the protocols' own rules (n_min = 1 = pooled, ...). Tests
    of the centres' disclosure settings set their policies themselves (issue 22)."""
    from dataclasses import asdict

    from fedclust.federation import disclosure
    from fedclust.hac.boundary import SYNTHETIC

    before = dict(disclosure._CONFIGURED)
    pol = asdict(SYNTHETIC)
    pol["allow_per_sample"] = list(pol["allow_per_sample"])
    disclosure.configure({"default": pol})
    yield SYNTHETIC
    disclosure.configure(before)


# The longest files first (issue 30): under `pytest -n 2 --dist loadfile` (scripts/test.sh) a
# worker takes whole files in collection order, so a long file collected last would leave the
# other worker idle at the end. Measured with --durations (CI log): the two-run reproducibility
# test, the localhost Flower deployments, the thesis DAG dry runs, the workflow reruns.
LONG_FILES = (
    "test_reliability_reproducible.py", "test_flower_deploy.py", "test_flower_deploy_stages.py",
    "test_thesis_smoke.py", "test_reliability_workflow.py", "test_deployment_rule.py",
    "test_slurm.py",
)  # fmt: skip


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))  # stable: file order
