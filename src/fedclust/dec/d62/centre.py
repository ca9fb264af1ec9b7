"""A D6.2 ch. 7 centre (seed 003 §6.4): holds only its own patients, split locally 80 / 20 into
training and held-out parts; trains the tied autoencoder with D6.2's noise (random flipping at
the input, dropout after the hidden layers) and, optionally, Keras' ``UnitNorm`` constraint, then
DEC's KL step with the target distribution refreshed every ``update_interval`` epochs.

* Random flipping (D6.2's first layer; the author's Keras ``FlippingNoise``): each entry is
  replaced with probability ``rate`` by a draw from Bernoulli(p1_j), p1_j = the frequency of ones
  of column j over every centre (one federated count, :mod:`.server`). It is *not* a flip with
  probability ``rate``: a replaced entry keeps its value with probability p1_j or 1 − p1_j.
* UnitNorm (the author's ``create_tied_denoising_autoencoder(u_norm=True)``: Keras
  ``UnitNorm(axis=0)`` on every encoder kernel, the tied decoder uses the same kernels): after
  every optimiser step each encoder unit's incoming weight vector is rescaled to norm 1
  (w / (1e-7 + ‖w‖), Keras' form).
* Noise stays on while DEC trains (the Keras clustering model is built on the noisy encoder and
  ``fit`` runs it with ``training=True``); every held-out loss and prediction is noise-free.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from fedclust.dec.federated import DECClient, dec_parameters
from fedclust.dec.model import TSAE, DECModel, get_parameters, target_distribution
from fedclust.dec.optim import make_optimizer
from fedclust.dec.train import batches, recon_loss

from . import protocols as P

NDArrays = list[np.ndarray]


def random_flip(
    x: torch.Tensor, rate: float, p1: torch.Tensor | None, gen: torch.Generator
) -> torch.Tensor:
    """D6.2's random-flipping layer: entries chosen with probability ``rate`` get a fresh
    Bernoulli(p1_j) value (p1 = per-column frequency of ones; 0.5 when unknown)."""
    if rate <= 0:
        return x
    p = torch.full((x.shape[1],), 0.5) if p1 is None else p1
    chosen = torch.rand(x.shape, generator=gen) < rate
    fresh = (torch.rand(x.shape, generator=gen) < p).to(x.dtype)
    return torch.where(chosen, fresh, x)


@torch.no_grad()
def unit_norm_(tsae: TSAE) -> None:
    """Keras ``UnitNorm(axis=0)`` on each encoder kernel: every unit's incoming weights → norm 1
    (torch stores the kernel transposed: one row per unit)."""
    for w in tsae.weights:
        w.div_(1e-7 + w.norm(dim=1, keepdim=True))


class D62Centre(DECClient):
    """One centre of D6.2 ch. 7. ``x`` its binary patients × features; ``test_fraction`` of them
    (seeded by ``seed``) are held out for the evaluation losses. ``self.x`` (the DEC stage's
    training array, used by the inherited local k-means) is the training part."""

    def __init__(
        self,
        cid: str,
        x: np.ndarray,
        make_model: Callable[[], DECModel],
        seed: int,
        test_fraction: float = 0.2,
        min_samples: int = P.MIN_SAMPLES,
        min_cluster_size: int = P.MIN_SAMPLES,
    ) -> None:
        x = np.asarray(x, dtype=np.float32)
        order = np.random.default_rng(seed).permutation(len(x))
        n_test = int(round(test_fraction * len(x)))
        super().__init__(cid, x[np.sort(order[n_test:])], make_model, "cpu", seed)
        self.seed = int(seed)
        self.x_test = torch.as_tensor(x[np.sort(order[:n_test])])
        self.noise_gen = torch.Generator().manual_seed(int(seed) ^ 0x5EED)
        self.p1: torch.Tensor | None = None
        self.target: torch.Tensor | None = None  # P on the training part (stage C)
        self.labels: np.ndarray | None = None  # labels under the previous global model
        #: the protocols this centre answers under (its own floor; the guard applies them)
        self.protocols = P.declared(min_samples, min_cluster_size)

    @property
    def n_samples(self) -> int:
        return len(self.x) + len(self.x_test)

    # ------------------------------------------------------------------ one-off exchanges
    def column_ones(self, parameters: Any, config: dict[str, Any]) -> dict[str, Any]:
        """Σ ones per column over all local patients, as one row (1, F), and the count."""
        x = torch.cat([self.x, self.x_test]).numpy()
        return {"ones": x.sum(axis=0, keepdims=True).astype(np.float64), "n": len(x)}

    def flip_rates(self, parameters: Any, config: dict[str, Any]) -> dict[str, Any]:
        """Keeps the server's per-column frequencies of ones (``config["p1"]``)."""
        self.p1 = torch.as_tensor(np.asarray(config["p1"], dtype=np.float32).ravel())
        return {"n": self.n_samples}

    # ------------------------------------------------------------------ training rounds
    def fit(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[NDArrays, int, dict]:
        """``config``: stage (ae | dec), optimizer, lr, batch_size, epochs (local), loss,
        flip, unit_norm, shuffle; stage dec also ``refresh`` (recompute P first)."""
        stage = config["stage"]
        model = self._model(stage, parameters)
        tsae = model.tsae
        target = tsae if stage == "ae" else model
        params = [p for n, p in target.named_parameters() if "dec_bias" not in n]
        opt = make_optimizer(config["optimizer"], params, float(config["lr"]))
        flip, unorm = float(config.get("flip", 0.0)), bool(config.get("unit_norm", False))
        metrics: dict[str, float] = {}
        if stage == "dec":
            metrics["changed"] = self._label_change(model)
            if bool(config.get("refresh", False)) or self.target is None:
                model.eval()
                with torch.no_grad():
                    self.target = target_distribution(model(self.x))
        losses = []
        for _ in range(int(config["epochs"])):
            model.train()
            total = 0.0
            for idx in batches(len(self.x), int(config["batch_size"]), True, self.gen):
                xin = random_flip(self.x[idx], flip, self.p1, self.noise_gen)
                opt.zero_grad()
                if stage == "ae":
                    loss = recon_loss(tsae(xin), self.x[idx], config.get("loss", "bce"))
                else:
                    q = model(xin)
                    loss = F.kl_div(q.clamp_min(1e-12).log(), self.target[idx], reduction="sum")
                    loss = loss / len(idx)
                loss.backward()
                opt.step()
                if unorm:
                    unit_norm_(tsae)
                total += loss.item() * len(idx)
            losses.append(total / len(self.x))
        metrics["loss"] = float(losses[-1])
        metrics["eval_loss"] = self._eval_loss(model, stage, config.get("loss", "bce"))
        out = get_parameters(tsae) if stage == "ae" else dec_parameters(model)
        return out, len(self.x), metrics

    @torch.no_grad()
    def _eval_loss(self, model: DECModel, stage: str, loss: str) -> float:
        """Held-out loss without noise: reconstruction (stage A) or KL(P‖Q) with P from the same
        model's Q on the held-out patients (stage C)."""
        model.eval()
        if len(self.x_test) == 0:
            return float("nan")
        if stage == "ae":
            return float(recon_loss(model.tsae(self.x_test), self.x_test, loss))
        q = model(self.x_test)
        p = target_distribution(q)
        return float(F.kl_div(q.clamp_min(1e-12).log(), p, reduction="sum") / len(q))

    @torch.no_grad()
    def _label_change(self, model: DECModel) -> float:
        """Fraction of the training patients whose cluster under the received global model
        differs from the one under the previous round's global model (0 in the first round)."""
        model.eval()
        lab = model(self.x).argmax(1).numpy()
        prev, self.labels = self.labels, lab
        return 0.0 if prev is None else float(np.mean(lab != prev))
