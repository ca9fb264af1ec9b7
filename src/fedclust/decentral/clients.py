"""Client data (spec §2.6) and the Flower-shaped client (``NumPyClient.fit`` / ``evaluate``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import MinMaxScaler

from fedclust.errors import InputDataError

from .training import Trainer


@dataclass
class ClientData:
    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def make_client_data(
    features: pd.DataFrame,
    y: np.ndarray,
    groups: np.ndarray,
    test_size: float = 0.25,
    random_state: int = 0,
) -> list[ClientData]:
    """Per group (sorted by name, as ``groupby``; original row order inside): sklearn
    ``train_test_split(test_size, random_state)`` and a MinMaxScaler fitted on that client's
    training rows (spec §2.6)."""
    out = []
    groups = np.asarray(groups).astype(str)
    for name in sorted(set(groups.tolist())):
        rows = np.flatnonzero(groups == name)
        if len(rows) < 8:
            raise InputDataError(f"client {name!r} has only {len(rows)} rows", where="heart split")
        Xtr, Xte, ytr, yte = train_test_split(
            features.to_numpy(np.float64)[rows],
            np.asarray(y)[rows],
            test_size=test_size,
            random_state=random_state,
        )
        sc = MinMaxScaler().fit(Xtr)
        out.append(
            ClientData(
                name,
                sc.transform(Xtr).astype(np.float32),
                ytr.astype(np.float32),
                sc.transform(Xte).astype(np.float32),
                yte.astype(np.float32),
            )
        )
    return out


class HeartClient:
    """One hospital. Holds only its own arrays; talks in Keras-ordered weight lists.

    ``fit(parameters, config) -> (parameters, num_examples, metrics)`` as Flower's NumPyClient.
    ``config``: ``epochs``, ``batch_size``, ``validation_split`` (Keras: the last fraction of the
    training array is held out, unshuffled; the published GL/customized notebooks used 0.15).
    ``num_examples`` is the full training size, which the thesis uses as aggregation weight.
    """

    def __init__(self, data: ClientData, trainer: Trainer):
        self.name = self.cid = data.name
        self.n_samples = len(data.y_train) + len(data.y_test)
        self.trainer = trainer
        self.X = torch.from_numpy(data.X_train)
        self.y = torch.from_numpy(data.y_train)
        self.Xte = torch.from_numpy(data.X_test)
        self.yte = torch.from_numpy(data.y_test)
        self.n_train = len(data.y_train)

    def fit(self, parameters, config: dict):
        split = float(config.get("validation_split", 0.0))
        n_fit = int(self.n_train * (1.0 - split))
        weights, loss = self.trainer.fit(
            parameters,
            self.X[:n_fit],
            self.y[:n_fit],
            int(config["epochs"]),
            int(config["batch_size"]),
            owner=self.name,
        )
        return weights, self.n_train, {"train_loss": loss, "n_fit": n_fit}

    def fit_many(self, parameters_list, config: dict):
        """``fit`` for several independent models at once (a :class:`BatchedTrainer`)."""
        split = float(config.get("validation_split", 0.0))
        n_fit = int(self.n_train * (1.0 - split))
        out = self.trainer.fit(
            parameters_list, self.X[:n_fit], self.y[:n_fit], int(config["epochs"]),
            int(config["batch_size"]), owner=self.name,
        )  # fmt: skip
        return [(w, self.n_train, {"n_fit": n_fit}) for w in out]

    def evaluate_many(self, parameters_list):
        return [
            (
                r.loss_total,
                len(self.yte),
                {
                    "loss_bce": r.loss_bce,
                    "accuracy": r.accuracy,
                    "auc": r.auc,
                    "auc_keras": r.auc_keras,
                },
            )  # fmt: skip
            for r in self.trainer.evaluate(parameters_list, self.Xte, self.yte)
        ]

    def evaluate(self, parameters, config: dict | None = None):
        r = self.trainer.evaluate(parameters, self.Xte, self.yte)
        return (
            r.loss_total,
            len(self.yte),
            {
                "loss_bce": r.loss_bce,
                "accuracy": r.accuracy,
                "auc": r.auc,
                "auc_keras": r.auc_keras,
            },
        )
