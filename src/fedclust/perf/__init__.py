"""Performance of the federated HAC methods against their pooled scipy references (issue 15).

:func:`hac_benchmark` times every federated HAC method (gradual and simultaneous sharing, genewise,
random projection, orthogonal perturbation) and its pooled reference on the same simulated
cohort in one process, and reads the floats each center sends from the method's ledger.
Called only through the public functions of :mod:`fedclust.hac`.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from ..federation import Ledger
from ..hac.boundary import SYNTHETIC
from ..hac.federated import (
    perturbation_clustering,
    projection_center_costs,
    projection_clustering,
)
from ..hac.genewise import genewise_clustering
from ..hac.gradual import gradual_sharing
from ..hac.projection import project_centers
from ..hac.simultaneous import simultaneous_sharing
from ..hac.toy import cohort_like

METHODS = ("gradual", "simultaneous", "genewise", "projection", "perturbation")


def machine() -> dict:
    """Processor, CPU count and the BLAS/OpenMP thread setting of this run."""
    try:
        from threadpoolctl import threadpool_info

        blas = max((i.get("num_threads", 1) for i in threadpool_info()), default=1)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        blas = None
    return {
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "unset"),
        "blas_threads": blas,
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def _best(f: Callable[[], object], repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def _per_center(led: Ledger) -> tuple[float, float]:
    """(max, mean) floats sent per center (server messages excluded)."""
    t = led.table()
    t = t[t["sender"].astype(str).str.startswith("center")]
    per = t.groupby("sender")["floats"].sum()
    return float(per.max()), float(per.mean())


def hac_benchmark(
    seed: int,
    n: int = 400,
    genes: int = 2000,
    linkage_method: str = "average",
    n_min_fraction: float = 0.1,
    sketch: int = 250,
    gene_objects: int = 200,
    repeat: int = 2,
    methods: tuple[str, ...] = METHODS,
) -> pd.DataFrame:
    """One row per federated method: seconds (best of ``repeat``), pooled-reference seconds,
    their ratio, floats sent per center, and multiply-adds per center where they dominate.

    Data: :func:`fedclust.hac.toy.cohort_like` (VST-like, 5 subtypes, 7 TCGA-like centers).
    Pooled references: scipy ``pdist`` + ``linkage`` on the pooled samples (genewise: on the
    pooled genes, the ``gene_objects`` most variable).
    """
    x, c = cohort_like(seed, n, genes)
    order = np.argsort(c, kind="stable")
    xs, cs = x[order], c[order]
    blocks = [xs[cs == k] for k in np.unique(cs)]
    n_min = max(1, int(n_min_fraction * n))
    genes_kept = np.argsort(xs.var(axis=0))[::-1][:gene_objects]
    gblocks = [b[:, genes_kept] for b in blocks]
    pooled = {
        "samples": lambda: linkage(pdist(xs), linkage_method),
        "genes": lambda: linkage(pdist(xs[:, genes_kept].T), linkage_method),
    }
    fed = {
        "gradual": (
            "samples",
            lambda led: gradual_sharing(
                xs, cs, n_min, linkage_method, ledger=led, policy=SYNTHETIC
            ),
        ),
        "simultaneous": (
            "samples",
            lambda led: simultaneous_sharing(
                blocks, n_min, linkage_method, ledger=led, policy=SYNTHETIC
            ),
        ),
        "genewise": (
            "genes",
            lambda led: genewise_clustering(
                gblocks, linkage_method, "euclidean", led, policy=SYNTHETIC
            ),
        ),
        "projection": (
            "samples",
            lambda led: projection_clustering(
                blocks, linkage_method, "euclidean", sketch, seed, ledger=led, policy=SYNTHETIC
            ),
        ),
        "perturbation": (
            "samples",
            lambda led: perturbation_clustering(
                blocks, linkage_method, seed, led, policy=SYNTHETIC
            ),
        ),
    }
    # warm-up: the Gaussian stream imports torch on first use; an import is not method time
    project_centers([xs[:2, :8]], 2, "gaussian", seed)
    ref_s = {k: _best(f, repeat) for k, f in pooled.items()}
    rows = []
    for m in methods:
        objects, run = fed[m]
        secs = _best(lambda run=run: run(Ledger()), repeat)
        led = Ledger()
        run(led)
        fmax, fmean = _per_center(led)
        madds = (
            max(projection_center_costs(blocks, "euclidean", sketch))
            if m == "projection"
            else np.nan
        )
        rows.append(
            {
                "method": m,
                "objects": f"{len(xs) if objects == 'samples' else len(genes_kept)} {objects}",
                "linkage": linkage_method,
                "seconds": secs,
                "pooled_seconds": ref_s[objects],
                "ratio": secs / ref_s[objects],
                "floats_per_center_max": fmax,
                "floats_per_center_mean": fmean,
                "messages": led.n_messages,
                "rounds": int(led.table()["round"].nunique()),
                "center_madds_max": madds,
            }
        )
    return pd.DataFrame(rows)


def nb_counts(seed: int, n: int, genes: int) -> tuple[pd.DataFrame, pd.Series]:
    """A small negative-binomial cohort (library sizes, 4 subtypes; the generator of
    benchmarks/data_preprocess.py) and 7 centres of TCGA-like sizes."""
    gen = np.random.default_rng(seed)
    base = gen.normal(4.0, 1.8, size=genes)
    mu = np.exp(base)[None, :] * gen.lognormal(0, 0.4, size=(n, 1))
    lab = gen.integers(0, 4, n)
    mu = mu * np.exp((gen.normal(0, 1, (4, genes)) * (gen.random((4, genes)) < 0.1))[lab])
    size = 1.0 / (0.05 + 2.0 / (np.exp(base) + 1.0))
    counts = pd.DataFrame(
        gen.negative_binomial(size[None, :], size[None, :] / (size[None, :] + mu)),
        index=[f"s{i}" for i in range(n)],
        columns=[f"g{j}" for j in range(genes)],
    )
    shares = np.array([0.2, 0.26, 0.136, 0.189, 0.064, 0.091, 0.06])
    centre = pd.Series(gen.choice(7, n, p=shares / shares.sum()).astype(str), index=counts.index)
    return counts, centre


def preprocess_benchmark(seed: int, n: int = 200, genes: int = 1000, repeat: int = 1) -> dict:
    """Issue 23: federated RNA-seq preprocessing (size factors, pydeseq2 VST, top-N genes; 7
    centres in-process) against pooled pydeseq2 on the same counts, best of ``repeat``: one row
    of the performance table."""
    import pydeseq2.dds  # noqa: F401  (an import is not method time)

    from ..data.fedpreprocess import RnaseqSettings, federated_rnaseq, pooled_rnaseq

    counts, centre = nb_counts(seed, n, genes)
    counts = counts.loc[:, (counts > 0).any(axis=0)]
    s = RnaseqSettings(top_genes=min(500, counts.shape[1]), seed=seed)
    pooled_s = _best(lambda: pooled_rnaseq(counts, s), repeat)
    secs = _best(lambda: federated_rnaseq(counts, centre, s), repeat)
    led = Ledger()
    fed = federated_rnaseq(counts, centre, s, ledger=led)
    t = led.messages()
    per = t[t["receiver"] == "server"].groupby("sender")["floats"].sum()
    return {
        "method": "preprocessing",
        "objects": f"{n} samples × {counts.shape[1]} genes (pydeseq2 VST)",
        "linkage": "",
        "seconds": secs,
        "pooled_seconds": pooled_s,
        "ratio": secs / pooled_s,
        "floats_per_center_max": float(per.max()),
        "floats_per_center_mean": float(per.mean()),
        "messages": led.n_messages,
        "rounds": int(fed.fit.nb_rounds),
        "center_madds_max": np.nan,
    }


def privacy_benchmark(seed: int, n: int = 1000, centres: int = 10, rounds: int = 2,
                      repeat: int = 1) -> list[dict]:  # fmt: skip
    """Issue 24: (1) secure aggregation's overhead per FedAvg round — DEC's federated TSAE
    ([64, 64, 128, 10] on MDS-shaped binary data, ``centres`` centres, one local epoch) with
    secure aggregation on vs off, in-process, mean round time (the key set-up, once per run,
    is reported beside it); (2) DP-SGD's overhead per epoch — one local epoch of DP-SGD vs
    plain minibatch SGD at the same batch size: on the tied TSAE (per-sample gradients by
    torch.func) and on an ``nn.Sequential`` MLP of the same widths (Opacus' hooks)."""
    import torch

    from ..dec.federated import AE_FIT, DECClient
    from ..dec.model import TSAE, DECModel, encoder_dims, get_parameters
    from ..federation import FedAvg, History, PrivacySettings, federate, run_rounds
    from ..federation.dpsgd import DPSGD

    gen = np.random.default_rng(seed)
    x = (gen.random((n, 54)) < 0.2).astype(np.float32)
    part = np.arange(n) % centres
    dims = encoder_dims(54, [64, 64, 128, 10])

    def make_model() -> DECModel:
        return DECModel(TSAE(dims), 6, 1.0)

    torch.manual_seed(seed)
    w0 = get_parameters(make_model().tsae)
    cfg = {"stage": "ae", "optimizer": "sgd", "lr": 0.1, "batch_size": 32, "epochs": 1,
           "loss": "mse", "shuffle": True}  # fmt: skip

    def fedavg(secure: bool) -> tuple[float, float, Ledger]:
        clients = [DECClient(f"center_{c}", x[part == c], make_model, "cpu", c)
                   for c in range(centres)]  # fmt: skip
        hist, led = History(), Ledger()
        t0 = time.perf_counter()
        federate(clients, lambda ps: run_rounds(
            ps, FedAvg(), w0, rounds, cfg, AE_FIT, history=hist,
            privacy=PrivacySettings(secure_aggregation=secure)), ledger=led)  # fmt: skip
        total = time.perf_counter() - t0
        return float(np.mean(hist.seconds)), total - float(np.sum(hist.seconds)), led

    fedavg(False)  # warm-up (imports, first torch calls)
    plain = min(fedavg(False)[0] for _ in range(repeat))
    runs = [fedavg(True) for _ in range(repeat)]
    secure, setup, led = min(runs, key=lambda r: r[0])
    n_par = int(sum(w.size for w in w0))
    _, fmean = _per_center(led)
    rows = [{
        "method": "secure aggregation",
        "objects": f"FedAvg round, {centres} centres, TSAE of {n_par} parameters, {n} samples "
        f"(key set-up {setup:.2f} s once per run)",
        "linkage": "", "seconds": secure, "pooled_seconds": plain, "ratio": secure / plain,
        "floats_per_center_max": np.nan, "floats_per_center_mean": fmean,
        "messages": led.n_messages, "rounds": rounds, "center_madds_max": np.nan,
    }]  # fmt: skip

    def mse(out, y):
        return ((out - y) ** 2).mean(1)

    xt = torch.as_tensor(x[: max(n // centres, 64)])

    def epoch(model, dp: bool) -> float:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(seed)
        t0 = time.perf_counter()
        if dp:
            DPSGD(1.0, 1.0, 32).epoch(model, list(model.parameters()), opt, xt, xt, mse, g)
        else:
            perm = torch.randperm(len(xt), generator=g)
            for i in range(0, len(xt), 32):
                opt.zero_grad()
                mse(model(xt[perm[i : i + 32]]), xt[perm[i : i + 32]]).mean().backward()
                opt.step()
        return time.perf_counter() - t0

    def mlp() -> torch.nn.Sequential:  # the TSAE's widths, untied: Opacus' own layers
        widths = dims + dims[-2::-1]
        layers: list[torch.nn.Module] = []
        for a, b in zip(widths[:-1], widths[1:], strict=True):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers[:-1])

    models = {"DP-SGD (TSAE, torch.func)": lambda: TSAE(dims), "DP-SGD (MLP, Opacus)": mlp}
    for name, build in models.items():
        epoch(build(), True)  # warm-up
        dp_s = min(epoch(build(), True) for _ in range(max(repeat, 1)))
        sgd_s = min(epoch(build(), False) for _ in range(max(repeat, 1)))
        rows.append({
            "method": name, "objects": f"one local epoch, {len(xt)} samples, batch 32",
            "linkage": "", "seconds": dp_s, "pooled_seconds": sgd_s, "ratio": dp_s / sgd_s,
            "floats_per_center_max": np.nan, "floats_per_center_mean": np.nan,
            "messages": np.nan, "rounds": np.nan, "center_madds_max": np.nan,
        })  # fmt: skip
    return rows
