"""Deterministic seeding: every random step derives its generator from the config seed plus a
stable label, so adding a step never shifts the random stream of another."""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(seed: int, *labels: object) -> int:
    """A 32-bit seed from a base seed and labels (stable across Python runs, unlike ``hash``)."""
    h = hashlib.sha256(repr((int(seed), *map(str, labels))).encode()).digest()
    return int.from_bytes(h[:4], "little")


def rng(seed: int, *labels: object) -> np.random.Generator:
    """A numpy Generator for the random step named by ``labels``."""
    return np.random.default_rng(derive_seed(seed, *labels))


def seed_torch(seed: int, *labels: object) -> int:
    """Seed torch (CPU and CUDA) deterministically; returns the derived seed."""
    import torch

    s = derive_seed(seed, *labels)
    torch.manual_seed(s)
    return s
