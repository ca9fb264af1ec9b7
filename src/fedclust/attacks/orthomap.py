"""An exactly orthogonal d × d map for the attacks, never formed as a matrix (seed 001 §8).

The attacks need "Q orthogonal on all genes" (Figs 4.16/4.17, thesis §4.4.2–4.4.3). A dense Haar
matrix (``projection_matrix(d, d, "orthogonal")``) is d² floats and an O(d³) QR: 24 GB on the
~55 000 genes of a TCGA cohort. :class:`OrthogonalMap` applies the same transform as the HAC
perturbation, :func:`fedclust.hac.projection.orthogonal_transform` (random signs × orthonormal
DCT-II × random permutation, several rounds), in O(n d log d) time and O(rows × d) memory, and
its exact inverse (``Qᵀ``): ``x @ q`` and ``y @ q.T`` work on numpy arrays as with a matrix.
"""

from __future__ import annotations

import numpy as np
import torch

from ..hac.projection import ORTHO_ROUNDS, _ortho_plan, orthogonal_transform


class OrthogonalMap:
    """``Q = Π_r (D_r C P_r)`` (d × d, exactly orthogonal) as an operator; ``q.T`` is ``Qᵀ``."""

    __array_ufunc__ = None  # numpy defers ``x @ q`` to :meth:`__rmatmul__`

    def __init__(self, d: int, seed: int, rounds: int = ORTHO_ROUNDS, transpose: bool = False):
        self.d, self.seed, self.rounds, self.transpose = int(d), int(seed), int(rounds), transpose

    @property
    def shape(self) -> tuple[int, int]:
        return (self.d, self.d)

    @property
    def T(self) -> OrthogonalMap:
        return OrthogonalMap(self.d, self.seed, self.rounds, not self.transpose)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``x Q`` (or ``x Qᵀ`` for the transposed map) for the rows of ``x`` (n × d)."""
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.d:
            raise ValueError(f"OrthogonalMap of size {self.d} applied to shape {x.shape}")
        if not self.transpose:
            return orthogonal_transform(x, self.seed, p=self.d, rounds=self.rounds)
        from scipy.fft import idct

        z = x.copy()
        for signs, perm in reversed(_ortho_plan(self.d, self.seed, self.rounds)):
            unperm = np.empty_like(z)
            unperm[:, perm] = z
            z = idct(unperm, type=2, norm="ortho", axis=1) * signs
        return z

    def __rmatmul__(self, x: np.ndarray) -> np.ndarray:
        return self.apply(x)

    def dense(self) -> np.ndarray:
        """The d × d matrix (small d only: tests)."""
        return self.apply(np.eye(self.d))


def project(x: np.ndarray, q: np.ndarray | OrthogonalMap) -> np.ndarray:
    """``x @ q`` for a dense matrix or an :class:`OrthogonalMap`."""
    return q.apply(x) if isinstance(q, OrthogonalMap) else np.asarray(x) @ q


def fresh_orthogonal(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``x Q`` with a fresh seeded :class:`OrthogonalMap` (invariant training, no d × d matrix)."""
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=gen))
    out = OrthogonalMap(x.shape[1], seed).apply(x.detach().cpu().numpy())
    return torch.as_tensor(out, dtype=x.dtype, device=x.device)
