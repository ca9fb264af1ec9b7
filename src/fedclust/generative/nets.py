"""Small building blocks shared by the stage's models: MLPs, parameter exchange, seeding."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from fedclust.errors import ConfigError
from fedclust.seeds import derive_seed

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "leaky_relu": nn.LeakyReLU}


def mlp(n_in: int, hidden: Sequence[int], n_out: int, activation: str = "relu") -> nn.Sequential:
    """Linear → activation → … → Linear (no activation on the output)."""
    if activation not in ACTIVATIONS:
        raise ConfigError(
            f"unknown activation {activation!r}",
            where="generative model",
            fix=f"one of {sorted(ACTIVATIONS)}",
        )
    layers: list[nn.Module] = []
    d = n_in
    for h in hidden:
        layers += [nn.Linear(d, int(h)), ACTIVATIONS[activation]()]
        d = int(h)
    layers.append(nn.Linear(d, n_out))
    return nn.Sequential(*layers)


def get_parameters(module: nn.Module) -> list[np.ndarray]:
    """The module's state as numpy arrays (state_dict order): a FedAvg message."""
    return [v.detach().cpu().numpy().copy() for v in module.state_dict().values()]


def set_parameters(module: nn.Module, params: Sequence[np.ndarray]) -> None:
    """Copy ``params`` into the module in place (optimizers keep their references)."""
    state = module.state_dict()
    if len(state) != len(params):
        raise ValueError(f"expected {len(state)} parameter arrays, got {len(params)}")
    with torch.no_grad():
        for (_, v), p in zip(state.items(), params, strict=True):
            v.copy_(torch.as_tensor(np.asarray(p), dtype=v.dtype))


def generator(seed: int, *labels: object) -> torch.Generator:
    """A CPU torch generator for one trainer's minibatches and noise."""
    return torch.Generator().manual_seed(derive_seed(seed, *labels))


def init_module(build, seed: int, *labels: object) -> nn.Module:
    """``build()`` with torch's global RNG seeded from (seed, labels): the same initial weights
    wherever the same labels are used (every arm of an experiment starts from them)."""
    state = torch.random.get_rng_state()
    torch.manual_seed(derive_seed(seed, *labels))
    try:
        return build()
    finally:
        torch.random.set_rng_state(state)


def n_parameters(module: nn.Module) -> int:
    return int(sum(p.numel() for p in module.parameters()))


def device(name: str = "auto") -> torch.device:
    """``auto``: CUDA when available (the thesis config's GPU jobs), else CPU; or a torch name."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)
