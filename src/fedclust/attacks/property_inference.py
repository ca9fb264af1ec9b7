"""Property inference: predict sex from projected data (seed 001 §8.2, thesis §4.4.2).

Attacker: train/validation rows (60/20), preprocessed on their own; centers: test rows (20),
preprocessed apart and projected with the true shared ``Q``. Two attackers:

* **invariant** — trained on its own data, each batch projected with a *fresh* matrix of the
  projection family (it never sees Q); validation projected with a fresh matrix too;
* **fixed** — trained on its data projected with the true Q (leak / collusion).

``none`` is the same classifier without projection. Model selection: best validation accuracy over
epochs and the learning-rate grid. Test accuracy = on the centers' rows projected with Q.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .. import torch_optim
from ..hac.projection import projection_matrix
from ..seeds import derive_seed, rng, seed_torch
from .data import sex_labels, split_preprocess
from .nets import SexClassifier, random_projection
from .orthomap import OrthogonalMap, fresh_orthogonal, project
from .stats import compare

log = logging.getLogger(__name__)


@dataclass
class TrainSpec:
    d_nn: int = 2048
    d_nn_small: int = 1024  # used when the input dimension is ≤ small_input (Gaussian k = 100)
    small_input: int = 100
    lrs: tuple[float, ...] = (1e-4,)
    epochs: int = 50
    batch_size: int = 64
    device: str = "cpu"


def _accuracy(model: SexClassifier, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return float(((model(x) > 0).float() == y).float().mean())


def train_classifier(
    x_tr: np.ndarray,
    y_tr: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    *,
    spec: TrainSpec,
    seed: int,
    mode: str = "none",
    kind: str | None = None,
    k: int | None = None,
    q: np.ndarray | None = None,
) -> SexClassifier:
    """Train the sex classifier; ``mode`` none / fixed (uses ``q``) / invariant (fresh matrices).

    Returns the model with the best validation accuracy (over lrs × epochs).
    """
    dev = torch.device(spec.device)
    xt = torch.as_tensor(x_tr, dtype=torch.float32, device=dev)
    yt = torch.as_tensor(y_tr, dtype=torch.float32, device=dev)
    xv = torch.as_tensor(x_val, dtype=torch.float32, device=dev)
    yv = torch.as_tensor(y_val, dtype=torch.float32, device=dev)
    d = xt.shape[1]
    gen = torch.Generator().manual_seed(derive_seed(seed, "pi-fresh-q"))
    if mode == "fixed":
        xt = torch.as_tensor(project(x_tr, q), dtype=torch.float32, device=dev)
        xv = torch.as_tensor(project(x_val, q), dtype=torch.float32, device=dev)
    elif mode == "invariant":
        xv = _fresh(xv, d, k, kind, gen)
    d_in = xt.shape[1] if mode != "invariant" else (k if kind == "gaussian" else max(d, k))
    d_nn = spec.d_nn_small if d_in <= spec.small_input else spec.d_nn
    best_model, best_state, best_acc = None, None, -1.0
    for lr in spec.lrs:
        seed_torch(seed, "pi-init", lr)
        model = SexClassifier(d_in, d_nn).to(dev)
        opt = torch_optim.Adam(model.parameters(), lr=lr)  # torch.optim's numbers, no _dynamo
        loss_fn = torch.nn.BCEWithLogitsLoss()
        order_gen = torch.Generator().manual_seed(derive_seed(seed, "pi-order", lr))
        for _epoch in range(spec.epochs):
            model.train()
            perm = torch.randperm(len(xt), generator=order_gen).to(dev)
            for start in range(0, len(xt), spec.batch_size):
                idx = perm[start : start + spec.batch_size]
                if len(idx) < 2:  # BatchNorm needs two rows
                    continue
                xb = xt[idx]
                if mode == "invariant":
                    xb = _fresh(xb, d, k, kind, gen)
                opt.zero_grad()
                loss_fn(model(xb), yt[idx]).backward()
                opt.step()
            acc = _accuracy(model, xv, yv)
            if acc > best_acc:
                best_acc, best_model = acc, model
                best_state = {n: p.detach().clone() for n, p in model.state_dict().items()}
    best_model.load_state_dict(best_state)
    return best_model


def _projection(d: int, k: int, kind: str, seed: int) -> np.ndarray | OrthogonalMap:
    """The center's Q: Gaussian d × k, or an exactly orthogonal d × d map never formed densely."""
    if kind == "orthogonal":
        return OrthogonalMap(d, seed)
    return projection_matrix(d, k, kind, seed)


def _fresh(x: torch.Tensor, d: int, k: int, kind: str, gen: torch.Generator) -> torch.Tensor:
    """``x`` through a fresh matrix of the family (invariant training): no d × d orthogonal."""
    if kind == "orthogonal":
        return fresh_orthogonal(x, gen)
    return x @ random_projection(d, k, kind, gen).to(x.device)


