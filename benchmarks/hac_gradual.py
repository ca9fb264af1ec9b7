"""Benchmark: gradual sharing and random projection vs pooled scipy linkage (issue 3).

Simulated data shaped like BRCA VST top-2000 genes in 7 centers (fedclust.hac.toy.cohort_like).
Times include each method's distance computations (pooled: pdist + linkage).

    OMP_NUM_THREADS=2 python benchmarks/hac_gradual.py --sizes 250 500 1000 2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from fedclust.hac.federated import projection_clustering
from fedclust.hac.gradual import gradual_sharing
from fedclust.hac.toy import cohort_like
from fedclust.metrics.hierarchy import ccc


def pooled(x, method):
    """The reference: scipy linkage on the pooled data (pdist included)."""
    return linkage(x, method) if method == "ward" else linkage(pdist(x), method)


def _time(f, *args, repeat=1):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f(*args)
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000])
    ap.add_argument("--genes", type=int, default=2000)
    ap.add_argument("--methods", nargs="+", default=["single", "average", "ward"])
    ap.add_argument("--nmin-fraction", type=float, default=0.1)
    ap.add_argument("--sketch", type=int, default=250)
    args = ap.parse_args()
    print("n\tlinkage\tpooled_s\tgradual_s\tratio_gradual\tproj_s\tratio_proj\tccc_grad\tccc_proj")
    for n in args.sizes:
        x, c = cohort_like(0, n, args.genes)
        blocks_order = np.argsort(c, kind="stable")
        xs, cs = x[blocks_order], c[blocks_order]
        blocks = [xs[cs == k] for k in np.unique(cs)]
        n_min = max(1, int(args.nmin_fraction * n))
        for m in args.methods:
            tp, zp = _time(pooled, xs, m, repeat=2)
            tg, rg = _time(gradual_sharing, xs, cs, n_min, m)
            tr, (zr, _) = _time(projection_clustering, blocks, m, "euclidean", args.sketch, 1)
            print(
                f"{n}\t{m}\t{tp:.3f}\t{tg:.3f}\t{tg / tp:.2f}\t{tr:.3f}\t{tr / tp:.2f}\t"
                f"{ccc(rg.Z, zp):.3f}\t{ccc(zr, zp):.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
