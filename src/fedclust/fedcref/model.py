"""Per-cluster autoencoder (seed 002 §2.2, §6): d−100−64−32 mirrored, ReLU, sigmoid output,
Adam 1e-3, MSE, batch 32, 20 epochs with early stop on the training loss (patience 4).
Per-sample error e_k = mean over features of (x̂ − x)² (eq. 1).

FedCRef trains hundreds of tiny MLPs per iteration, where per-step Python/optimizer overhead
dominates. The AE therefore keeps all its weights in one flat tensor (layer weights and biases
are views, in ``nn.Sequential`` state_dict order) and :func:`train_ae` applies Adam to that flat
vector in five tensor ops. The update is torch.optim.Adam's (same bias correction and ε
placement); ``tests/test_fedcref.py`` checks it against ``torch.optim.Adam`` on ``nn.Linear``
layers step for step. :func:`as_sequential` gives the equivalent ``nn.Sequential``.

:func:`train_many` trains M such AEs at once (one (M, P) parameter matrix, batched matmuls):
each model keeps its own data, initialisation, minibatch generator, Adam state, epoch count and
early stop, and equals :func:`train_ae` run on it alone (``tests/test_fedcref_batched.py``); a
model's update never reads another model's data. :func:`errors_many` is the batched
:func:`sample_errors`. This is how the simulation runs independent local trainings of one
FedCRef iteration in parallel (issue 28: per-step overhead dominated, and a paper-size iteration
is 10⁵ minibatch steps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from fedclust.dec.train import batches, shuffle_generator
from fedclust.seeds import derive_seed

NDArrays = list[np.ndarray]


class FlatAE:
    """Fully connected AE d−h1−…−hk−…−h1−d on one flat parameter vector."""

    def __init__(self, d: int, hidden: Sequence[int], seed: int | None = 0) -> None:
        dims = [int(d), *[int(h) for h in hidden]]
        rev = dims[::-1]
        self.layers = list(zip(dims[:-1], dims[1:], strict=False)) + list(
            zip(rev[:-1], rev[1:], strict=False)
        )
        self.shapes: list[tuple[int, ...]] = []
        for i, o in self.layers:
            self.shapes += [(o, i), (o,)]
        self.sizes = [math.prod(s) for s in self.shapes]
        self.flat = torch.empty(sum(self.sizes))
        if seed is not None:  # nn.Linear's default init: U(±1/√fan_in) for weights and biases
            gen = torch.Generator().manual_seed(derive_seed(seed, "fedcref", "ae_init"))
            off = 0
            for (i, _o), sw, sb in zip(self.layers, self.sizes[::2], self.sizes[1::2], strict=True):
                bound = 1.0 / math.sqrt(i)
                self.flat[off : off + sw + sb].uniform_(-bound, bound, generator=gen)
                off += sw + sb

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        out, off = [], 0
        for shape, size in zip(self.shapes, self.sizes, strict=True):
            out.append(flat[off : off + size].view(shape))
            off += size
        return out

    def forward(self, x: torch.Tensor, flat: torch.Tensor | None = None) -> torch.Tensor:
        v = self.views(self.flat if flat is None else flat)
        h = x
        last = len(self.layers) - 1
        for k in range(len(self.layers)):
            h = F.linear(h, v[2 * k], v[2 * k + 1])
            h = torch.sigmoid(h) if k == last else F.relu(h)
        return h

    __call__ = forward


def make_ae(d: int, hidden: Sequence[int], seed: int | None = 0) -> FlatAE:
    """A fresh AE, initialised from ``seed`` (no global RNG state is touched)."""
    return FlatAE(d, hidden, seed)


def get_parameters(model: FlatAE) -> NDArrays:
    """Weights as a list of arrays (``nn.Sequential`` state_dict order: W0, b0, W1, b1, …)."""
    return [t.detach().cpu().numpy().copy() for t in model.views(model.flat)]


def set_parameters(model: FlatAE, parameters: Sequence[np.ndarray]) -> None:
    if [tuple(np.shape(p)) for p in parameters] != model.shapes:
        raise ValueError("parameter shapes do not match the autoencoder")
    model.flat = torch.cat(
        [torch.as_tensor(np.asarray(p, np.float32)).reshape(-1) for p in parameters]
    )


def flatten(parameters: Sequence[np.ndarray]) -> torch.Tensor:
    """Weights (``get_parameters`` order) as one flat float32 vector."""
    return torch.cat([torch.as_tensor(np.asarray(p, np.float32)).reshape(-1) for p in parameters])


def unflatten(model: FlatAE, flat: torch.Tensor) -> NDArrays:
    """A flat vector as weights in ``get_parameters`` order (copies)."""
    return [t.detach().cpu().numpy().copy() for t in model.views(flat)]


def as_sequential(model: FlatAE) -> nn.Sequential:
    """The same network as ``nn.Linear`` layers (for checks and export)."""
    mods: list[nn.Module] = []
    last = len(model.layers) - 1
    for k, (i, o) in enumerate(model.layers):
        mods += [nn.Linear(i, o), nn.Sigmoid() if k == last else nn.ReLU()]
    seq = nn.Sequential(*mods)
    keys = list(seq.state_dict())
    seq.load_state_dict({k: v.clone() for k, v in zip(keys, model.views(model.flat), strict=True)})
    return seq


def train_ae(
    model: FlatAE,
    x: torch.Tensor,
    epochs: int,
    batch_size: int,
    lr: float,
    gen: torch.Generator,
    patience: int | None = None,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> list[float]:
    """Adam (fresh state) + MSE, minibatches reshuffled every epoch from ``gen``; early stop
    when the epoch loss has not improved for ``patience`` epochs (Keras EarlyStopping('loss'))."""
    b1, b2 = betas
    p = model.flat.clone().requires_grad_(True)
    m = torch.zeros_like(p)
    v = torch.zeros_like(p)
    step = 0
    losses: list[float] = []
    best, wait = np.inf, 0
    for _ in range(int(epochs)):
        total = 0.0
        for idx in batches(len(x), batch_size, True, gen):
            xb = x[idx]
            loss = F.mse_loss(model.forward(xb, p), xb)
            (g,) = torch.autograd.grad(loss, p)
            step += 1
            with torch.no_grad():
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (v.sqrt() / math.sqrt(1 - b2**step)).add_(eps)
                p.addcdiv_(m, denom, value=-lr / (1 - b1**step))
            total += loss.item() * len(idx)
        losses.append(total / max(len(x), 1))
        if patience is not None:
            if losses[-1] < best:
                best, wait = losses[-1], 0
            else:
                wait += 1
                if wait >= patience:
                    break
    model.flat = p.detach()
    return losses


@torch.no_grad()
def sample_errors(model: FlatAE, x: torch.Tensor, chunk: int = 8192) -> np.ndarray:
    """Per-sample reconstruction MSE (mean over features) of ``model`` on ``x``."""
    out = [
        ((model(x[i : i + chunk]) - x[i : i + chunk]) ** 2).mean(1) for i in range(0, len(x), chunk)
    ]
    return torch.cat(out).cpu().numpy().astype(np.float64) if out else np.zeros(0)


def generator(seed: int, *labels: object) -> torch.Generator:
    return shuffle_generator(derive_seed(seed, *labels))


# ------------------------------------------------------------------ many models at once
def _layer_views(model: FlatAE, flat: torch.Tensor, kernel: bool = False) -> list[torch.Tensor]:
    """(M, P) parameters → per-layer (M, o, i) weights and (M, o) biases (views); ``kernel``:
    the layout of :func:`_to_kernel`, weights stored transposed as (M, i, o)."""
    out, off = [], 0
    for shape, size in zip(model.shapes, model.sizes, strict=True):
        shp = shape[::-1] if kernel and len(shape) == 2 else shape
        out.append(flat[:, off : off + size].view(flat.shape[0], *shp))
        off += size
    return out


def _to_kernel(model: FlatAE, flat: torch.Tensor, back: bool = False) -> torch.Tensor:
    """Flat (M, P) weights with every weight matrix transposed (i × o), the layout the batched
    products read and whose gradients come out contiguous; ``back``: the inverse."""
    out = torch.empty_like(flat)
    src, dst = _layer_views(model, flat, back), _layer_views(model, out, not back)
    for a, b in zip(src, dst, strict=True):
        b.copy_(a.transpose(1, 2) if a.dim() == 3 else a)
    return out


def forward_many(
    model: FlatAE,
    x: torch.Tensor,
    flat: torch.Tensor | None,
    views: list | None = None,
) -> torch.Tensor:
    """M models on (M, B, d) inputs (or one (B, d) input for all): (M, B, d) outputs; the
    parameters as an (M, P) matrix, or as per-layer ``views`` in the :func:`_to_kernel` layout."""
    if views is None:
        views = [v.transpose(1, 2) if v.dim() == 3 else v for v in _layer_views(model, flat)]
    h = x if x.dim() == 3 else x.unsqueeze(0).expand(views[0].shape[0], *x.shape)
    last = len(model.layers) - 1
    for k in range(len(model.layers)):
        h = torch.baddbmm(views[2 * k + 1].unsqueeze(1), h, views[2 * k])
        h = torch.sigmoid(h) if k == last else F.relu(h)
    return h


def _adam_scales(
    st: torch.Tensor, b1: float, b2: float, lr: float, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-model (M, 1) factors of the Adam step for step counts ``st`` (float64)."""
    c1 = (1 - b1**st) / -lr
    return (c1 / torch.sqrt(1 - b2**st)).float(), (eps * c1).float()


