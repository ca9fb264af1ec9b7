"""Reconstruction attack by distribution matching (seed 001 §8.3, thesis §3.3.4.2.3, §4.4.3).

The server holds ``Y = X Q``; the attacker holds other data ``X'`` of the same kind (50/50 split of
the pooled cohorts, each side preprocessed apart). It fits ``f = argmin MMD²(X', f(Y))`` (unbiased
estimator, Gaussian kernel) over a linear deprojection ``Y R`` (random or pseudo-inverse init) or
an MLP decoder, then the error is ``‖f(y) − x‖ / ‖x‖`` per server sample.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from .. import torch_optim
from ..errors import ConfigError
from ..seeds import derive_seed, seed_torch
from .nets import LinearDecoder, MLPDecoder
from .orthomap import OrthogonalMap

log = logging.getLogger(__name__)


def mmd2_unbiased(x: torch.Tensor, y: torch.Tensor, sigma: float) -> torch.Tensor:
    """Unbiased MMD² with the Gaussian kernel ``exp(−‖x−y‖²/(2σ²))`` (thesis §3.3.4.2.3)."""
    m, n = x.shape[0], y.shape[0]
    g = -0.5 / sigma**2
    kxx = torch.exp(g * torch.cdist(x, x).pow(2))
    kyy = torch.exp(g * torch.cdist(y, y).pow(2))
    kxy = torch.exp(g * torch.cdist(x, y).pow(2))
    return (
        (kxx.sum() - kxx.diagonal().sum()) / (m * (m - 1))
        + (kyy.sum() - kyy.diagonal().sum()) / (n * (n - 1))
        - 2.0 * kxy.mean()
    )


def median_distance(x: np.ndarray) -> float:
    """Median pairwise Euclidean distance (the σ heuristic of §3.3.4.2.4)."""
    from scipy.spatial.distance import pdist

    return float(np.median(pdist(x)))


def relative_error(x_hat: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per-sample relative reconstruction error ``‖x̂ − x‖ / ‖x‖``."""
    return np.linalg.norm(x_hat - x, axis=1) / np.linalg.norm(x, axis=1)


