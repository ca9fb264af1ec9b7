"""Per-feature likelihoods of the heterogeneous decoders (seed 003 §5.1 HI-VAE, §5.4, §8).

A :class:`FeatureSpec` lists each column's family — ``bernoulli`` (one logit; values in [0, 1],
pixel intensities included), ``gaussian`` (mean and log-variance) or ``categorical`` (K logits;
the column holds codes 0…K−1). A decoder outputs ``spec.n_params`` numbers per sample;
:func:`loglik` turns them into per-entry log-likelihoods, vectorised per family, and a mask
(1 = observed) keeps only the observed entries: the likelihood of missing values is never
guessed (D6.2 §9.3, Han et al.). The encoder input is :func:`one_hot`'s: bernoulli and gaussian
columns as they are, categorical columns one-hot (a missing entry's fill stays as given).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from fedclust.errors import ConfigError

FAMILIES = ("bernoulli", "gaussian", "categorical")
LOGVAR_MIN, LOGVAR_MAX = -7.0, 7.0
LOG2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class FeatureSpec:
    """Families (and category counts) of the columns, in column order."""

    kinds: tuple[str, ...]
    n_cats: tuple[int, ...] = ()
    names: tuple[str, ...] = ()
    _layout: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        bad = sorted(set(self.kinds) - set(FAMILIES))
        if bad:
            raise ConfigError(
                f"unknown feature families {bad}", where="FeatureSpec", fix=f"use {FAMILIES}"
            )
        cats = tuple(self.n_cats) or tuple(0 for _ in self.kinds)
        object.__setattr__(self, "n_cats", cats)
        if len(cats) != len(self.kinds):
            raise ValueError("n_cats must have one entry per column")
        for k, c in zip(self.kinds, cats, strict=True):
            if k == "categorical" and c < 2:
                raise ConfigError(
                    "a categorical column needs at least 2 categories", where="FeatureSpec"
                )
        width = {"bernoulli": 1, "gaussian": 2}
        out = 0
        b_col, b_out, g_col, g_mu, g_lv, c_col, c_idx = [], [], [], [], [], [], []
        in_cols, in_width = [], 0
        for j, (k, c) in enumerate(zip(self.kinds, cats, strict=True)):
            if k == "bernoulli":
                b_col.append(j), b_out.append(out)
            elif k == "gaussian":
                g_col.append(j), g_mu.append(out), g_lv.append(out + 1)
            else:
                c_col.append(j), c_idx.append(list(range(out, out + c)))
            out += width.get(k, c)
            in_cols.append(in_width)
            in_width += c if k == "categorical" else 1
        kmax = max((len(i) for i in c_idx), default=0)
        pad = [i + [-1] * (kmax - len(i)) for i in c_idx]
        self._layout.update(
            n_params=out,
            n_inputs=in_width,
            b_col=b_col,
            b_out=b_out,
            g_col=g_col,
            g_mu=g_mu,
            g_lv=g_lv,
            c_col=c_col,
            c_idx=pad,
            kmax=kmax,
        )

    @property
    def n_features(self) -> int:
        return len(self.kinds)

    @property
    def n_params(self) -> int:
        """Decoder outputs per sample."""
        return int(self._layout["n_params"])

    @property
    def n_inputs(self) -> int:
        """Encoder inputs per sample (categorical columns one-hot)."""
        return int(self._layout["n_inputs"])

    def layout(self, key: str):
        return self._layout[key]

    def subset(self, cols: Sequence[int]) -> FeatureSpec:
        cols = list(cols)
        return FeatureSpec(
            tuple(self.kinds[c] for c in cols),
            tuple(self.n_cats[c] for c in cols),
            tuple(self.names[c] for c in cols) if self.names else (),
        )

    @staticmethod
    def all(kind: str, p: int, names: Sequence[str] = ()) -> FeatureSpec:
        return FeatureSpec(tuple([kind] * p), (), tuple(names))


def infer_spec(x: np.ndarray, names: Sequence[str], categorical: Sequence[str] = ()) -> FeatureSpec:
    """Families from the data: listed ``categorical`` columns (codes 0…K−1, K = max + 1),
    columns whose observed values are ⊂ {0, 1} bernoulli, the rest gaussian."""
    kinds, cats = [], []
    for j, name in enumerate(names):
        col = x[:, j]
        obs = col[~np.isnan(col)]
        if name in categorical:
            if obs.size and (np.any(obs < 0) or np.any(obs != np.round(obs))):
                raise ConfigError(
                    f"categorical column {name!r} must hold codes 0, 1, 2, ...",
                    where="generative categorical columns",
                )
            kinds.append("categorical")
            cats.append(max(int(obs.max()) + 1 if obs.size else 2, 2))
        elif obs.size and set(np.unique(obs)) <= {0.0, 1.0}:
            kinds.append("bernoulli"), cats.append(0)
        else:
            kinds.append("gaussian"), cats.append(0)
    return FeatureSpec(tuple(kinds), tuple(cats), tuple(names))


def _t(a, device=None) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.long, device=device)


def loglik(
    params: torch.Tensor, x: torch.Tensor, mask: torch.Tensor, spec: FeatureSpec
) -> torch.Tensor:
    """Per-entry log-likelihood (n × p), zero where ``mask`` is 0 (missing entries)."""
    L = spec._layout
    dev = params.device
    out = torch.zeros_like(x)
    if L["b_col"]:
        bc = _t(L["b_col"], dev)
        logit = params[:, _t(L["b_out"], dev)]
        xb = x[:, bc]
        out[:, bc] = -F.binary_cross_entropy_with_logits(logit, xb, reduction="none")
    if L["g_col"]:
        gc = _t(L["g_col"], dev)
        mu = params[:, _t(L["g_mu"], dev)]
        lv = params[:, _t(L["g_lv"], dev)].clamp(LOGVAR_MIN, LOGVAR_MAX)
        out[:, gc] = -0.5 * (LOG2PI + lv + (x[:, gc] - mu) ** 2 * torch.exp(-lv))
    if L["c_col"]:
        cc = _t(L["c_col"], dev)
        idx = _t(L["c_idx"], dev)  # (n_cat_features, kmax), −1 = padding
        logits = params[:, idx.clamp_min(0)]  # (n, n_cat_features, kmax)
        logits = logits.masked_fill(idx[None] < 0, float("-inf"))
        logp = torch.log_softmax(logits, dim=-1)
        code = x[:, cc].clamp_min(0).round().long().unsqueeze(-1)
        code = torch.minimum(code, torch.as_tensor(L["kmax"] - 1, device=dev))
        out[:, cc] = logp.gather(-1, code).squeeze(-1)
    return out * mask


def expected(params: torch.Tensor, spec: FeatureSpec) -> torch.Tensor:
    """The decoder's point estimate: mean (bernoulli p, gaussian μ), mode (categorical)."""
    L = spec._layout
    dev = params.device
    out = torch.zeros(params.shape[0], spec.n_features, dtype=params.dtype, device=dev)
    if L["b_col"]:
        out[:, _t(L["b_col"], dev)] = torch.sigmoid(params[:, _t(L["b_out"], dev)])
    if L["g_col"]:
        out[:, _t(L["g_col"], dev)] = params[:, _t(L["g_mu"], dev)]
    if L["c_col"]:
        idx = _t(L["c_idx"], dev)
        logits = params[:, idx.clamp_min(0)].masked_fill(idx[None] < 0, float("-inf"))
        out[:, _t(L["c_col"], dev)] = logits.argmax(-1).to(params.dtype)
    return out


