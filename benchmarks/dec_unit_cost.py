"""Cost of one DEC unit at thesis settings (issue 14 resources), measured on scaled-down work and
extrapolated linearly (per-epoch / per-round cost × the thesis' epochs / rounds).

    OMP_NUM_THREADS=1 python benchmarks/dec_unit_cost.py [--rows 3000] [--threads 1]

Prints one line per measured piece: seconds for the measured work and the extrapolation.
MNIST-shaped data are random [0, 1] pixels (cost does not depend on the values).
"""

from __future__ import annotations

import argparse
import copy
import resource
import time

import numpy as np
import torch

from fedclust.config import load_yaml, validate_config
from fedclust.dec.pipeline import (
    central_dec_run,
    embed,
    fed_tsae_stage,
    train_central_tsae,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    c = validate_config(load_yaml("config/thesis.yaml"), "config/schema.yaml")["dec"]
    g = np.random.default_rng(0)
    # centralized MNIST TSAE: rows × 1 epoch at batch 256 → 60,000 rows × 500 epochs
    x = g.random((a.rows, 784), dtype=np.float32)
    y = g.integers(0, 10, a.rows).astype(str)
    cm = copy.deepcopy(c)
    cm["datasets"]["mnist"]["autoencoder_epochs"] = 1
    xt = torch.as_tensor(x)
    t0 = time.perf_counter()
    tsae, _ = train_central_tsae(xt, cm, "mnist", "yogi", 1)
    t = time.perf_counter() - t0
    print(
        f"tsae mnist: {t:.2f}s for {a.rows} rows x 1 epoch -> 60000 x 500 epochs: "
        f"{t * 60000 / a.rows * 500 / 3600:.2f} h (150-epoch tuning point: "
        f"{t * 54000 / a.rows * 150 / 3600:.2f} h)"
    )
    # one centralized DEC configuration: 1 epoch (+ evaluation) → 20 epochs at 60,000 rows
    cm["clustering"]["max_epochs"] = 1
    cm["evaluate"]["silhouette_max_points"] = min(a.rows, 10000)
    t0 = time.perf_counter()
    central_dec_run(x, xt, y, tsae, embed(tsae, xt), cm, "mnist", ("yogi", 9, "normal-l1"), 1)
    t = time.perf_counter() - t0
    print(
        f"dec mnist config: {t:.2f}s for {a.rows} rows x 1 epoch -> 60000 x 20 epochs: "
        f"{t * 60000 / a.rows * 20 / 3600:.2f} h (upper bound: evaluation counted per epoch)"
    )
    # federated TSAE on MDS shape: 2957 × 54 binary, 10 centers, batch 8 → 500 rounds
    xm = (g.random((2957, 54)) < 0.1).astype(np.float32)
    centers = g.integers(0, 10, 2957)
    cf = copy.deepcopy(c)
    cf["datasets"]["mds"]["federated_ae_rounds"] = 2
    t0 = time.perf_counter()
    fed_tsae_stage(xm, centers, cf, "mds", "uniform10", "fedyogi", 1)
    t = time.perf_counter() - t0
    print(
        f"fed tsae mds: {t:.2f}s for 2 rounds (+ local k-means) -> 500 rounds: "
        f"{t / 2 * 500 / 3600:.2f} h"
    )
    # federated TSAE on MNIST shape: rows split over 10 centers, batch 256 → 60,000 × 150 rounds
    cm2 = copy.deepcopy(c)
    cm2["datasets"]["mnist"]["federated_ae_rounds"] = 1
    t0 = time.perf_counter()
    fed_tsae_stage(x, g.integers(0, 10, a.rows), cm2, "mnist", "uniform10", "fedyogi", 1)
    t = time.perf_counter() - t0
    print(
        f"fed tsae mnist: {t:.2f}s for {a.rows} rows x 1 round -> 60000 x 150 rounds: "
        f"{t * 60000 / a.rows * 150 / 3600:.2f} h"
    )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
