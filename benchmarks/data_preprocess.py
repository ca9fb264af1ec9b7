"""Benchmark: pydeseq2 preprocessing (size factors + VST + top-gene selection) at TCGA size.

    python benchmarks/data_preprocess.py --samples 1188 --genes 20000   # BRCA-sized cohort
    python benchmarks/data_preprocess.py --vst-fit-genes 1000 --top-genes 2000 --compare

Counts are negative binomial with library-size variation and a few subtypes (same generator
family as fedclust.data.simulate, drawn in memory). ``--vst-fit-genes N`` fits the VST dispersion
trend on N random genes (DESeq2 ``vst(nsub=N)``, data.rnaseq.vst_fit_genes); ``--compare`` also
runs the full pydeseq2 VST and prints the agreement (fedclust.data.vst_agreement): per-gene
Pearson correlation, max |Δ|, and the top-N selection up to ties (genes that differ, their distance
to the cut-off in standard errors of their own variance, the full VST's own bootstrap selection
noise). Output: a markdown table with the machine load.
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
    """Markdown rows: per-gene agreement and the top-N selection up to ties
    (fedclust.data.vst_agreement: a swapped gene is a tie when its full-VST variance lies within
    2 standard errors of the cut-off; bootstrap = the full VST's own selection noise)."""
    from fedclust.data.vst_agreement import vst_agreement

    r = vst_agreement(fast, full, top or full.shape[1])
    rows = [
        ("per-gene Pearson correlation, min", f"{r['per_gene_corr_min']:.6f}"),
        ("max abs(fast − full) (log2 scale)", f"{r['max_abs_diff']:.4f}"),
    ]
    if top:
        rows += [
            (f"top-{top} genes swapped", f"{r['swapped']}"),
            ("max abs(s_g / cut-off − 1), swapped genes", f"{r['max_gap_to_cutoff_rel']:.4f}"),
            ("max abs(s_g − cut-off) / SE_g, swapped genes", f"{r['max_gap_to_cutoff_se']:.3f}"),
            ("all swaps are ties (≤ 2 SE)", f"{r['all_swaps_are_ties']}"),
            ("fast-path score error / SE_g, median / max", (
                f"{r['median_score_error_se']:.3f} / {r['max_score_error_se']:.3f}"
            )),
            (f"full VST, bootstrap of samples: top-{top} genes swapped (5 draws)", (
                f"{r['bootstrap_swapped']}"
            )),
        ]  # fmt: skip
    return "\n".join(f"| {k} | {v} |" for k, v in rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1188)
    ap.add_argument("--genes", type=int, default=20000)
    ap.add_argument("--top-genes", type=int, default=None)
    ap.add_argument("--vst-fit-genes", type=int, default=None)
    ap.add_argument(
        "--vst-fit-pool",
        default="mean5",
        choices=["mean5", "nonzero"],
        help="genes the trend subset is drawn from (data.rnaseq.vst_fit_pool; thesis: nonzero)",
    )
    ap.add_argument("--threads", type=int, default=1, help="pydeseq2 n_cpus")
    ap.add_argument("--compare", action="store_true", help="also run the full pydeseq2 VST")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    import pydeseq2.dds  # noqa: F401  (import time is not preprocessing time)

    from fedclust.data.preprocess import preprocess_rnaseq, size_factors

    counts = simulate(a.samples, a.genes, a.seed)
    t0 = time.perf_counter()
    size_factors(counts)
    t1 = time.perf_counter()
    sf, v = preprocess_rnaseq(
        counts, a.top_genes, a.threads, a.vst_fit_genes, a.seed, a.vst_fit_pool
    )
    t2 = time.perf_counter()
    print(
        f"samples={a.samples} genes={counts.shape[1]} top_genes={a.top_genes} "
        f"vst_fit_genes={a.vst_fit_genes} pool={a.vst_fit_pool} n_cpus={a.threads} "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, load average "
        f"{os.getloadavg()[0]:.1f}\n\n| measure | value |\n|---|---|\n"
        f"| size factors (s) | {t1 - t0:.2f} |\n"
        f"| size factors + VST + selection (s) | {t2 - t1:.2f} |",
        flush=True,
    )
    if a.compare and a.vst_fit_genes:
        t3 = time.perf_counter()
        _, vfull = preprocess_rnaseq(counts, None, a.threads, None)
        t4 = time.perf_counter()
        _, vfast = preprocess_rnaseq(
            counts, None, a.threads, a.vst_fit_genes, a.seed, a.vst_fit_pool
        )
        print(f"| full pydeseq2 size factors + VST (s) | {t4 - t3:.2f} |")
        print(f"| ratio fast / full | {(t2 - t1) / (t4 - t3):.3f} |")
        print(agreement(vfast, vfull, a.top_genes))
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
