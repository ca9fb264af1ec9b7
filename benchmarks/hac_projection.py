"""Benchmark: random-projection HAC on all genes vs pooled scipy (pdist + linkage), issue 15.

Synthetic 5-cluster VST-like data (fedclust.hac.toy.cohort_like) in 7 centers of TCGA-like sizes.
End-to-end times: pooled = scipy ``pdist`` + ``linkage`` (Ward: ``linkage(x, "ward")``);
projection = every center's sketch (shared-seed matrix, drawn once for all simulated centers),
server distance estimate and ``linkage``. Also prints the distortion of the distance estimate
(median |d̂/d − 1|, Pearson correlation with pooled distances) and the float32-vs-float64 sketch
difference. The variant ``before: numpy ziggurat`` is the previous Gaussian stream (numpy
``standard_normal(dtype=float32)`` per row block, same blocking and arithmetic), timed in the same
run, so the table holds before and after ratios measured under the same machine load. Output is
a markdown table (paste-ready), with the load average before and after, and the ratio of
process CPU times beside the wall-clock ratio (one thread each: on a shared machine the CPU
time is less inflated by other jobs than wall time).

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
from fedclust.hac.projection import BLOCK_ROWS, gaussian_distances
from fedclust.hac.toy import cohort_like
from fedclust.seeds import rng


def before_gaussian(blocks, method, k, seed):
    """The landed Gaussian path before issue 15's generator change (numpy float32 ziggurat)."""
    d = blocks[0].shape[1]
    ys = [np.zeros((b.shape[0], k), dtype=np.float32) for b in blocks]
    for b, start in enumerate(range(0, d, BLOCK_ROWS)):
        stop = min(d, start + BLOCK_ROWS)
        g = rng(seed, "projection", "gaussian", d, k, b)
        qb = g.standard_normal((stop - start, k), dtype=np.float32)
        for x, y in zip(blocks, ys, strict=True):
            y += np.asarray(x[:, start:stop], dtype=np.float32) @ qb
    dist = gaussian_distances(np.vstack(ys).astype(float))
    return (linkage(dist, "ward" if method == "ward" else method), dist)


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
            "before: numpy ziggurat float32": "before",
            "gaussian float32": {"kind": "gaussian", "dtype": "float32"},
            "gaussian float64": {"kind": "gaussian", "dtype": "float64"},
            "very sparse (s=√d) float32": {"kind": "sparse", "dtype": "float32"},
        }
        if a.threads > 1:
            variants[f"gaussian float32, {a.threads} threads"] = {"threads": a.threads}
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, load average "
        f"{os.getloadavg()[0]:.1f}; n={a.samples} d={a.genes} "
        f"k={a.k}, {len(blocks)} centers, best of {a.repeat} (pooled and federated alternating)\n"
    )
    ref = pdist(xs)
    print(
        "| linkage | variant | pooled s | federated s | ratio | CPU-time ratio | median rel. err "
        "| corr |"
    )
    print("|---|---|---|---|---|---|---|---|")
    dists = {}
    for m in a.methods:

        def pooled(m=m):
            return linkage(xs, m) if m == "ward" else linkage(pdist(xs), m)

        for name, kw in variants.items():
            if kw == "before":
                fn = lambda m=m: before_gaussian(blocks, m, a.k, 1)  # noqa: E731
            else:
                fn = lambda m=m, kw=kw: projection_clustering(  # noqa: E731
                    blocks, m, "euclidean", a.k, 1, **kw
                )
            # pooled and federated alternate, so both see the same machine load
            tp, tf, cp, cf = np.inf, np.inf, np.inf, np.inf
            for _ in range(a.repeat):
                c0 = time.process_time()
                tp = min(tp, _best(pooled, 1)[0])
                c1 = time.process_time()
                t, (_, d) = _best(fn, 1)
                c2 = time.process_time()
                tf, cp, cf = min(tf, t), min(cp, c1 - c0), min(cf, c2 - c1)
            dists[name] = d
            rel = float(np.median(np.abs(d / ref - 1)))
            corr = float(np.corrcoef(d, ref)[0, 1])
            print(
                f"| {m} | {name} | {tp:.3f} | {tf:.3f} | {tf / tp:.3f} | {cf / cp:.3f} | {rel:.4f} "
                f"| {corr:.5f} |",
                flush=True,
            )
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    if "gaussian float32" in dists:
        d32, d64 = dists["gaussian float32"], dists["gaussian float64"]
        print(
            "float32 vs float64 sketch (same matrix): max |d32/d64 - 1| = "
            f"{np.max(np.abs(d32 / d64 - 1)):.2e}"
        )


if __name__ == "__main__":
    main()
