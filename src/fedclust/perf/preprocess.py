"""Issue 23: federated RNA-seq preprocessing against pooled pydeseq2, one row of the
performance table (:func:`preprocess_benchmark`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..federation import Ledger
from .hac import best_time


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


def preprocess_benchmark(seed: int, *, n: int, genes: int, repeat: int = 1) -> dict:
    """Issue 23: federated RNA-seq preprocessing (size factors, pydeseq2 VST, top-N genes; 7
    centres in-process) against pooled pydeseq2 on the same counts, best of ``repeat``: one row
    of the performance table. Sizes: config ``perf.preprocess`` (schema defaults)."""
    import pydeseq2.dds  # noqa: F401  (an import is not method time)

    from ..data.fedpreprocess import RnaseqSettings, federated_rnaseq, pooled_rnaseq

    counts, centre = nb_counts(seed, n, genes)
    counts = counts.loc[:, (counts > 0).any(axis=0)]
    s = RnaseqSettings(top_genes=min(500, counts.shape[1]), seed=seed)
    pooled_s = best_time(lambda: pooled_rnaseq(counts, s), repeat)
    secs = best_time(lambda: federated_rnaseq(counts, centre, s), repeat)
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
