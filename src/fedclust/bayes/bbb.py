"""Bayes by Backprop (seed 003 §3.2–3.3; Blundell et al. 2015) on a flat parameter vector.

The network's weights live in one vector (:class:`Layout` maps it to layers), so sampling,
log-densities and the KL are single vector operations:

- posterior q(w) = N(μ, σ²) with σ = log(1 + e^ρ) (softplus), w = μ + σ ⊙ ε, ε ~ N(0, I);
- priors: a diagonal Gaussian (:class:`GaussianPrior`; the PVI cavity is one) built from
  natural parameters (η₁ = μ/σ², η₂ = −1/(2σ²)), and the scale mixture
  π N(0, σ₁²) + (1 − π) N(0, σ₂²) (:class:`ScaleMixturePrior`);
- the minibatch loss F_i = π_i β KL(q‖p) − Σ_{n∈batch} log p(y_n | x_n, w) with π_i = 1/M
  (``uniform``) or 2^{M−i}/(2^M − 1) (``blundell``), the KL by Monte Carlo
  (log q(w) − log p(w) at the sampled w, always for the mixture) or in closed form (Gaussian
  priors only);
- the predictive p(y|x) ≈ (1/S) Σ_s softmax f(x; w_s) (eq. 4.21).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import ConfigError
from ..federation import unit_floor

LOG_2PI = math.log(2 * math.pi)
KL_WEIGHTINGS = ("uniform", "blundell")
KL_ESTIMATORS = ("mc", "closed")


# ------------------------------------------------------------------------------------- layout
@dataclass(frozen=True)
class Layout:
    """An MLP ``sizes[0] → … → sizes[-1]`` (ReLU hidden layers, softmax output) as slices of
    one flat parameter vector: per layer the weight matrix (out × in), then the bias."""

    sizes: tuple[int, ...]
    bias: bool = True
    slices: tuple[tuple[slice, slice | None], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        out, at = [], 0
        for n_in, n_out in zip(self.sizes[:-1], self.sizes[1:], strict=True):
            w = slice(at, at + n_in * n_out)
            at += n_in * n_out
            b = None
            if self.bias:
                b = slice(at, at + n_out)
                at += n_out
            out.append((w, b))
        object.__setattr__(self, "slices", tuple(out))

    @property
    def n_params(self) -> int:
        last_w, last_b = self.slices[-1]
        return (last_b or last_w).stop

    def fan_in(self) -> np.ndarray:
        """Each parameter's layer input size (weights and bias alike)."""
        out = np.empty(self.n_params)
        for (w, b), n_in in zip(self.slices, self.sizes[:-1], strict=True):
            out[w] = n_in
            if b is not None:
                out[b] = n_in
        return out

    def split(self, w: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """Views of ``w`` (P,) as [(W (out × in), b (out,)), …]."""
        sizes = self.sizes
        return [
            (w[ws].view(sizes[i + 1], sizes[i]), None if bs is None else w[bs])
            for i, (ws, bs) in enumerate(self.slices)
        ]


def make_layout(n_in: int, hidden: Sequence[int], n_out: int, bias: bool = True) -> Layout:
    return Layout((int(n_in), *map(int, hidden), int(n_out)), bool(bias))


def forward(
    x: torch.Tensor,
    w: torch.Tensor,
    layout: Layout,
    dropout: tuple[float, float] = (0.0, 0.0),
    gen: torch.Generator | None = None,
    pre: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """Logits of the MLP with weights ``w`` (P,). ``dropout`` = (input, hidden) drop rates,
    masks drawn from ``gen`` (inverted dropout; training only). ``pre``: a list that receives
    each hidden layer's pre-activations (batch × units, their gradient retained)."""
    h = x
    layers = layout.split(w)
    p_in, p_hid = dropout
    for i, (W, b) in enumerate(layers):
        p = p_in if i == 0 else p_hid
        if p > 0:
            keep = torch.rand(h.shape, generator=gen, device=h.device) >= p
            h = h * keep / (1.0 - p)
        h = F.linear(h, W, b)
        if i < len(layers) - 1:
            if pre is not None and h.requires_grad:
                h.retain_grad()
                pre.append(h)
            h = F.relu(h)
    return h


def init_weights(layout: Layout, seed: int) -> np.ndarray:
    """Initial weights (float32): U(−1/√fan_in, 1/√fan_in), as torch's ``nn.Linear``; drawn
    from ``seed`` so every method and every centre can start from the same point."""
    g = np.random.default_rng(seed)
    bound = 1.0 / np.sqrt(layout.fan_in())
    return g.uniform(-bound, bound).astype(np.float32)


def init_rho(n: int, mean: float, std: float, seed: int) -> np.ndarray:
    """Initial ρ (softplus⁻¹ of σ): N(mean, std²) (std 0: constant)."""
    g = np.random.default_rng(seed)
    return (mean + std * g.standard_normal(n)).astype(np.float32)


def softplus_inv(sigma: np.ndarray) -> np.ndarray:
    """ρ with log(1 + e^ρ) = σ (stable for small and large σ)."""
    sigma = np.clip(np.asarray(sigma, dtype=np.float64), 1e-30, None)
    return np.where(sigma > 20, sigma, np.log(np.expm1(np.minimum(sigma, 20))))


# ------------------------------------------------------------------------------------- priors
class GaussianPrior:
    """A diagonal Gaussian N(m, v), made from natural parameters (η₁ = m/v, η₂ = −1/(2v)):
    the centralized Gaussian prior and PVI's cavity go through the same conversion, so one
    centre reproduces centralized BBB bit for bit."""

    def __init__(self, eta1: np.ndarray, eta2: np.ndarray, device: str | torch.device = "cpu"):
        eta1 = np.asarray(eta1, dtype=np.float64)
        eta2 = np.asarray(eta2, dtype=np.float64)
        if not np.all(eta2 < 0):
            raise ValueError("a Gaussian prior needs η₂ < 0 (positive variance) everywhere")
        var = -0.5 / eta2
        self.mean = torch.as_tensor(eta1 * var, dtype=torch.float32, device=device)
        self.var = torch.as_tensor(var, dtype=torch.float32, device=device)
        self.log_var = torch.log(self.var)

    def log_prob(self, w: torch.Tensor) -> torch.Tensor:
        return (-0.5 * ((w - self.mean) ** 2 / self.var + self.log_var + LOG_2PI)).sum()

    def kl_closed(self, mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """KL(N(μ, σ²) ‖ N(m, v)) = Σ ½[log(v/σ²) + (σ² + (μ − m)²)/v − 1]."""
        s2 = sigma**2
        return (
            0.5 * (self.log_var - torch.log(s2) + (s2 + (mu - self.mean) ** 2) / self.var - 1).sum()
        )


class ScaleMixturePrior:
    """π N(0, σ₁²) + (1 − π) N(0, σ₂²) per weight (Blundell et al. eq. 7)."""

    def __init__(self, pi: float, sigma1: float, sigma2: float, device: str | torch.device = "cpu"):
        if not 0 < pi < 1 or sigma1 <= 0 or sigma2 <= 0:
            raise ConfigError(
                f"scale mixture needs 0 < pi < 1 and sigmas > 0 (got {pi}, {sigma1}, {sigma2})",
                where="bayes.priors.mixture",
            )
        self.log_w = torch.tensor([math.log(pi), math.log1p(-pi)], device=device)
        self.var = torch.tensor([sigma1**2, sigma2**2], device=device)

    def log_prob(self, w: torch.Tensor) -> torch.Tensor:
        comp = self.log_w - 0.5 * (w.unsqueeze(-1) ** 2 / self.var + torch.log(self.var) + LOG_2PI)
        return torch.logsumexp(comp, dim=-1).sum()

    def kl_closed(self, mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        raise ConfigError(
            "the scale-mixture prior has no closed-form KL",
            where="bayes.train.kl",
            fix="use kl: mc (Blundell's Monte-Carlo estimate)",
        )


Prior = GaussianPrior | ScaleMixturePrior


def gaussian_natural(n: int, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Natural parameters of N(0, σ² I_n) (float64)."""
    return np.zeros(n), np.full(n, -0.5 / float(sigma) ** 2)


def kl_weights(n_batches: int, kind: str) -> np.ndarray:
    """π_i, i = 1..M: 1/M (``uniform``) or 2^{M−i}/(2^M − 1) (``blundell``; sums to 1)."""
    if kind == "uniform":
        return np.full(n_batches, 1.0 / n_batches)
    if kind == "blundell":
        i = np.arange(1, n_batches + 1)
        return np.exp2(-i) / -np.expm1(-n_batches * math.log(2))
    raise ConfigError(
        f"unknown KL weighting {kind!r}",
        where="bayes.train.kl_weighting",
        fix=f"one of {KL_WEIGHTINGS}",
    )


# -------------------------------------------------------------------------------- the trainer
@dataclass
class TrainSettings:
    """Local/centralized training settings (``bayes.train`` / ``bayes.federated.local``)."""

    epochs: int = 10
    batch_size: int = 128
    optimizer: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.0
    kl_weighting: str = "uniform"
    kl: str = "mc"
    kl_weight: float = 1.0
    mc_train: int = 1
    mc_test: int = 10

    @classmethod
    def from_config(cls, cfg: dict) -> TrainSettings:
        keys = cls.__dataclass_fields__
        return cls(**{k: v for k, v in cfg.items() if k in keys})


@dataclass
class Generators:
    """The trainer's own random streams (seeded once, living across epochs and rounds):
    minibatch order on the CPU (ARCHITECTURE: never the row order of a file), the weight noise
    ε and dropout masks, and the evaluation samples apart so that evaluating never shifts the
    training stream."""

    batches: torch.Generator
    noise: torch.Generator
    eval: torch.Generator

    @classmethod
    def from_seed(cls, seed: int, device: str | torch.device = "cpu") -> Generators:
        from ..seeds import derive_seed

        def gen(label: str, dev: str | torch.device) -> torch.Generator:
            g = torch.Generator(device=dev)
            g.manual_seed(derive_seed(seed, label))
            return g

        return cls(gen("batches", "cpu"), gen("noise", device), gen("eval", device))


def _optimizer(params: list[torch.Tensor], s: TrainSettings) -> torch.optim.Optimizer:
    if s.optimizer == "adam":
        return torch.optim.Adam(params, lr=s.lr)
    if s.optimizer == "sgd":
        return torch.optim.SGD(params, lr=s.lr, momentum=s.momentum)
    raise ConfigError(
        f"unknown optimizer {s.optimizer!r}", where="bayes.train.optimizer", fix="adam or sgd"
    )


@dataclass
class Private:
    """VIRTUAL's optional private client weights φ (``hierarchical``): a second mean-field
    Gaussian whose sample is added to the shared weights, w = θ + φ, with its own fixed prior;
    it never leaves the centre."""

    mu: torch.Tensor
    rho: torch.Tensor
    prior: GaussianPrior


def _kl(mu, rho, eps, w, prior: Prior, s: TrainSettings) -> torch.Tensor:
    sigma = F.softplus(rho)
    if s.kl == "closed":
        return prior.kl_closed(mu, sigma)
    if s.kl != "mc":
        raise ConfigError(
            f"unknown KL estimator {s.kl!r}", where="bayes.train.kl", fix=f"one of {KL_ESTIMATORS}"
        )
    # log q(w|θ) at w = μ + σε is −½ε² − log σ − ½ log 2π (its total derivative in θ is exact)
    log_q = (-0.5 * eps**2 - torch.log(sigma) - 0.5 * LOG_2PI).sum()
    return log_q - prior.log_prob(w)


def _check_finite(loss: torch.Tensor, epoch: int, s: TrainSettings) -> None:
    if not torch.isfinite(loss):
        raise ConfigError(
            f"training diverged (minibatch loss {float(loss)} in epoch {epoch}; {s.optimizer}, "
            f"lr {s.lr:g}, batch {s.batch_size})",
            where="bayes.train / bayes.federated.local",
            fix="lower lr: the minibatch loss is a sum over the batch (Blundell's form), so an "
            "SGD learning rate of a per-image mean loss corresponds to lr / batch_size here",
        )


def fit_variational(
    mu: torch.Tensor,
    rho: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    layout: Layout,
    prior: Prior,
    s: TrainSettings,
    gens: Generators,
    epochs: int | None = None,
    on_epoch=None,
    private: Private | None = None,
) -> list[dict[str, float]]:
    """Minimise Σ_i F_i over ``epochs`` epochs (in place on ``mu``, ``rho``; float32).

    Returns one record per epoch: ``loss`` (the epoch's −ELBO estimate per sample), ``kl``
    (the last KL estimate), ``train_accuracy`` (on the epoch's minibatches). ``on_epoch(e)``
    may add evaluation numbers to the record.
    """
    mu.requires_grad_(True)
    rho.requires_grad_(True)
    params = [mu, rho] + ([private.mu, private.rho] if private else [])
    for p in params:
        p.requires_grad_(True)
    opt = _optimizer(params, s)
    n = len(y)
    m = max(1, math.ceil(n / s.batch_size))
    pis = kl_weights(m, s.kl_weighting) * s.kl_weight
    records = []
    for epoch in range(1, (s.epochs if epochs is None else epochs) + 1):
        order = torch.randperm(n, generator=gens.batches).to(x.device)
        # running sums stay on the device: no host synchronisation inside the epoch
        tot = torch.zeros((), device=x.device)
        correct = torch.zeros((), dtype=torch.int64, device=x.device)
        kl_last = tot
        for i in range(m):
            idx = order[i * s.batch_size : (i + 1) * s.batch_size]
            xb, yb = x[idx], y[idx]
            nll, kl = 0.0, 0.0
            for _ in range(s.mc_train):
                eps = torch.randn(mu.shape, generator=gens.noise, device=mu.device)
                w = mu + F.softplus(rho) * eps
                kl = kl + _kl(mu, rho, eps, w, prior, s)
                if private is not None:
                    e2 = torch.randn(private.mu.shape, generator=gens.noise, device=mu.device)
                    phi = private.mu + F.softplus(private.rho) * e2
                    kl = kl + _kl(private.mu, private.rho, e2, phi, private.prior, s)
                    w = w + phi
                logits = forward(xb, w, layout)
                nll = nll + F.cross_entropy(logits, yb, reduction="sum")
                correct += (logits.argmax(1) == yb).sum()
            loss = (pis[i] * kl + nll) / s.mc_train
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot = tot + loss.detach()
            kl_last = kl.detach() / s.mc_train
        _check_finite(tot, epoch, s)  # a NaN anywhere in the epoch reaches the sum
        rec = {
            "epoch": epoch,
            "loss": float(tot) / n,
            "kl": float(kl_last),
            "train_accuracy": int(correct) / (n * s.mc_train),
        }
        if on_epoch is not None:
            rec.update(on_epoch(epoch))
        records.append(rec)
    for p in params:
        p.requires_grad_(False)
    return records


def fit_deterministic(
    w: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    layout: Layout,
    s: TrainSettings,
    gens: Generators,
    dropout: tuple[float, float] = (0.0, 0.0),
    epochs: int | None = None,
    on_epoch=None,
    touched: list[torch.Tensor] | None = None,
) -> list[dict[str, float]]:
    """Plain (SGD / dropout) training of the same MLP on the summed cross-entropy.

    ``touched``: one bool tensor per hidden layer (n × units, on ``x``'s device), or-ed in
    place with which training samples gave each hidden unit a non-zero gradient at its
    pre-activation in some step (the samples behind that unit's update: with a ReLU, its
    incoming row, bias and outgoing column move only through them)."""
    w.requires_grad_(True)
    opt = _optimizer([w], s)
    n = len(y)
    m = max(1, math.ceil(n / s.batch_size))
    records = []
    for epoch in range(1, (s.epochs if epochs is None else epochs) + 1):
        order = torch.randperm(n, generator=gens.batches).to(x.device)
        tot = torch.zeros((), device=x.device)
        correct = torch.zeros((), dtype=torch.int64, device=x.device)
        for i in range(m):
            idx = order[i * s.batch_size : (i + 1) * s.batch_size]
            pre: list[torch.Tensor] | None = [] if touched is not None else None
            logits = forward(x[idx], w, layout, dropout, gens.noise, pre)
            loss = F.cross_entropy(logits, y[idx], reduction="sum")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if touched is not None:
                unit_floor.mark(touched, idx, pre or ())
            opt.step()
            tot = tot + loss.detach()
            correct += (logits.argmax(1) == y[idx]).sum()
        _check_finite(tot, epoch, s)
        rec = {
            "epoch": epoch,
            "loss": float(tot) / n,
            "kl": 0.0,
            "train_accuracy": int(correct) / n,
        }
        if on_epoch is not None:
            rec.update(on_epoch(epoch))
        records.append(rec)
    w.requires_grad_(False)
    return records


# ---------------------------------------------------------------------------------- prediction
@torch.no_grad()
def predict_proba(
    x: torch.Tensor,
    layout: Layout,
    mu: torch.Tensor,
    sigma: torch.Tensor | None = None,
    samples: int = 1,
    gen: torch.Generator | None = None,
    chunk: int = 8192,
) -> torch.Tensor:
    """MC predictive (1/S) Σ_s softmax f(x; μ + σ ε_s) (eq. 4.21); ``sigma`` None: the
    deterministic network with weights ``mu``."""
    out = torch.zeros(len(x), layout.sizes[-1], device=x.device)
    draws = 1 if sigma is None else samples
    for _ in range(draws):
        w = mu
        if sigma is not None:
            w = mu + sigma * torch.randn(mu.shape, generator=gen, device=mu.device)
        for a in range(0, len(x), chunk):
            out[a : a + chunk] += F.softmax(forward(x[a : a + chunk], w, layout), dim=1)
    return out / draws


def error_rate(proba: torch.Tensor, y: torch.Tensor) -> float:
    return float((proba.argmax(1) != y).float().mean())
