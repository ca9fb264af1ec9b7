"""Benchmark: gradual sharing and random projection vs pooled scipy linkage (issues 3, 13).

Simulated data shaped like BRCA VST top-2000 genes in 7 centers (fedclust.hac.toy.cohort_like).
Times include each method's distance computations (pooled: pdist + linkage). Every measurement
runs in a fresh child process (``spawn``) so that its peak memory can be read: ``*_peak_mb`` is
the child's peak resident set (VmHWM, reset after the data are generated: interpreter, libraries
and the input matrix included), ``*_extra_mb`` that peak minus the resident set before the call,
i.e. the memory the method itself needed. ``ratio_mem`` compares the peaks (issue 13's measure).

    OMP_NUM_THREADS=1 python benchmarks/hac_gradual.py --sizes 4000 --methods single average ward
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time

import numpy as np


def _rss_mb(field: str) -> float:
    """``VmRSS`` / ``VmHWM`` of this process in MiB (Linux), ``ru_maxrss`` as a fallback."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(what: str, n: int, genes: int, method: str, nmin_fraction: float, sketch: int, q):
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import pdist

    from fedclust.hac.federated import projection_clustering
    from fedclust.hac.gradual import gradual_sharing
    from fedclust.hac.toy import cohort_like

    x, c = cohort_like(0, n, genes)
    order = np.argsort(c, kind="stable")
    xs, cs = x[order], c[order]
    blocks = [xs[cs == k] for k in np.unique(cs)]
    n_min = max(1, int(nmin_fraction * n))
    del x
    try:  # reset the high-water mark so that data generation does not count
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    base = _rss_mb("VmRSS")
    t = time.perf_counter()
    if what == "pooled":
        z = linkage(xs, method) if method == "ward" else linkage(pdist(xs), method)
    elif what == "gradual":
        z = gradual_sharing(xs, cs, n_min, method).Z
    else:
        z = projection_clustering(blocks, method, "euclidean", sketch, 1)[0]
    el = time.perf_counter() - t
    q.put((el, _rss_mb("VmHWM"), _rss_mb("VmHWM") - base, z))


def run(what: str, n: int, args, method: str):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(
        target=_child, args=(what, n, args.genes, method, args.nmin_fraction, args.sketch, q)
    )
    p.start()
    out = q.get()
    p.join()
    return out


def main() -> None:
    from fedclust.metrics.hierarchy import ccc

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000])
    ap.add_argument("--genes", type=int, default=2000)
    ap.add_argument("--methods", nargs="+", default=["single", "average", "ward"])
    ap.add_argument("--nmin-fraction", type=float, default=0.1)
    ap.add_argument("--sketch", type=int, default=250)
    ap.add_argument("--no-projection", action="store_true")
    args = ap.parse_args()
    import os

    print(
        f"{os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
        f"load average {os.getloadavg()[0]:.1f}; genes={args.genes}, n_min = "
        f"{args.nmin_fraction:g} n; pooled best of 2, gradual one run\n"
    )
    cols = [
        "n", "linkage", "pooled s", "gradual s", "time ratio", "pooled peak MB",
        "gradual peak MB", "memory ratio", "pooled extra MB", "gradual extra MB",
        "projection s", "CCC gradual", "CCC projection",
    ]  # fmt: skip
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for n in args.sizes:
        for m in args.methods:
            tp, pp, ep, zp = min((run("pooled", n, args, m) for _ in range(2)), key=lambda r: r[0])
            tg, pg, eg, zg = run("gradual", n, args, m)
            if args.no_projection:
                tr, cr = float("nan"), float("nan")
            else:
                tr, _, _, zr = run("projection", n, args, m)
                cr = ccc(zr, zp)
            vals = [
                n, m, f"{tp:.3f}", f"{tg:.3f}", f"{tg / tp:.2f}", f"{pp:.1f}", f"{pg:.1f}",
                f"{pg / pp:.2f}", f"{ep:.1f}", f"{eg:.1f}", f"{tr:.3f}", f"{ccc(zg, zp):.3f}",
                f"{cr:.3f}",
            ]  # fmt: skip
            print("| " + " | ".join(map(str, vals)) + " |", flush=True)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
