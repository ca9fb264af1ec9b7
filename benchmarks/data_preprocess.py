"""Benchmark: pydeseq2 preprocessing (size factors + VST + top-gene selection) at TCGA size.

    python benchmarks/data_preprocess.py --samples 1188 --genes 20000   # BRCA-sized cohort
    python benchmarks/data_preprocess.py --vst-fit-genes 1000 --top-genes 2000 --compare

Counts are negative binomial with library-size variation and a few subtypes (same generator
family as fedclust.data.simulate, drawn in memory). ``--vst-fit-genes N`` fits the VST dispersion
trend on N random genes (DESeq2 ``vst(nsub=N)``, data.rnaseq.vst_fit_genes); ``--compare`` also
runs the full pydeseq2 VST and prints the agreement: per-gene Pearson correlation, max |Δ|, and
the top-N selection (genes that differ and how close their full-VST variance is to the cut-off).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd


def simulate(samples: int, genes: int, seed: int) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    base = gen.normal(4.0, 1.8, size=genes)
    mu = np.exp(base)[None, :] * gen.lognormal(0, 0.4, size=(samples, 1))
    lab = gen.integers(0, 4, samples)
    mu = mu * np.exp((gen.normal(0, 1, (4, genes)) * (gen.random((4, genes)) < 0.1))[lab])
    disp = 0.05 + 2.0 / (np.exp(base) + 1.0)
    n = 1.0 / disp
    counts = pd.DataFrame(
        gen.negative_binomial(n[None, :], n[None, :] / (n[None, :] + mu)),
        index=[f"s{i}" for i in range(samples)],
        columns=[f"g{j}" for j in range(genes)],
    )
    return counts.loc[:, (counts > 0).any(axis=0)]


def agreement(fast: pd.DataFrame, full: pd.DataFrame, top: int | None) -> str:
    from fedclust.data.preprocess import top_variable_genes

    a, b = fast.to_numpy(), full.to_numpy()
    ac, bc = a - a.mean(0), b - b.mean(0)
    corr = (ac * bc).sum(0) / np.sqrt((ac**2).sum(0) * (bc**2).sum(0))
    out = f"per-gene corr min {np.nanmin(corr):.6f}, max |Δ| {np.abs(a - b).max():.4f}"
    if top:
        var = full.var(axis=0, ddof=1)
        cut = np.sort(var.to_numpy())[::-1][top - 1]
        diff = set(top_variable_genes(fast, top)) ^ set(top_variable_genes(full, top))
        gap = max((abs(var[g] / cut - 1) for g in diff), default=0.0)
        out += f"; top-{top}: {len(diff) // 2} genes swapped, max |var/cut-off − 1| {gap:.4f}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1188)
    ap.add_argument("--genes", type=int, default=20000)
    ap.add_argument("--top-genes", type=int, default=None)
    ap.add_argument("--vst-fit-genes", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1, help="pydeseq2 n_cpus")
    ap.add_argument("--compare", action="store_true", help="also run the full pydeseq2 VST")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    from fedclust.data.preprocess import preprocess_rnaseq, size_factors

    counts = simulate(a.samples, a.genes, a.seed)
    t0 = time.perf_counter()
    size_factors(counts)
    t1 = time.perf_counter()
    sf, v = preprocess_rnaseq(counts, a.top_genes, a.threads, a.vst_fit_genes, a.seed)
    t2 = time.perf_counter()
    print(
        f"samples={a.samples} genes={counts.shape[1]} top_genes={a.top_genes} "
        f"vst_fit_genes={a.vst_fit_genes} n_cpus={a.threads} "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}: "
        f"size_factors {t1 - t0:.2f} s; size factors + VST + selection {t2 - t1:.2f} s",
        flush=True,
    )
    if a.compare and a.vst_fit_genes:
        t3 = time.perf_counter()
        _, vfull = preprocess_rnaseq(counts, None, a.threads, None)
        t4 = time.perf_counter()
        _, vfast = preprocess_rnaseq(counts, None, a.threads, a.vst_fit_genes, a.seed)
        print(f"full pydeseq2 VST {t4 - t3:.2f} s; " + agreement(vfast, vfull, a.top_genes))


if __name__ == "__main__":
    main()
