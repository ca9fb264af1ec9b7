"""Benchmark: pydeseq2 preprocessing (size factors + VST + top-gene selection) at TCGA size.

    python benchmarks/data_preprocess.py --samples 1188 --genes 20000   # BRCA-sized cohort

Counts are negative binomial with library-size variation (same generator family as
fedclust.data.simulate, drawn in memory). Prints wall times in seconds.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1188)
    ap.add_argument("--genes", type=int, default=20000)
    ap.add_argument("--top-genes", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    from fedclust.data.preprocess import preprocess_rnaseq, size_factors

    gen = np.random.default_rng(a.seed)
    base = gen.normal(4.0, 1.8, size=a.genes)
    mu = np.exp(base)[None, :] * gen.lognormal(0, 0.4, size=(a.samples, 1))
    disp = 0.05 + 2.0 / (np.exp(base) + 1.0)
    n = 1.0 / disp
    counts = pd.DataFrame(
        gen.negative_binomial(n[None, :], n[None, :] / (n[None, :] + mu)),
        index=[f"s{i}" for i in range(a.samples)],
        columns=[f"g{j}" for j in range(a.genes)],
    )
    t0 = time.perf_counter()
    size_factors(counts)
    t1 = time.perf_counter()
    sf, v = preprocess_rnaseq(counts, a.top_genes)
    t2 = time.perf_counter()
    print(
        f"samples={a.samples} genes={a.genes} top_genes={a.top_genes} "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}: "
        f"size_factors {t1 - t0:.2f} s; size factors + VST + selection {t2 - t1:.2f} s"
    )


if __name__ == "__main__":
    main()
