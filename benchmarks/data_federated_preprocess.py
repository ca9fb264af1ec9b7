"""Benchmark (issue 23): federated RNA-seq preprocessing vs pooled pydeseq2 in the same run.

    OMP_NUM_THREADS=1 python benchmarks/data_federated_preprocess.py                # 1188 × 20 000
    OMP_NUM_THREADS=1 python benchmarks/data_federated_preprocess.py --vst-fit-genes 1000 \\
        --vst-fit-pool nonzero                                                   # the fast VST

A BRCA-sized simulated cohort (benchmarks/data_preprocess.py's generator) over 7 centres with
the TCGA region shares of the default site table; pooled = pydeseq2 size factors + VST + top-N
on the whole cohort (the rule ``rnaseq_cohort``), federated = the same through the federation
core (``fedclust.data.fedpreprocess``, in-process ledger). Prints a markdown table: both times
(import time excluded), their ratio, the L-BFGS-B rounds, floats sent per centre and the
agreement with pooled (size factors, dispersions, trend, VST, top-N). Ratios are measured in one
run; the machine's load is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from data_preprocess import simulate  # noqa: E402  (same generator as the pooled benchmark)

SHARES = [0.2, 0.26038, 0.13585, 0.18868, 0.06415, 0.09057, 0.06038]  # data.rnaseq.sites


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1188)
    ap.add_argument("--genes", type=int, default=20000)
    ap.add_argument("--centres", type=int, default=7)
    ap.add_argument("--top-genes", type=int, default=2000)
    ap.add_argument("--vst-fit-genes", type=int, default=None)
    ap.add_argument("--vst-fit-pool", default="mean5", choices=["mean5", "nonzero"])
    ap.add_argument("--min-samples", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    import pydeseq2.dds  # noqa: F401  (import time is not preprocessing time)

    from fedclust.data.fedpreprocess import (
        RnaseqSettings,
        agreement,
        federated_rnaseq,
        pooled_rnaseq,
    )
    from fedclust.federation import Ledger

    load0 = os.getloadavg()[0]
    counts = simulate(a.samples, a.genes, a.seed)
    shares = np.asarray(SHARES[: a.centres] if a.centres <= 7 else [1.0] * a.centres)
    gen = np.random.default_rng(a.seed + 1)
    centre = pd.Series(
        gen.choice(a.centres, size=len(counts), p=shares / shares.sum()).astype(str),
        index=counts.index,
    )
    s = RnaseqSettings(top_genes=a.top_genes, vst_fit_genes=a.vst_fit_genes,
                       vst_fit_pool=a.vst_fit_pool, seed=a.seed)  # fmt: skip
    t0 = time.perf_counter()
    pooled = pooled_rnaseq(counts, s)
    t1 = time.perf_counter()
    ledger = Ledger()
    fed = federated_rnaseq(counts, centre, s, a.min_samples, ledger=ledger)
    t2 = time.perf_counter()
    row = agreement(fed, pooled, counts)
    up = ledger.messages()
    up = up[up["receiver"] == "server"].groupby("sender")["floats"].sum()
    down = ledger.messages()
    down = down[down["sender"] == "server"].groupby("receiver")["floats"].sum()
    print(
        f"samples={a.samples} genes={counts.shape[1]} centres={a.centres} "
        f"(sizes {sorted(centre.value_counts().tolist())}) top_genes={a.top_genes} "
        f"vst_fit_genes={a.vst_fit_genes} pool={a.vst_fit_pool} "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, load average {load0:.1f}\n\n"
        "| measure | value |\n|---|---|\n"
        f"| pooled pydeseq2 size factors + VST + top-N (s) | {t1 - t0:.1f} |\n"
        f"| federated, same steps, 7 centres in-process (s) | {t2 - t1:.1f} |\n"
        f"| ratio federated / pooled | {(t2 - t1) / (t1 - t0):.3f} |\n"
        f"| L-BFGS-B rounds (dispersions) | {row['dispersion_rounds']} |\n"
        f"| messages | {row['messages']} |\n"
        f"| floats sent per centre, max / mean | {up.max():,} / {up.mean():,.0f} |\n"
        f"| floats received per centre, max | {down.max():,} |\n"
        f"| size factors, max relative difference | {row['size_factors_max_rel']:.1e} |\n"
        f"| normalised means, max relative difference | {row['normed_means_max_rel']:.1e} |\n"
        f"| dispersions, median / max relative difference | "
        f"{np.median(np.abs(fed.fit.dispersions / pooled.fit.dispersions - 1)):.1e} / "
        f"{row['dispersions_max_rel']:.1e} |\n"
        f"| genes where pydeseq2's L-BFGS-B did not converge (grid), pooled / federated | "
        f"{int((~pooled.fit.converged).sum())} / {int((~fed.fit.converged).sum())} |\n"
        f"| trend a0 / a1, relative difference | {row['trend_a0_rel']:.1e} / "
        f"{row['trend_a1_rel']:.1e} |\n"
        f"| VST, max absolute difference (log2) | {row['vst_max_abs']:.1e} |\n"
        f"| top-{a.top_genes} genes swapped | {row['top_genes_swapped']} |",
        flush=True,
    )
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
