"""Per-round time of simulated federated TSAE training (C clients, FedAvg, 1 local epoch) vs one
centralized epoch on the same data and batch size; peak memory. Run on demand:

    python benchmarks/dec_federated_overhead.py --n 10000 --features 784 --arch DEC --rounds 3

Overhead = federated round / centralized epoch − 1 (target ≤ 20 %, seed 000 issue). Same number
of optimizer steps (up to the last partial batch per client); the federated round also rebuilds the
model and optimizer per client, copies parameters in and out, aggregates and logs to the ledger.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fedclust.dec.federated import DECClient, run_rounds
from fedclust.dec.model import TSAE, DECModel, encoder_dims, get_parameters
from fedclust.dec.optim import make_optimizer
from fedclust.dec.train import ae_epoch, shuffle_generator
from fedclust.federation import FedAvg, Ledger


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--features", type=int, default=784)
    ap.add_argument("--arch", default="DEC")
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--optimizer", default="adam")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    x = np.random.default_rng(0).random((args.n, args.features), dtype=np.float32)
    dims = encoder_dims(args.features, args.arch)

    def make_model() -> DECModel:
        return DECModel(TSAE(dims), 10).to(dev)

    torch.manual_seed(0)
    start = get_parameters(make_model().tsae)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize()

    # centralized: one epoch over all n samples per "round"; fresh optimizer each time
    xt = torch.as_tensor(x, device=dev)
    central_t = []
    model = make_model()
    gen = shuffle_generator(0)
    for _ in range(args.rounds + 1):
        opt = make_optimizer(args.optimizer, model.tsae.parameters(), 1e-3)
        sync()
        t0 = time.perf_counter()
        ae_epoch(model.tsae, xt, opt, args.batch, shuffle=True, gen=gen)
        sync()
        central_t.append(time.perf_counter() - t0)

    parts = np.array_split(np.arange(args.n), args.clients)
    clients = [DECClient(f"c{i}", x[p], make_model, dev) for i, p in enumerate(parts)]
    cfg = {
        "stage": "ae",
        "optimizer": args.optimizer,
        "lr": 1e-3,
        "batch_size": args.batch,
        "epochs": 1,
        "shuffle": True,
    }
    fed_t, params, ledger = [], start, Ledger()
    for _r in range(args.rounds + 1):
        sync()
        t0 = time.perf_counter()
        params = run_rounds(clients, FedAvg(), params, 1, cfg, ledger, [])
        sync()
        fed_t.append(time.perf_counter() - t0)
    # the first of each is a warm-up
    c, f = float(np.median(central_t[1:])), float(np.median(fed_t[1:]))
    out = {
        "device": str(dev),
        "n": args.n,
        "features": args.features,
        "arch": args.arch,
        "params": int(sum(p.size for p in start)),
        "clients": args.clients,
        "batch": args.batch,
        "optimizer": args.optimizer,
        "threads": args.threads,
        "central_epoch_s": round(c, 4),
        "federated_round_s": round(f, 4),
        "overhead": round(f / c - 1, 4),
        "floats_per_round": int(ledger.n_floats / (args.rounds + 1)),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if dev.type == "cuda":
        out["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