def train_many(
    model: FlatAE,
    init: torch.Tensor,
    xs: Sequence[torch.Tensor],
    epochs: int | Sequence[int],
    batch_size: int,
    lr: float,
    gens: Sequence[torch.Generator],
    patience: int | None = None,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> tuple[torch.Tensor, list[list[float]]]:
    """:func:`train_ae` for M models at once: model m starts from ``init[m]`` and trains on
    ``xs[m]`` for ``epochs[m]`` epochs with minibatches from ``gens[m]`` and its own early stop.

    All models step in lockstep; a model with fewer minibatches in an epoch (a smaller cluster)
    or that has stopped sits the step out (no Adam step, no draw from its generator). Returns
    the (M, P) trained parameters and each model's per-epoch losses."""
    n_models = int(init.shape[0])
    if len(xs) != n_models or len(gens) != n_models:
        raise ValueError("train_many needs one data set and one generator per model")
    eps_m = np.asarray([int(epochs)] * n_models if isinstance(epochs, int) else epochs, int)
    b1, b2 = betas
    bs = int(batch_size)
    ns = np.asarray([len(x) for x in xs], dtype=np.int64)
    dev = init.device  # the models' device; minibatch permutations are drawn on the CPU
    x_all = torch.cat([x.reshape(len(x), -1).to(dev) for x in xs]) if n_models else init
    starts = np.concatenate([[0], np.cumsum(ns)[:-1]]).astype(np.int64)
    p_all = _to_kernel(model, init.detach())
    m_all, v_all = torch.zeros_like(p_all), torch.zeros_like(p_all)
    steps = np.zeros(n_models, dtype=np.int64)
    losses: list[list[float]] = [[] for _ in range(n_models)]
    best = np.full(n_models, np.inf)
    wait = np.zeros(n_models, dtype=np.int64)
    alive = (eps_m > 0) & (ns > 0)
    for epoch in range(int(eps_m.max(initial=0))):
        act = np.flatnonzero(alive & (eps_m > epoch))
        if len(act) == 0:
            break
        a_n = len(act)
        t_max = int(max(-(-ns[m] // bs) for m in act))
        idx = torch.zeros((a_n, t_max * bs), dtype=torch.long)
        mask = torch.zeros((a_n, t_max * bs))
        for a, m in enumerate(act):  # the permutation train_ae's batches() draws
            idx[a, : ns[m]] = torch.randperm(int(ns[m]), generator=gens[m]) + int(starts[m])
            mask[a, : ns[m]] = 1.0
        counts = mask.view(a_n, t_max, bs).sum(2)  # (A, T): rows of minibatch t (0: none)
        idx, mask = idx.view(a_n, t_max, bs).to(dev), mask.view(a_n, t_max, bs).to(dev)
        counts_d = counts.to(dev)
        act_t = torch.as_tensor(act, device=dev)
        pc = p_all[act_t]
        mc, vc = m_all[act_t], v_all[act_t]
        st = torch.as_tensor(steps[act], dtype=torch.float64, device=dev).unsqueeze(1)
        total = torch.zeros(a_n, dtype=torch.float64, device=dev)
        for t in range(t_max):
            has = counts[:, t] > 0
            full = bool(has.all())
            sub = None if full else torch.nonzero(has).squeeze(1).to(dev)
            rows = idx[:, t] if full else idx[sub, t]
            w = mask[:, t] if full else mask[sub, t]
            cnt = counts_d[:, t] if full else counts_d[sub, t]
            xb = x_all[rows]
            ps = pc if full else pc[sub]
            # per-layer leaves (views of ps): the gradient of a column slice of an (M, P)
            # matrix would be materialised as a zero-padded (M, P) tensor per layer
            leaves = [v.detach().requires_grad_(True) for v in _layer_views(model, ps, True)]
            per = ((forward_many(model, xb, None, leaves) - xb) ** 2).mean(2) * w
            loss_m = per.sum(1) / cnt
            grads = torch.autograd.grad(loss_m.sum(), leaves)
            g = torch.cat([gr.reshape(len(ps), -1) for gr in grads], 1)
            with torch.no_grad():
                # Adam: p −= lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + ε), per-model t, as
                # p += m / (√v·a + b) with a = (1−β1ᵗ)/(−lr·√(1−β2ᵗ)), b = ε(1−β1ᵗ)/(−lr)
                if full:
                    st += 1
                    a, b = _adam_scales(st, b1, b2, lr, eps)
                    mc.lerp_(g, 1 - b1)
                    vc.mul_(b2).addcmul_(g, g, value=1 - b2)
                    pc.addcdiv_(mc, vc.sqrt().mul_(a).add_(b))
                    total += (loss_m.detach() * cnt).double()
                else:
                    st[sub] += 1
                    a, b = _adam_scales(st[sub], b1, b2, lr, eps)
                    mm = mc[sub].lerp_(g, 1 - b1)
                    vv = vc[sub].mul_(b2).addcmul_(g, g, value=1 - b2)
                    pc[sub] = ps.addcdiv(mm, vv.sqrt().mul_(a).add_(b))
                    mc[sub], vc[sub] = mm, vv
                    total[sub] += (loss_m.detach() * cnt).double()
        with torch.no_grad():
            p_all[act_t], m_all[act_t], v_all[act_t] = pc, mc, vc
        steps[act] = st.squeeze(1).cpu().numpy().astype(np.int64)
        total_np = total.cpu().numpy()
        for a, m in enumerate(act):
            losses[m].append(float(total_np[a]) / float(ns[m]))
            if patience is not None:
                if losses[m][-1] < best[m]:
                    best[m], wait[m] = losses[m][-1], 0
                else:
                    wait[m] += 1
                    if wait[m] >= patience:
                        alive[m] = False
    return _to_kernel(model, p_all, back=True), losses


@torch.no_grad()
def errors_many(
    model: FlatAE, flat: torch.Tensor, x: torch.Tensor, chunk: int = 2**24, device: str = "cpu"
) -> np.ndarray:
    """(n, M) per-sample reconstruction MSE of M models (rows of ``flat``) on ``x`` (computed on
    ``device``); models and samples in chunks of at most ``chunk`` output values."""
    flat, x = flat.to(device), x.to(device)
    n, d = x.shape
    m_models = flat.shape[0]
    out = np.zeros((n, m_models))
    per = max(1, chunk // max(n * d, 1))
    rows = max(1, chunk // (d * min(per, m_models)))
    for a in range(0, m_models, per):
        f = flat[a : a + per]
        for i in range(0, n, rows):
            xb = x[i : i + rows]
            out[i : i + rows, a : a + per] = (
                ((forward_many(model, xb, f) - xb) ** 2).mean(2).T.double().cpu().numpy()
            )
    return out
