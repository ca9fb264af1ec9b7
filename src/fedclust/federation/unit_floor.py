"""The per-hidden-unit disclosure floor of a FedAvg centre that trains an MLP on patient rows.

A centre's floor counts samples; a network's update is a sum over them only as a whole. A
ReLU unit j of the first hidden layer moves through the samples that reach it: with plain SGD
in one step ΔW₁[j] = −lr Σ_n δ_nj x_nᵀ and Δb₁[j] = −lr Σ_n δ_nj over the samples n with
δ_nj ≠ 0, so a unit that one sample reaches gives that sample exactly (ΔW₁[j] / Δb₁[j]; the
server knows the weights it sent, its learning rate and any penalty), and its outgoing column
W₂[:, j] moves by that sample's output error. A deeper hidden unit gives the representation of
the layer below in the same way. So the centre counts, per hidden unit, the distinct training
samples that gave it a non-zero gradient at its pre-activation during the local fit
(``touched``), and a unit that 0 < m < floor samples reached has its update withheld: its
incoming row, bias and outgoing column are reset to the weights the centre received. The floor
is the centre's own (``max(min_samples, disclosure nfilter_subset)``, the one its sample count
meets); units no sample reached moved only by what the server can compute itself (a penalty on
the received weights) or not at all; output units see every sample. With a smooth activation
(tanh, SELU, ELU) every sample reaches every unit (m = n ≥ floor): nothing is withheld.

Layers are ``(W, b)`` pairs, ``W`` of shape (out, in) as :class:`torch.nn.Linear` holds it;
:func:`linear_layers` reads them from a ``torch.nn.Sequential``-like MLP, :class:`Touched`
fills them through forward hooks on its hidden ``Linear`` modules. Used by the bayes
FedAvg centre (``bayes_fedavg_fit``, flat weights split by its layout) and the survival centres
(``survival_fit``, ``survival_local_model``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import nn

Layer = tuple[torch.Tensor, "torch.Tensor | None"]


def hidden_units(
    units: Iterable[int], n: int, device: str | torch.device = "cpu"
) -> list[torch.Tensor]:
    """Empty ``touched`` accumulators: one (n × units) bool tensor per hidden layer."""
    return [torch.zeros(n, int(k), dtype=torch.bool, device=device) for k in units]


def mark(touched: Sequence[torch.Tensor], idx, pre: Sequence[torch.Tensor]) -> None:
    """Or into ``touched`` which samples ``idx`` of a step gave each hidden unit a non-zero
    gradient at its pre-activation (``pre``: the hidden layers' pre-activations of the step,
    their ``.grad`` filled by the backward pass)."""
    every = isinstance(idx, slice) and idx == slice(None)  # a full batch: no indexing
    for t, z in zip(touched, pre, strict=True):
        if every:
            t.logical_or_(z.grad != 0)
        else:
            t[idx] |= z.grad != 0


def linear_layers(net: nn.Module) -> list[nn.Linear]:
    """The ``Linear`` modules of a Sequential-like MLP, in order (the last is the output)."""
    return [m for m in net.modules() if isinstance(m, nn.Linear)]


def mlp_units(net: nn.Module, n: int) -> list[torch.Tensor]:
    """Empty ``touched`` accumulators of an MLP's hidden ``Linear`` layers over ``n`` samples."""
    return hidden_units((m.out_features for m in linear_layers(net)[:-1]), n)


class Touched:
    """Fills ``masks`` (:func:`mlp_units`) through forward hooks on ``net``'s hidden ``Linear``
    layers: inside ``with Touched(net, masks):`` every forward pass keeps its hidden
    pre-activations (``retain_grad``); after its backward, ``.step(idx)`` marks the step's
    samples ``idx`` (an index tensor or a slice of the n)."""

    def __init__(self, net: nn.Module, masks: Sequence[torch.Tensor]):
        self.hidden = linear_layers(net)[:-1]
        self.masks = masks
        self._pre: list[torch.Tensor] = []
        self._handles: list = []

    def _hook(self, module, args, out: torch.Tensor) -> None:
        if out.requires_grad:
            out.retain_grad()
            self._pre.append(out)

    def __enter__(self) -> Touched:
        self._handles = [m.register_forward_hook(self._hook) for m in self.hidden]
        return self

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            h.remove()
        self._handles, self._pre = [], []

    def step(self, idx) -> None:
        pre, self._pre = self._pre, []
        if pre:
            mark(self.masks, idx, pre)


@torch.no_grad()
def withhold(
    new: Sequence[Layer], received: Sequence[Layer], touched: Sequence[torch.Tensor], floor: int
) -> int:
    """Reset, in place in ``new``, every hidden unit reached by 0 < m < ``floor`` distinct
    samples to ``received`` (incoming row, bias, outgoing column); return how many units were
    reset. ``new`` / ``received``: the layers' ``(W, b)``, hidden ones first, then the output."""
    n_reset = 0
    for i, t in enumerate(touched):
        m = t.sum(0)
        units = torch.nonzero((m > 0) & (m < int(floor))).flatten()
        if units.numel() == 0:
            continue
        (W, b), (W0, b0) = new[i], received[i]
        W[units] = W0[units].to(W.dtype)
        if b is not None:
            b[units] = b0[units].to(b.dtype)
        (V, _), (V0, _) = new[i + 1], received[i + 1]
        V[:, units] = V0[:, units].to(V.dtype)
        n_reset += int(units.numel())
    return n_reset


def pairs(arrays: Sequence) -> list[Layer]:
    """``(W, b)`` pairs of a Linear MLP's parameters in ``state_dict`` order (W₀, b₀, W₁, b₁,
    …) as tensors; numpy arrays are shared, not copied (a :func:`withhold` edits them)."""
    ts = [a if isinstance(a, torch.Tensor) else torch.from_numpy(a) for a in arrays]
    return list(zip(ts[0::2], ts[1::2], strict=True))
