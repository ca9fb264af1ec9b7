"""Step 1 (TSAE reconstruction) and Step 2 (DEC KL clustering) loops (seed 000 §1.4–1.6)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from fedclust.errors import ConfigError

from .model import TSAE, DECModel, soft_assignment, target_distribution
from .optim import Optimizer

SCALERS = ("none", "standard", "normal-l1", "normal-l2")
LOSSES = ("mse", "bce", "dice_bce")
SCHEDULERS = ("none", "plateau")


def batches(n: int, batch_size: int, shuffle: bool, gen: torch.Generator | None) -> list:
    """Index batches over ``n`` samples: in order, or in a fresh permutation drawn from ``gen``
    (a CPU generator, so the order does not depend on the training device)."""
    order = torch.randperm(n, generator=gen) if shuffle else torch.arange(n)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def dice_loss(x_hat: torch.Tensor, x: torch.Tensor, smooth: float = 1.0) -> torch.Tensor:
    """Soft Dice loss 1 − (2|X∩Y| + s)/(|X| + |Y| + s) over the batch (seed 000 eq. 4.2; the
    thesis code's ``DiceBCELoss`` with smooth s = 1)."""
    inter = (x_hat * x).sum()
    return 1 - (2 * inter + smooth) / (x_hat.sum() + x.sum() + smooth)


def dice_bce_loss(x_hat: torch.Tensor, x: torch.Tensor, beta: float) -> torch.Tensor:
    """Eq. 4.1: (1 − β)·MSE + β·F, F = Dice + BCE (eq. 4.2 with the BCE sign corrected, see
    seed 000 §1.4). The thesis code divides the sum by 2 (the number of losses); this is the
    printed equation. The output is clamped to [1e-6, 1 − 1e-6] for the Dice and BCE terms."""
    o = x_hat.clamp(1e-6, 1 - 1e-6)
    f = dice_loss(o, x) + F.binary_cross_entropy(o, x)
    return (1 - beta) * F.mse_loss(x_hat, x) + beta * f


def gaussian_noise(x: torch.Tensor, sigma: float, gen: torch.Generator | None) -> torch.Tensor:
    """Additive N(0, σ) noise on every entry, truncated to [0, 1] (seed 000 §1.4; the thesis
    code's ``TruncatedGaussianNoise`` with rate 1; the text says "centered on 0.5")."""
    if sigma <= 0:
        return x
    noise = torch.randn(x.shape, generator=gen).to(x.device)
    return (x + sigma * noise).clamp(0.0, 1.0)


def recon_loss(x_hat: torch.Tensor, x: torch.Tensor, kind: str, beta: float = 0.5) -> torch.Tensor:
    if kind == "mse":
        return F.mse_loss(x_hat, x)
    if kind == "bce":
        return F.binary_cross_entropy(x_hat.clamp(1e-6, 1 - 1e-6), x)
    if kind == "dice_bce":
        return dice_bce_loss(x_hat, x, beta)
    raise ConfigError(
        f"unknown loss {kind!r}", where="dec.autoencoder.loss", fix=f"one of {LOSSES}"
    )


def ae_epoch(
    model: TSAE,
    x: torch.Tensor,
    opt: Optimizer,
    batch_size: int,
    loss: str = "mse",
    shuffle: bool = False,
    gen: torch.Generator | None = None,
    beta: float = 0.5,
    noise_sigma: float = 0.0,
    noise_gen: torch.Generator | None = None,
) -> float:
    """One epoch of reconstruction training; returns the sample-weighted mean batch loss.

    ``beta``: weight of eq. 4.1 (loss ``dice_bce``). ``noise_sigma`` > 0: the input (not the
    target) gets truncated Gaussian noise drawn from ``noise_gen``."""
    model.train()
    total = 0.0
    for idx in batches(len(x), batch_size, shuffle, gen):
        xb = x[idx]
        opt.zero_grad()
        out = recon_loss(model(gaussian_noise(xb, noise_sigma, noise_gen)), xb, loss, beta)
        out.backward()
        opt.step()
        total += out.item() * len(idx)
    return total / max(len(x), 1)


@torch.no_grad()
def reconstruction_mse(model: TSAE, x: torch.Tensor) -> float:
    model.eval()
    return float(F.mse_loss(model.decode(model.encode(x)), x))


@torch.no_grad()
def embed(model: TSAE, x: torch.Tensor) -> np.ndarray:
    model.eval()
    return model.encode(x).cpu().numpy()


def scale(z: np.ndarray, scaler: str) -> np.ndarray:
    """Optional rescaling of the feature space before k-means (seed 000 §1.6 step 2)."""
    if scaler == "none":
        return z
    from sklearn.preprocessing import Normalizer, StandardScaler  # lazy: job start-up time

    if scaler == "standard":
        return StandardScaler().fit_transform(z)
    if scaler in ("normal-l1", "normal-l2"):
        return Normalizer(norm=scaler[-2:]).fit_transform(z)
    raise ConfigError(f"unknown scaler {scaler!r}", where="dec scaler", fix=f"one of {SCALERS}")


def kmeans_centroids(
    z: np.ndarray, k: int, scaler: str = "none", n_init: int = 20, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """k-means (k-means++, ``n_init`` restarts) on the (scaled) features.

    Returns (centroids, labels). Without a scaler the centroids are the k-means centres; with one
    they are the empirical per-cluster means in the *unscaled* space (seed 000 §1.6 step 3).
    """
    if len(z) < k:
        raise ConfigError(f"k-means needs at least k={k} samples, got {len(z)}", where="dec.k")
    from sklearn.cluster import KMeans  # lazy: job start-up time

    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(scale(z, scaler))
    labels = km.labels_.astype(int)
    if scaler == "none":
        return km.cluster_centers_.astype(np.float32), labels
    mu = np.stack([z[labels == j].mean(0) if np.any(labels == j) else z.mean(0) for j in range(k)])
    return mu.astype(np.float32), labels


def dec_epoch(
    model: DECModel,
    x: torch.Tensor,
    opt: Optimizer,
    batch_size: int,
    target_update: str = "batch",
    shuffle: bool = False,
    gen: torch.Generator | None = None,
) -> float:
    """One epoch of KL(P‖Q) minimisation; P per batch (code) or once per epoch (thesis)."""
    if target_update not in ("batch", "epoch"):
        raise ConfigError(f"unknown target_update {target_update!r}", where="dec.target_update")
    p_all = None
    if target_update == "epoch":
        with torch.no_grad():
            model.eval()
            p_all = target_distribution(model(x))
    model.train()
    total = 0.0
    for idx in batches(len(x), batch_size, shuffle, gen):
        opt.zero_grad()
        q = model(x[idx])
        p = target_distribution(q).detach() if p_all is None else p_all[idx]
        loss = F.kl_div(q.clamp_min(1e-12).log(), p, reduction="sum") / len(idx)
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
    return total / max(len(x), 1)


@torch.no_grad()
def predict(model: DECModel, x: torch.Tensor) -> np.ndarray:
    model.eval()
    if len(x) == 0:
        return np.zeros(0, dtype=int)
    return model(x).argmax(1).cpu().numpy().astype(int)


@torch.no_grad()
def predict_reconstructed(model: DECModel, x: torch.Tensor) -> np.ndarray:
    """DEC predictions on the TSAE reconstructions x̂ = decode(encode(x)) (for cycle accuracy)."""
    model.eval()
    x_hat = model.tsae.decode(model.tsae.encode(x))
    return model(x_hat).argmax(1).cpu().numpy().astype(int)


@dataclass
class DECHistory:
    loss: list[float]
    delta_label: list[float]


def train_dec(
    model: DECModel,
    x: torch.Tensor,
    opt: Optimizer,
    batch_size: int,
    max_epochs: int = 20,
    tol: float = 0.001,
    target_update: str = "batch",
    initial_labels: np.ndarray | None = None,
    shuffle: bool = False,
    gen: torch.Generator | None = None,
) -> DECHistory:
    """Centralized Step 2: stop when the fraction of changed labels is ≤ ``tol`` or at the cap.

    ``shuffle`` draws a new minibatch order every epoch from ``gen`` (seed 000 §1.6 item 10).
    """
    prev = predict(model, x) if initial_labels is None else initial_labels
    hist = DECHistory([], [])
    for _ in range(max_epochs):
        hist.loss.append(dec_epoch(model, x, opt, batch_size, target_update, shuffle, gen))
        pred = predict(model, x)
        delta = float(np.mean(pred != prev))
        hist.delta_label.append(delta)
        prev = pred
        if delta <= tol:
            break
    return hist


def assignment_torch(z: np.ndarray, mu: np.ndarray, alpha: float) -> np.ndarray:
    """Soft assignment on numpy arrays (evaluation helper)."""
    return soft_assignment(torch.as_tensor(z), torch.as_tensor(mu), alpha).numpy()


def shuffle_generator(seed: int) -> torch.Generator:
    """The CPU generator every minibatch permutation of one trainer is drawn from."""
    return torch.Generator().manual_seed(int(seed))
