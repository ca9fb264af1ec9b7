"""Local training and evaluation (Keras ``fit`` / ``evaluate`` semantics, spec §3.1, §4.0).

One :class:`Trainer` holds the single model object every client uses (as the thesis' one compiled
Keras model) and the optimizer state policy (spec §4.0, §8.3):
``shared`` (faithful: one Adam state carried across clients and rounds), ``per_client`` (each
client keeps its own Adam state) or ``fresh_each_fit``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score

from fedclust.seeds import derive_seed

from .metrics import keras_auc
from .model import HeartNet, KerasAdam, dropout_noise

OPTIMIZER_STATES = ("shared", "per_client", "fresh_each_fit")


@dataclass
class EvalResult:
    loss_total: float  # BCE + L1/L2 penalty of the first kernel (what Keras' evaluate reports)
    loss_bce: float
    accuracy: float  # threshold 0.5
    auc: float  # exact ROC AUC (sklearn)
    auc_keras: float = float("nan")  # Keras' 200-threshold AUC (what the thesis printed)


def client_generator(dropout_seed: int, owner: str) -> torch.Generator:
    """The dropout generator of one model copy at one client: ``dropout_seed`` names the copy
    (derived from the config seed with the copy's identity, e.g. approach and mode), ``owner``
    the client (:func:`fedclust.seeds.derive_seed`)."""
    return torch.Generator().manual_seed(derive_seed(int(dropout_seed), "client", owner))


class Trainer:
    """The one model + optimizer shared by all simulated clients.

    ``seed`` seeds the minibatch shuffling. ``dropout_seed`` (the copy's identity seed) gives each
    client its own dropout generator (:func:`client_generator`), the same stream the lockstep
    :class:`~.batched.BatchedTrainer` draws for this copy; ``None`` keeps torch's global
    generator (the centralized baseline)."""

    def __init__(self, n_features: int, lr: float, optimizer_state: str, seed: int,
                 dropout_seed: int | None = None):  # fmt: skip
        if optimizer_state not in OPTIMIZER_STATES:
            raise ValueError(f"optimizer_state must be one of {OPTIMIZER_STATES}")
        self.model = HeartNet(n_features)
        self.opt = KerasAdam(self.model.parameters(), lr=lr)
        self.policy = optimizer_state
        self._states: dict[str, tuple] = {}
        self.gen = torch.Generator().manual_seed(int(seed))
        self.dropout_seed = dropout_seed
        self._drop_gens: dict[str, torch.Generator] = {}
        self.steps = 0

    def fit(
        self,
        weights: list[np.ndarray],
        X: torch.Tensor,
        y: torch.Tensor,
        epochs: int,
        batch_size: int,
        owner: str,
    ) -> tuple[list[np.ndarray], float]:
        """Train from ``weights`` (Keras ``fit``: reshuffle every epoch, partial last batch)."""
        m = self.model
        m.set_weights(weights)
        if self.policy == "fresh_each_fit":
            self.opt.reset_state()
        elif self.policy == "per_client":
            if owner in self._states:
                self.opt.set_state(self._states[owner])
            else:
                self.opt.reset_state()
        m.train()
        n = X.shape[0]
        params = list(m.parameters())
        loss = torch.zeros(())
        gen = None
        if self.dropout_seed is not None:
            gen = self._drop_gens.get(owner)
            if gen is None:
                gen = self._drop_gens[owner] = client_generator(self.dropout_seed, owner)
        for _ in range(epochs):
            perm = torch.randperm(n, generator=self.gen)
            for start in range(0, n, batch_size):
                idx = perm[start : start + batch_size]
                noise = None if gen is None else dropout_noise(gen, len(idx), m.width, m.drop.p)
                logits = m(X[idx], noise)
                loss = F.binary_cross_entropy_with_logits(logits, y[idx]) + m.penalty()
                for p in params:
                    p.grad = None
                loss.backward()
                self.opt.step()
                self.steps += 1
        if self.policy == "per_client":
            self._states[owner] = self.opt.get_state()
        return m.get_weights(), float(loss.detach())

    @torch.no_grad()
    def evaluate(self, weights: list[np.ndarray], X: torch.Tensor, y: torch.Tensor) -> EvalResult:
        m = self.model
        m.set_weights(weights)
        m.eval()
        logits = m(X)
        bce = float(F.binary_cross_entropy_with_logits(logits, y))
        pen = float(m.penalty())
        yn = y.numpy()
        pred = (logits > 0).numpy()  # sigmoid(z) > 0.5
        auc = float(roc_auc_score(yn, logits.numpy())) if 0 < yn.sum() < len(yn) else float("nan")
        kauc = keras_auc(yn, torch.sigmoid(logits).numpy())
        return EvalResult(bce + pen, bce, float((pred == (yn > 0.5)).mean()), auc, kauc)
