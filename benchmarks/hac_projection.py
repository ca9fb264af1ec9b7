"""Benchmark: random-projection HAC on all genes vs pooled scipy (pdist + linkage), issue 15.

Synthetic 5-cluster VST-like data (fedclust.hac.toy.cohort_like) in 7 centers of TCGA-like sizes.
End-to-end times: pooled = scipy ``pdist`` + ``linkage`` (Ward: ``linkage(x, "ward")``);
projection = every center's sketch (shared-seed matrix, drawn once for all simulated centers),
server distance estimate and ``linkage``. Also prints the distortion of the distance estimate
(median |d̂/d − 1|, Pearson correlation with pooled distances) and the float32-vs-float64 sketch
difference.

    OMP_NUM_THREADS=1 python benchmarks/hac_projection.py --samples 500 --genes 50000 --k 1000
    OMP_NUM_THREADS=1 python benchmarks/hac_projection.py --samples 1188 --genes 55000 --k 1000
"""

from __future__ import annotations

import argparse
import inspect
import os
import platform
import time

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from fedclust.hac.federated import projection_clustering
from fedclust.hac.toy import cohort_like


def _best(f, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--genes", type=int, default=50000)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--methods", nargs="+", default=["average", "ward"])
    ap.add_argument("--threads", type=int, default=1, help="also time threaded block drawing")
    ap.add_argument("--repeat", type=int, default=2, help="best of this many runs")
    a = ap.parse_args()
    x, c = cohort_like(0, a.samples, a.genes)
    order = np.argsort(c, kind="stable")
    xs, cs = x[order], c[order]
    blocks = [xs[cs == k] for k in np.unique(cs)]
    new_api = "kind" in inspect.signature(projection_clustering).parameters
    variants = {"landed/default": {}}
    if new_api:
        variants = {
            "gaussian float32": {"kind": "gaussian", "dtype": "float32"},
            "gaussian float64": {"kind": "gaussian", "dtype": "float64"},
            "very sparse (s=√d) float32": {"kind": "sparse", "dtype": "float32"},
        }
        if a.threads > 1:
            variants[f"gaussian float32, {a.threads} threads"] = {"threads": a.threads}
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; n={a.samples} d={a.genes} "
        f"k={a.k}, {len(blocks)} centers, best of {a.repeat}"
    )
    ref = pdist(xs)
    print("method\tvariant\tpooled_s\tfed_s\tratio\tmedian_rel_err\tcorr")
    dists = {}
    for m in a.methods:
        tp, _ = _best(
            lambda m=m: linkage(xs, m) if m == "ward" else linkage(pdist(xs), m), a.repeat
        )
        for name, kw in variants.items():
            tf, (_, d) = _best(
                lambda m=m, kw=kw: projection_clustering(blocks, m, "euclidean", a.k, 1, **kw),
                a.repeat,
            )
            dists[name] = d
            rel = float(np.median(np.abs(d / ref - 1)))
            corr = float(np.corrcoef(d, ref)[0, 1])
            print(
                f"{m}\t{name}\t{tp:.3f}\t{tf:.3f}\t{tf / tp:.3f}\t{rel:.4f}\t{corr:.5f}", flush=True
            )
    if "gaussian float32" in dists:
        d32, d64 = dists["gaussian float32"], dists["gaussian float64"]
        print(
            "float32 vs float64 sketch (same matrix): max |d32/d64 - 1| = "
            f"{np.max(np.abs(d32 / d64 - 1)):.2e}"
        )


if __name__ == "__main__":
    main()
