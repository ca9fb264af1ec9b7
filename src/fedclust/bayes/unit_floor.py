"""The per-unit disclosure floor of the FedAvg arm (``bayes_fedavg_fit``), applied at the centre.

The centre's floor counts images; a network's update is a sum over them only as a whole. A
ReLU unit j of the first hidden layer moves through the images that reach it: with plain SGD
in one step ΔW₁[j] = −lr Σ_n δ_nj x_nᵀ and Δb₁[j] = −lr Σ_n δ_nj over the images n with
δ_nj ≠ 0, so a unit that one image reaches gives that image exactly (ΔW₁[j] / Δb₁[j]; the
server knows the weights it sent), and its outgoing column W₂[:, j] moves by that image's
output error (its label). A deeper hidden unit gives the representation of the layer below in
the same way. So the centre counts, per hidden unit, the distinct training images that gave it
a non-zero gradient during the local fit (:func:`fedclust.bayes.bbb.fit_deterministic`'s
``touched``), and a unit that 0 < m < floor images reached has its update withheld: its
incoming row, bias and outgoing column are reset to the weights the centre received. The floor
is the centre's own (``max(min_samples, disclosure nfilter_subset)``, the one its image count
meets); units no image reached did not move (m = 0); output units see every image.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .bbb import Layout


def hidden_units(layout: Layout, n: int, device: str | torch.device = "cpu") -> list[torch.Tensor]:
    """Empty ``touched`` accumulators: one (n × units) bool tensor per hidden layer."""
    return [torch.zeros(n, k, dtype=torch.bool, device=device) for k in layout.sizes[1:-1]]


def withhold(
    w: torch.Tensor, received: torch.Tensor, layout: Layout, touched: Sequence[torch.Tensor],
    floor: int,
) -> int:  # fmt: skip
    """Reset, in place in ``w``, every hidden unit reached by 0 < m < ``floor`` distinct images
    to ``received`` (incoming row, bias, outgoing column); return how many units were reset."""
    new, old = layout.split(w), layout.split(received)
    n_reset = 0
    for i, t in enumerate(touched):
        m = t.sum(0)
        units = torch.nonzero((m > 0) & (m < int(floor))).flatten()
        if units.numel() == 0:
            continue
        (W, b), (W0, b0) = new[i], old[i]
        W[units] = W0[units]
        if b is not None:
            b[units] = b0[units]
        (V, _), (V0, _) = new[i + 1], old[i + 1]
        V[:, units] = V0[:, units]
        n_reset += int(units.numel())
    return n_reset