def split_60_20_20(n: int, seed: int, run: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    perm = rng(seed, "pi-split", run).permutation(n)
    a, b = int(round(0.6 * n)), int(round(0.8 * n))
    return perm[:a], perm[a:b], perm[b:]


def run_property_inference(
    counts: pd.DataFrame,
    obs: pd.DataFrame,
    *,
    conditions: list[dict],
    n_runs: int,
    spec: TrainSpec,
    seed: int,
    preprocessing: str = "size_factors",
    genes: str = "no_zero",
    max_genes: int | None = None,
    runs: Iterable[int] | None = None,
    release: Callable[[np.ndarray, int], np.ndarray] | None = None,
) -> pd.DataFrame:
    """Test accuracy per run × condition × classifier (thesis Fig 4.16).

    ``conditions``: dicts ``{"kind": "none"|"orthogonal"|"gaussian", "k": int|None}``
    (orthogonal: k = d, square). ``runs``: the run indices to compute (default all ``n_runs``;
    a block of the fan-out, issue 14): every seed derives from the run index and the condition,
    so a run's rows do not depend on which other runs or conditions share the call.
    ``release``: what the centres release instead of their projected rows, ``release(xQ, run)``
    (e.g. clipped + Gaussian noise, :mod:`fedclust.privacy_utility.inference`); None = ``xQ``.
    """
    y_all = sex_labels(obs)
    ok = y_all.notna().to_numpy()
    counts, y_all = counts.iloc[ok], y_all.to_numpy()[ok]
    rows = []
    for run in range(n_runs) if runs is None else runs:
        tr, va, te = split_60_20_20(len(counts), seed, run)
        att = np.concatenate([tr, va])
        xa, xc = split_preprocess(counts, att, te, preprocessing, genes, max_genes)
        xa, xc = xa.to_numpy(float), xc.to_numpy(float)
        x_tr, x_val = xa[: len(tr)], xa[len(tr) :]
        y_tr, y_val, y_te = y_all[tr], y_all[va], y_all[te]
        d = xa.shape[1]
        for cond in conditions:
            kind, k = cond["kind"], cond.get("k")
            if kind == "none":
                modes, q = ["none"], None
            else:
                k = d if kind == "orthogonal" else int(k)
                q = _projection(d, k, kind, derive_seed(seed, "pi-q", run))
                modes = ["invariant", "fixed"]
            for mode in modes:
                s = derive_seed(seed, "pi", run, kind, k, mode)
                model = train_classifier(
                    x_tr, y_tr, x_val, y_val, spec=spec, seed=s, mode=mode, kind=kind, k=k, q=q
                )
                x_te = xc if q is None else project(xc, q)
                if release is not None:
                    x_te = release(x_te, run)
                xt = torch.as_tensor(x_te, dtype=torch.float32, device=spec.device)
                yt = torch.as_tensor(y_te, dtype=torch.float32, device=spec.device)
                acc = _accuracy(model, xt, yt)
                rows.append(
                    {
                        "run": run,
                        "projection": kind,
                        "k": k if kind != "none" else d,
                        "classifier": mode,
                        "condition": condition_name(kind, k),
                        "n_genes": d,
                        "n_train": len(tr),
                        "n_test": len(te),
                        "majority_share_test": max(y_te.mean(), 1 - y_te.mean()),
                        "test_accuracy": acc,
                    }
                )
                log.info("run %d %s %s k=%s: test accuracy %.3f", run, kind, mode, k, acc)
    return pd.DataFrame(rows)


def condition_name(kind: str, k: int | None) -> str:
    return {"none": "none", "orthogonal": "orthogonal"}.get(kind, f"gaussian({k})")


def property_inference_tests(acc: pd.DataFrame) -> pd.DataFrame:
    """The §4.4.2 comparisons: none vs each invariant; fixed across k; orthogonal fixed vs none;
    fixed vs invariant per projection (paired over runs, and Welch)."""
    pivot = acc.pivot_table(
        index="run", columns=["condition", "classifier"], values="test_accuracy"
    )
    cols = set(pivot.columns)
    tests = []

    def add(name: str, a: tuple, b: tuple) -> None:
        if a in cols and b in cols:
            tests.append({"comparison": name, **compare(pivot[a].values, pivot[b].values)})

    none = ("none", "none")
    conds = [c for c in dict.fromkeys(acc["condition"]) if c != "none"]
    for c in conds:
        add(f"none vs {c} invariant", none, (c, "invariant"))
    gauss = [c for c in conds if c.startswith("gaussian")]
    for i, a in enumerate(gauss):
        for b in gauss[i + 1 :]:
            add(f"{a} fixed vs {b} fixed", (a, "fixed"), (b, "fixed"))
    add("none vs orthogonal fixed", none, ("orthogonal", "fixed"))
    for c in conds:
        add(f"{c}: fixed vs invariant", (c, "fixed"), (c, "invariant"))
    return pd.DataFrame(tests)
