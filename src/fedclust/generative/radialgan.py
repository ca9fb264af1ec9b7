"""RadialGAN (D6.2 ch. 5, seed 003 §4; Yoon, Jordon & van der Schaar 2018).

M domains (centres) with their own feature sets X^(i) and a shared label Y. Centre i owns an
encoder F_i: X^(i) × Y → Z into the common latent space, a decoder G_i: Z → X^(i) × Y and a
discriminator D_i. Eqs. 5.5–5.7:

    L_adv^i = E[ln D_i(x_i, y)] + Σ_{j≠i} α_ij E[ln(1 − D_i(G_i(F_j(x_j, y))))]
    L_cyc^i = E‖(x_i, y) − G_i(F_i(x_i, y))‖₂ + Σ_{j≠i} α_ij E‖F_j(x_j, y) − F_i(G_i(F_j(x_j, y)))‖₂
    min_{G,F} max_D  Σ_i L_adv^i + λ Σ_i L_cyc^i

α_ij: D6.2's "weight of node j, usually defined by the number of samples" (``d62``:
n_j / Σ_{k≠i} n_k) or the original authors' released code (``authors``: 1/(M−1), 0.5 with their
three domains). GAN loss: ``nonsaturating`` (the authors' code: the generator maximises
ln D_i(G_i(·))) or ``minimax`` (eq. 5.5 as printed: it minimises ln(1 − D_i(G_i(·)))).

Federated placement (Fig. 5.1): F_j, G_j, D_j stay at centre j; the latent codes F_j(x_j, y)
are the only thing that leaves it, and back comes the gradient of the other centres' losses with
respect to those codes, so one distributed iteration is exactly one joint (min over F, G) step
of eq. 5.7 (:func:`centralized_step` is the one-process reference, equal in the tests). After
training, D̃_i = D_i ∪_{j≠i} G_i(F_j(D_j)) (eq. 5.8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fedclust.errors import ConfigError

from .nets import mlp

ALPHAS = ("d62", "authors")
GAN_LOSSES = ("nonsaturating", "minimax")
LABELS = ("code", "decoded")


@dataclass(frozen=True)
class Arch:
    latent: int = 8
    hidden: tuple[int, ...] = (32,)
    activation: str = "relu"


class Domain(nn.Module):
    """One centre's F_i (encoder), G_i (decoder, sigmoid outputs: features scaled to [0, 1]
    and, with ``labels="decoded"``, the label's probability) and D_i (discriminator, a logit).

    ``labels="code"`` (the authors' code, which conditions G_i and D_i on y): the label is a
    coordinate of the code, (F_i(x, y), y), so a translated sample keeps its source label;
    ``"decoded"`` (D6.2 eq. 5.4, G_i: Z → X × Y): the code is F_i(x, y) and G_i outputs y.
    Either way the code is all that crosses to another centre."""

    def __init__(self, n_features: int, arch: Arch, labels: str = "code") -> None:
        super().__init__()
        if labels not in LABELS:
            raise ConfigError(
                f"unknown label handling {labels!r}",
                where="generative.radialgan.labels",
                fix=f"one of {LABELS}",
            )
        d = n_features + 1
        self.conditional = labels == "code"
        self.F = mlp(d, arch.hidden, arch.latent, arch.activation)
        self.G = mlp(arch.latent + int(self.conditional), arch.hidden,
                     n_features if self.conditional else d, arch.activation)  # fmt: skip
        self.D = mlp(d, arch.hidden, 1, arch.activation)

    def encode(self, xy: torch.Tensor) -> torch.Tensor:
        """The code of (x, y) rows."""
        z = self.F(xy)
        return torch.cat([z, xy[:, -1:]], dim=1) if self.conditional else z

    def decode(self, code: torch.Tensor) -> torch.Tensor:
        """(x, y) rows of this domain from codes."""
        if self.conditional:
            return torch.cat([torch.sigmoid(self.G(code)), code[:, -1:]], dim=1)
        return torch.sigmoid(self.G(code))

    def generator_parameters(self) -> list[nn.Parameter]:
        return [*self.F.parameters(), *self.G.parameters()]


def alpha(sizes: Sequence[int], rule: str) -> np.ndarray:
    """α_ij (rows i, columns j; zero diagonal): ``d62`` n_j / Σ_{k≠i} n_k, ``authors``
    1/(M − 1)."""
    n = np.asarray(sizes, float)
    m = len(n)
    if rule not in ALPHAS:
        raise ConfigError(f"unknown alpha rule {rule!r}", where="generative.radialgan.alpha",
                          fix=f"one of {ALPHAS}")  # fmt: skip
    if m == 1:
        return np.zeros((1, 1))
    if rule == "authors":
        a = np.full((m, m), 1.0 / (m - 1))
    else:
        a = np.tile(n, (m, 1))
        np.fill_diagonal(a, 0.0)
        a = a / a.sum(axis=1, keepdims=True)
    np.fill_diagonal(a, 0.0)
    return a


def _norm(a: torch.Tensor) -> torch.Tensor:
    """Per-sample Euclidean norm, averaged over the batch (E‖·‖₂ of eq. 5.6)."""
    return torch.linalg.vector_norm(a, dim=1).mean()


def autoencoder_loss(node: Domain, real: torch.Tensor) -> torch.Tensor:
    """E‖(x, y) − G(F(x, y))‖₂."""
    return _norm(real - node.decode(node.encode(real)))


def cycle_loss(node: Domain, real: torch.Tensor, z_own: torch.Tensor,
               codes: Sequence[torch.Tensor], alphas: Sequence[float]) -> torch.Tensor:  # fmt: skip
    """L_cyc^i (eq. 5.6): own reconstruction through the latent space plus, for every other
    centre's codes, the latent cycle z_j → G_i → F_i."""
    loss = _norm(real - node.decode(z_own))
    for z, a in zip(codes, alphas, strict=True):
        loss = loss + a * _norm(z - node.encode(node.decode(z)))
    return loss


def discriminator_loss(node: Domain, real: torch.Tensor, codes: Sequence[torch.Tensor],
                       alphas: Sequence[float]) -> torch.Tensor:  # fmt: skip
    """−L_adv^i for D_i (fakes G_i(z_j) detached)."""
    logit = node.D(real)
    loss = F.binary_cross_entropy_with_logits(logit, torch.ones_like(logit))
    for z, a in zip(codes, alphas, strict=True):
        fl = node.D(node.decode(z.detach()).detach())
        loss = loss + a * F.binary_cross_entropy_with_logits(fl, torch.zeros_like(fl))
    return loss


def generator_loss(node: Domain, real: torch.Tensor, z_own: torch.Tensor,
                   codes: Sequence[torch.Tensor], alphas: Sequence[float], lam: float,
                   gan: str) -> torch.Tensor:  # fmt: skip
    """Centre i's part of eq. 5.7 for F and G: the adversarial term on the others' codes plus
    λ·L_cyc^i."""
    adv = real.new_zeros(())
    for z, a in zip(codes, alphas, strict=True):
        fl = node.D(node.decode(z))
        if gan == "nonsaturating":
            term = F.binary_cross_entropy_with_logits(fl, torch.ones_like(fl))
        elif gan == "minimax":
            term = -F.binary_cross_entropy_with_logits(fl, torch.zeros_like(fl))
        else:
            raise ConfigError(f"unknown GAN loss {gan!r}", where="generative.radialgan.gan_loss",
                              fix=f"one of {GAN_LOSSES}")  # fmt: skip
        adv = adv + a * term
    return adv + lam * cycle_loss(node, real, z_own, codes, alphas)


def xy(x: np.ndarray, y: np.ndarray) -> torch.Tensor:
    """A centre's (x, y) rows as one float32 tensor."""
    return torch.as_tensor(np.concatenate([x, y[:, None]], axis=1).astype(np.float32))


def centralized_step(nodes: Sequence[Domain], d_opts, g_opts, batches: Sequence[torch.Tensor],
                     alphas: np.ndarray, lam: float, gan: str) -> float:  # fmt: skip
    """One iteration of eq. 5.7 in one process (the reference of the federated training):
    every D_i one ascent step, then one joint descent step of all F, G on Σ_i of their
    losses. Returns that total."""
    m = len(nodes)
    z = [nodes[j].encode(batches[j]) for j in range(m)]
    for i in range(m):
        others = [j for j in range(m) if j != i]
        d_opts[i].zero_grad()
        discriminator_loss(nodes[i], batches[i], [z[j] for j in others],
                           [alphas[i, j] for j in others]).backward()  # fmt: skip
        d_opts[i].step()
    for o in g_opts:
        o.zero_grad()
    total = sum(
        generator_loss(nodes[i], batches[i], z[i], [z[j] for j in range(m) if j != i],
                       [alphas[i, j] for j in range(m) if j != i], lam, gan)
        for i in range(m)
    )  # fmt: skip
    total.backward()
    for o in g_opts:
        o.step()
    return float(total.detach())
