"""Tied stacked autoencoder (TSAE) and the DEC clustering model (seed 000 §1.3, §1.6)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from fedclust.errors import ConfigError

#: Encoder shapes after the input dimension N (seed 000 §1.3, thesis §4.1.1).
ARCHS: dict[str, list[int]] = {
    "DEC": [500, 500, 2000, 10],
    "CURVES": [400, 200, 100, 50, 25, 6],
    "GOOGLE": [1000, 500, 250, 10],
}
ACTIVATIONS = {"relu": F.relu, "sigmoid": torch.sigmoid, "none": lambda x: x}
NOISES = ("none", "dropout", "bitflip")


def encoder_dims(n_features: int, arch: str | Sequence[int]) -> list[int]:
    """``[N, h1, ..., f]`` from an architecture name or an explicit list of layer widths."""
    if isinstance(arch, str):
        if arch not in ARCHS:
            raise ConfigError(
                f"unknown TSAE architecture {arch!r}",
                where="dec.model.arch",
                fix=f"use one of {sorted(ARCHS)} or a list of layer widths",
            )
        hidden = ARCHS[arch]
    else:
        hidden = [int(h) for h in arch]
    if not hidden or min(hidden) < 1:
        raise ConfigError("TSAE needs at least one positive layer width", where="dec.model.arch")
    return [int(n_features), *hidden]


class TSAE(nn.Module):
    """Tied stacked autoencoder: decoder weight ``l`` is encoder weight ``l`` transposed.

    Encoder: hidden layers use ``hidden_act`` (+ optional dropout), the bottleneck is linear.
    Decoder: tied weights, its own biases (zero-initialised), ``final_act`` on the output.
    Input noise (training only): ``dropout`` (corruption, survivors scaled as ``F.dropout``) or
    ``bitflip`` (each binary entry flipped with probability ``input_noise``).
    """

    def __init__(
        self,
        dims: Sequence[int],
        hidden_act: str = "relu",
        final_act: str = "relu",
        hidden_dropout: float = 0.0,
        input_noise: float = 0.0,
        noise_kind: str = "none",
        init: str = "xavier",
    ) -> None:
        super().__init__()
        for name, act in (("hidden_act", hidden_act), ("final_act", final_act)):
            if act not in ACTIVATIONS:
                raise ConfigError(f"unknown activation {act!r}", where=f"dec.model.{name}")
        if noise_kind not in NOISES:
            raise ConfigError(f"unknown input noise {noise_kind!r}", where="dec.model.noise_kind")
        self.dims = [int(d) for d in dims]
        self.hidden_act, self.final_act = ACTIVATIONS[hidden_act], ACTIVATIONS[final_act]
        self.hidden_dropout, self.input_noise, self.noise_kind = (
            hidden_dropout,
            input_noise,
            noise_kind,
        )
        self.weights = nn.ParameterList(
            [
                nn.Parameter(torch.empty(o, i))
                for i, o in zip(self.dims[:-1], self.dims[1:], strict=False)
            ]
        )
        self.enc_bias = nn.ParameterList([nn.Parameter(torch.zeros(o)) for o in self.dims[1:]])
        self.dec_bias = nn.ParameterList([nn.Parameter(torch.zeros(i)) for i in self.dims[:-1]])
        for w in self.weights:
            if init == "xavier":
                nn.init.xavier_uniform_(w)
            elif init == "kaiming":
                nn.init.kaiming_uniform_(w, nonlinearity="relu")
            else:
                raise ConfigError(f"unknown init {init!r}", where="dec.model.init")

    @property
    def n_features(self) -> int:
        return self.dims[0]

    def corrupt(self, x: torch.Tensor) -> torch.Tensor:
        """Input noise for Step-1 training (identity when off or in eval mode)."""
        if not self.training or self.input_noise <= 0 or self.noise_kind == "none":
            return x
        if self.noise_kind == "dropout":
            return F.dropout(x, self.input_noise, training=True)
        flip = torch.rand_like(x) < self.input_noise
        return torch.where(flip, 1.0 - x, x)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.enc_bias, strict=False)):
            h = F.linear(h, w, b)
            if i < last:
                h = self.hidden_act(h)
                if self.hidden_dropout > 0:
                    h = F.dropout(h, self.hidden_dropout, training=self.training)
        return h

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        h = z
        for i in reversed(range(len(self.weights))):
            h = F.linear(h, self.weights[i].t(), self.dec_bias[i])
            h = self.hidden_act(h) if i > 0 else self.final_act(h)
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(self.corrupt(x)))


def soft_assignment(z: torch.Tensor, mu: torch.Tensor, alpha: float) -> torch.Tensor:
    """Student-t kernel q_ij (seed 000 §1.6 eq. 2.18, corrected sign and exponent)."""
    d2 = torch.cdist(z, mu).pow(2) if z.shape[0] > 0 else z.new_zeros((0, mu.shape[0]))
    q = (1.0 + d2 / alpha).pow(-(alpha + 1.0) / 2.0)
    return q / q.sum(dim=1, keepdim=True)


def target_distribution(q: torch.Tensor) -> torch.Tensor:
    """p_ij = (q_ij² / f_j) / Σ_j' (q_ij'² / f_j'), f_j = Σ_i q_ij (eq. 2.20)."""
    w = q.pow(2) / q.sum(dim=0)
    return w / w.sum(dim=1, keepdim=True)


class DECModel(nn.Module):
    """TSAE plus trainable centroids μ (k × f)."""

    def __init__(self, tsae: TSAE, k: int, alpha: float = 1.0) -> None:
        super().__init__()
        self.tsae = tsae
        self.alpha = float(alpha)
        self.centroids = nn.Parameter(torch.zeros(k, tsae.dims[-1]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return soft_assignment(self.tsae.encode(x), self.centroids, self.alpha)


def get_parameters(module: nn.Module) -> list[np.ndarray]:
    """Model state as a list of numpy arrays (Flower ``NDArrays``), in ``state_dict`` order."""
    return [v.detach().cpu().numpy().copy() for v in module.state_dict().values()]


def set_parameters(module: nn.Module, parameters: Sequence[np.ndarray]) -> None:
    keys = list(module.state_dict())
    if len(keys) != len(parameters):
        raise ValueError(f"expected {len(keys)} parameter arrays, got {len(parameters)}")
    module.load_state_dict(
        {k: torch.as_tensor(np.asarray(p)) for k, p in zip(keys, parameters, strict=False)},
        strict=True,
    )