def sample(params: torch.Tensor, spec: FeatureSpec, generator: torch.Generator) -> torch.Tensor:
    """One draw per entry from the decoder's distributions (bernoulli columns: 0/1)."""
    L = spec._layout
    n = params.shape[0]
    out = torch.zeros(n, spec.n_features, dtype=params.dtype)
    if L["b_col"]:
        p = torch.sigmoid(params[:, _t(L["b_out"])])
        out[:, _t(L["b_col"])] = (torch.rand(p.shape, generator=generator) < p).to(params.dtype)
    if L["g_col"]:
        mu = params[:, _t(L["g_mu"])]
        sd = torch.exp(0.5 * params[:, _t(L["g_lv"])].clamp(LOGVAR_MIN, LOGVAR_MAX))
        out[:, _t(L["g_col"])] = mu + sd * torch.randn(mu.shape, generator=generator)
    if L["c_col"]:
        idx = _t(L["c_idx"])
        logits = params[:, idx.clamp_min(0)].masked_fill(idx[None] < 0, float("-inf"))
        g = -torch.log(-torch.log(torch.rand(logits.shape, generator=generator).clamp_min(1e-12)))
        out[:, _t(L["c_col"])] = (logits + g).argmax(-1).to(params.dtype)
    return out


def one_hot(x: torch.Tensor, spec: FeatureSpec) -> torch.Tensor:
    """Encoder input: categorical columns one-hot (codes rounded and clipped), others as given."""
    if not spec._layout["c_col"]:
        return x
    parts = []
    for j, (k, c) in enumerate(zip(spec.kinds, spec.n_cats, strict=True)):
        col = x[:, j]
        if k == "categorical":
            code = col.round().long().clamp(0, c - 1)
            parts.append(F.one_hot(code, c).to(x.dtype))
        else:
            parts.append(col[:, None])
    return torch.cat(parts, dim=1)


def entry_error(pred: np.ndarray, x: np.ndarray, spec: FeatureSpec) -> np.ndarray:
    """Per-entry error of a point estimate: |pred − x| (bernoulli, gaussian in the data's
    units), 0/1 misclassification (categorical)."""
    err = np.abs(pred - x)
    cat = np.array([k == "categorical" for k in spec.kinds])
    if cat.any():
        err[:, cat] = (np.round(pred[:, cat]) != np.round(x[:, cat])).astype(float)
    return err