def pinv_reconstruction(y: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The least-squares deprojection ``Y Q⁺`` (exact when Q has orthonormal rows, k ≥ d)."""
    if isinstance(q, OrthogonalMap):  # pinv of an orthogonal map is its transpose
        return q.T.apply(y)
    return y @ np.linalg.pinv(q)


@dataclass
class DecoderSpec:
    decoder: str = "linear"  # linear | mlp
    init: str = "random"  # random | pinv (linear only)
    optimizer: str = "adam"  # adam | sgd
    lr: float = 1e-3
    epochs: int = 100
    batch_size: int = 256
    d_nn: int = 4096
    sigma_factors: tuple[float, ...] = (1.0,)
    device: str = "cpu"


def _fit(
    y: torch.Tensor, xa: torch.Tensor, q: np.ndarray, spec: DecoderSpec, sigma: float, seed: int
) -> torch.nn.Module:
    seed_torch(seed, "decoder-init")
    k, d = y.shape[1], xa.shape[1]
    if spec.decoder == "linear":
        if spec.init == "pinv" and isinstance(q, OrthogonalMap):
            raise ValueError("pinv init needs a dense Q: use it with Gaussian projections")
        qt = torch.as_tensor(q, dtype=torch.float32) if spec.init == "pinv" else None
        f = LinearDecoder(k, d, spec.init, qt)
    elif spec.decoder == "mlp":
        f = MLPDecoder(k, d, spec.d_nn)
    else:
        raise ValueError(f"unknown decoder {spec.decoder!r}: use linear or mlp")
    f = f.to(y.device)
    opt_cls = torch_optim.Adam if spec.optimizer == "adam" else torch_optim.SGD  # no _dynamo
    opt = opt_cls(f.parameters(), lr=spec.lr)
    gen = torch.Generator().manual_seed(derive_seed(seed, "decoder-batches"))
    bs = spec.batch_size
    for _ in range(spec.epochs):
        py = torch.randperm(len(y), generator=gen).to(y.device)
        px = torch.randperm(len(xa), generator=gen).to(y.device)
        for start in range(0, len(y), bs):
            yb = y[py[start : start + bs]]
            xb = xa[px[start : start + bs]] if len(xa) > bs else xa
            if len(yb) < 2:
                continue
            opt.zero_grad()
            mmd2_unbiased(f(yb), xb, sigma).backward()
            opt.step()
    return f


def reconstruct(
    y: np.ndarray, x_attacker: np.ndarray, q: np.ndarray, spec: DecoderSpec, seed: int
) -> tuple[np.ndarray, dict]:
    """Train a decoder by MMD matching and return ``f(Y)`` and the chosen σ.

    With several ``sigma_factors`` (× median distance of the attacker's data) the attacker picks
    the one whose reconstructions have the lowest MMD² to its data at the median σ — a criterion it
    can compute (it never sees the server's X).
    """
    dev = torch.device(spec.device)
    yt = torch.as_tensor(y, dtype=torch.float32, device=dev)
    xt = torch.as_tensor(x_attacker, dtype=torch.float32, device=dev)
    med = median_distance(x_attacker)
    best = None
    for factor in spec.sigma_factors:
        f = _fit(yt, xt, q, spec, factor * med, derive_seed(seed, factor))
        with torch.no_grad():
            xh = f(yt)
            crit = float(mmd2_unbiased(xh, xt, med))
        if best is None or crit < best[0]:
            best = (crit, xh.cpu().numpy().astype(float), factor)
    return best[1], {"sigma_factor": best[2], "sigma": best[2] * med, "mmd2_median_sigma": best[0]}


# --- experiments of thesis §4.4.3 (Figs 4.17–4.19 and the combined attack) ----------------------


def half_split(n: int, seed: int, run: int) -> tuple[np.ndarray, np.ndarray]:
    """The 50/50 random split attacker / server of the pooled cohorts."""
    from ..seeds import rng

    perm = rng(seed, "recon-split", run).permutation(n)
    return perm[: n // 2], perm[n // 2 :]


def _errors_rows(err: np.ndarray, samples: np.ndarray, **meta: object) -> list[dict]:
    pairs = zip(samples, err, strict=True)
    return [{**meta, "sample": str(s), "rel_error": float(e)} for s, e in pairs]


def run_reconstruction(
    counts,
    obs,
    cfg: dict,
    seed: int,
    device: str = "cpu",
    runs: Iterable[int] | None = None,
    pinv: bool | Iterable[str] = True,
) -> dict:
    """All §4.4.3 experiments. Returns DataFrames ``errors``, ``pinv``, ``combined``, ``tests``.

    ``cfg`` = the ``attacks.reconstruction`` config section (see config/schema.yaml). ``runs``:
    the split indices to compute (default all ``n_runs``), ``pinv``: whether to compute the
    Fig 4.18 (left) pseudo-inverse table, or for which cohorts — the fan-out's units (issue 14);
    every seed derives from the run index or the cohort, so rows do not depend on the grouping.
    """
    import pandas as pd

    from ..hac.projection import projection_matrix
    from .data import no_zero_genes, preprocess, sex_labels, split_preprocess
    from .property_inference import TrainSpec, _accuracy

    def spec_for(decoder: str, init: str) -> DecoderSpec:
        d = cfg["decoders"][decoder]
        return DecoderSpec(
            decoder=decoder,
            init=init,
            optimizer=d.get("optimizer", "adam"),
            lr=float(d["lr"]),
            epochs=int(d["epochs"]),
            batch_size=int(cfg["batch_size"]),
            d_nn=int(d.get("d_nn", 0) or 0),
            sigma_factors=tuple(cfg["sigma_factors"]),
            device=device,
        )

    if int(cfg["combined"]["k"]) not in [int(k) for k in cfg["fig4_19_k"]]:
        raise ConfigError(
            f"combined.k = {cfg['combined']['k']} is not among fig4_19_k {cfg['fig4_19_k']}",
            where="config attacks.reconstruction.combined.k",
            fix="the combined attack reuses a Fig 4.19 VST reconstruction: pick one of fig4_19_k",
        )
    run_ids = list(range(int(cfg["n_runs"])) if runs is None else runs)
    errors: list[dict] = []
    combined: list[dict] = []
    samples = counts.index.to_numpy()

    # Fig 4.17 and Fig 4.18 (right): size factors, genes with no zero count.
    for run in run_ids:
        att, srv = half_split(len(counts), seed, run)
        xa, xs = split_preprocess(
            counts, att, srv, "size_factors", "no_zero", cfg["max_genes_no_zero"]
        )
        xa, xs = xa.to_numpy(float), xs.to_numpy(float)
        d = xa.shape[1]
        for proj in cfg["fig4_17_projections"]:
            kind = proj["kind"]
            k = d if kind == "orthogonal" else int(proj["k"])
            q_seed = derive_seed(seed, "recon-q", run)
            # orthogonal on all genes: the exactly orthogonal fast map, no dense d x d matrix
            q = (
                OrthogonalMap(d, q_seed)
                if kind == "orthogonal"
                else projection_matrix(d, k, kind, q_seed)
            )
            y = xs @ q
            for decoder in ("linear", "mlp"):
                xh, info = reconstruct(y, xa, q, spec_for(decoder, "random"), seed + run)
                errors += _errors_rows(
                    relative_error(xh, xs),
                    samples[srv],
                    experiment="fig4_17",
                    run=run,
                    preprocessing="size_factors",
                    genes="no_zero",
                    n_genes=d,
                    projection=kind,
                    k=k,
                    decoder=decoder,
                    init="random",
                    sigma_factor=info["sigma_factor"],
                )
                log.info("4.17 run %d %s k=%d %s done", run, kind, k, decoder)
        for k in cfg["fig4_18_k"]:
            q = projection_matrix(d, int(k), "gaussian", derive_seed(seed, "recon-q", run))
            y = xs @ q
            row = dict(
                experiment="fig4_18",
                run=run,
                preprocessing="size_factors",
                genes="no_zero",
                n_genes=d,
                projection="gaussian",
                k=int(k),
            )
            for init in ("random", "pinv"):
                xh, info = reconstruct(y, xa, q, spec_for("linear", init), seed + run)
                errors += _errors_rows(
                    relative_error(xh, xs),
                    samples[srv],
                    decoder="linear",
                    init=init,
                    sigma_factor=info["sigma_factor"],
                    **row,
                )
            errors += _errors_rows(
                relative_error(pinv_reconstruction(y, q), xs),
                samples[srv],
                decoder="pinv",
                init="untrained",
                sigma_factor=np.nan,
                **row,
            )

    # Fig 4.18 (left): pseudo-inverse error per cohort, averaged over n_projections matrices.
    pinv_rows = []
    pinv_of = obs.groupby("cohort").indices
    if pinv is not True:
        keep = set(pinv or [])
        pinv_of = {c: i for c, i in pinv_of.items() if c in keep}
    for cohort, idx in pinv_of.items():
        c = counts.iloc[idx]
        x = preprocess(c, "size_factors")[no_zero_genes(c)]
        from .data import most_variable

        x = x[most_variable(x, cfg["max_genes_no_zero"])].to_numpy(float)
        for k in cfg["fig4_18_pinv_k"]:
            for p in range(int(cfg["n_projections"])):
                q = projection_matrix(
                    x.shape[1], int(k), "gaussian", derive_seed(seed, "pinv", cohort, p)
                )
                e = relative_error(pinv_reconstruction(x @ q, q), x)
                pinv_rows.append(
                    {
                        "cohort": cohort,
                        "k": int(k),
                        "projection_run": p,
                        "n_genes": x.shape[1],
                        "mean_rel_error": float(e.mean()),
                    }
                )

    # Fig 4.19: all genes, size factors vs VST; combined attack on VST reconstructions.
    sex = sex_labels(obs).to_numpy()
    cspec = cfg["combined"]
    tspec = TrainSpec(
        d_nn=int(cspec["d_nn"]),
        d_nn_small=int(cspec["d_nn"]),
        lrs=tuple(cspec["lrs"]),
        epochs=int(cspec["epochs"]),
        batch_size=int(cspec["batch_size"]),
        device=device,
    )
    for run in run_ids:
        att, srv = half_split(len(counts), seed, run)
        for prep in ("size_factors", "vst"):
            xa_df, xs_df = split_preprocess(counts, att, srv, prep, "all", cfg["max_genes_all"])
            xa, xs = xa_df.to_numpy(float), xs_df.to_numpy(float)
            d = xa.shape[1]
            for k in cfg["fig4_19_k"]:
                q = projection_matrix(d, int(k), "gaussian", derive_seed(seed, "recon-q", run))
                xh, info = reconstruct(xs @ q, xa, q, spec_for("linear", "pinv"), seed + run)
                errors += _errors_rows(
                    relative_error(xh, xs),
                    samples[srv],
                    experiment="fig4_19",
                    run=run,
                    preprocessing=prep,
                    genes="all",
                    n_genes=d,
                    projection="gaussian",
                    k=int(k),
                    decoder="linear",
                    init="pinv",
                    sigma_factor=info["sigma_factor"],
                )
                if prep == "vst" and int(k) == int(cspec["k"]):
                    combined.append(
                        _combined(
                            xa,
                            xs,
                            xh,
                            sex[att],
                            sex[srv],
                            tspec,
                            derive_seed(seed, "combined", run),
                            _accuracy,
                        )
                    )
                    combined[-1].update(run=run, k=int(k), n_genes=d)

    errors_df = pd.DataFrame(errors)
    return {
        "errors": errors_df,
        "pinv": pd.DataFrame(pinv_rows),
        "combined": pd.DataFrame(combined),
        "tests": reconstruction_tests(errors_df),
    }


def reconstruction_tests(errors):
    """Fig 4.19's test per k: mean error per run, VST vs size factors (paired and Welch)."""
    import pandas as pd

    from .stats import compare

    tests = []
    if len(errors) == 0:
        return pd.DataFrame(tests)
    f19 = errors[errors.experiment == "fig4_19"]
    for k, g in f19.groupby("k"):
        m = g.groupby(["preprocessing", "run"]).rel_error.mean()
        tests.append(
            {
                "comparison": f"gaussian({k}) mean error: vst vs size_factors",
                **compare(m["vst"].values, m["size_factors"].values),
            }
        )
    return pd.DataFrame(tests)


def _combined(xa, xs, xh, ya, ys, tspec, seed, accuracy) -> dict:
    """Combined attack: sex classifier trained on the attacker's data (80/20 train/validation),
    applied to the server's originals and to their reconstructions."""
    from ..seeds import rng
    from .property_inference import train_classifier

    ok_a, ok_s = ~np.isnan(ya), ~np.isnan(ys)
    xa, ya = xa[ok_a], ya[ok_a]
    perm = rng(seed, "combined-split").permutation(len(xa))
    cut = int(round(0.8 * len(xa)))
    tr, va = perm[:cut], perm[cut:]
    model = train_classifier(xa[tr], ya[tr], xa[va], ya[va], spec=tspec, seed=seed)
    out = {}
    for name, x in (("original", xs[ok_s]), ("reconstruction", xh[ok_s])):
        xt = torch.as_tensor(x, dtype=torch.float32, device=tspec.device)
        yt = torch.as_tensor(ys[ok_s], dtype=torch.float32, device=tspec.device)
        out[f"accuracy_{name}"] = accuracy(model, xt, yt)
        model.eval()
        with torch.no_grad():
            pred = (model(xt) > 0).float().cpu().numpy()
        out[f"majority_share_{name}"] = float(max(pred.mean(), 1 - pred.mean()))
    out["label_majority_share"] = float(max(ys[ok_s].mean(), 1 - ys[ok_s].mean()))
    return out
