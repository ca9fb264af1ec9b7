"""Performance of the federated HAC methods against their pooled scipy references (issue 15).

:func:`hac_benchmark` times every federated HAC method (gradual and simultaneous sharing, genewise,
random projection, orthogonal perturbation) and its pooled reference on the same simulated
cohort in one process, and reads the floats each center sends from the method's ledger.
Called only through the public functions of :mod:`fedclust.hac`.
"""

from __future__ import annotations

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


def best_time(f: Callable[[], object], repeat: int) -> float:
    """The shortest of ``repeat`` wall times of ``f()`` (seconds)."""
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def per_center(led: Ledger) -> tuple[float, float]:
    """(max, mean) floats sent per center (server messages excluded)."""
    t = led.table()
    t = t[t["sender"].astype(str).str.startswith("center")]
    per = t.groupby("sender")["floats"].sum()
    return float(per.max()), float(per.mean())


def hac_benchmark(
    seed: int,
    *,
    n: int,
    genes: int,
    linkage_method: str,
    n_min_fraction: float,
    sketch: int,
    gene_objects: int,
    repeat: int,
    methods: tuple[str, ...] = METHODS,
) -> pd.DataFrame:
    """One row per federated method: seconds (best of ``repeat``), pooled-reference seconds,
    their ratio, floats sent per center, and multiply-adds per center where they dominate.

    Data: :func:`fedclust.hac.toy.cohort_like` (VST-like, 5 subtypes, 7 TCGA-like centers).
    Pooled references: scipy ``pdist`` + ``linkage`` on the pooled samples (genewise: on the
    pooled genes, the ``gene_objects`` most variable). Sizes: config ``perf`` (schema defaults).
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
    ref_s = {k: best_time(f, repeat) for k, f in pooled.items()}
    rows = []
    for m in methods:
        objects, run = fed[m]
        secs = best_time(lambda run=run: run(Ledger()), repeat)
        led = Ledger()
        run(led)
        fmax, fmean = per_center(led)
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
