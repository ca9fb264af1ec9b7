"""Secure aggregation's overhead per FedAvg round, in-process (issue 24): the same rounds with
secure aggregation off and on, alternated, the smallest mean round time of each over the
repeats (a shared machine's load hits both alike); also with central DP (clip + noise).

Two shapes: DEC's federated TSAE at the default config's MDS size (2043 × 54 binary features, 10
uniform centres, arch [64, 64, 128, 10], SGD batch 32, one local epoch; 17.6 k parameters) and
seed 004's heart network (177 k parameters, 5 hospitals of the real heart data's size). Run on
demand:

    OMP_NUM_THREADS=1 python benchmarks/secagg_round.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fedclust.dec.federated import AE_FIT, DECClient
from fedclust.dec.model import TSAE, DECModel, encoder_dims, get_parameters
from fedclust.decentral.clients import ClientData, HeartClient
from fedclust.decentral.server import HEART_TRAIN
from fedclust.decentral.simulate import initial_weights
from fedclust.decentral.training import Trainer
from fedclust.federation import FedAvg, History, Ledger, PrivacySettings, federate, run_rounds

SETTINGS = {
    "off": PrivacySettings(),
    "secure": PrivacySettings(secure_aggregation=True),
    "secure+dp": PrivacySettings(secure_aggregation=True, epsilon=8.0, clip=1.0),
}


def dec_run(settings, rounds, seed=0):
    gen = np.random.default_rng(seed)
    x = (gen.random((2043, 54)) < 0.2).astype(np.float32)
    part = np.arange(len(x)) % 10
    dims = encoder_dims(54, [64, 64, 128, 10])
    torch.manual_seed(seed)
    w0 = get_parameters(TSAE(dims))
    cfg = {"stage": "ae", "optimizer": "sgd", "lr": 0.1, "batch_size": 32, "epochs": 1,
           "loss": "mse", "shuffle": True}  # fmt: skip
    cl = [DECClient(f"center_{c}", x[part == c], lambda: DECModel(TSAE(dims), 6, 1.0), "cpu", c)
          for c in range(10)]  # fmt: skip
    h = History()
    federate(cl, lambda ps: run_rounds(ps, FedAvg(), w0, rounds, cfg, AE_FIT, history=h,
                                       privacy=settings), ledger=Ledger())  # fmt: skip
    return float(np.mean(h.seconds))


def heart_run(settings, rounds, seed=0):
    gen = np.random.default_rng(seed)
    sizes = [225, 220, 150, 100, 45]  # training rows per hospital, as the real data's
    data = []
    for i, n in enumerate(sizes):
        x = gen.random((n, 20)).astype(np.float32)
        y = (gen.random(n) < 0.5).astype(np.float32)
        data.append(ClientData(f"h{i}", x, y, x[:10], y[:10]))
    trainer = Trainer(20, 1e-3, "per_client", seed)
    cl = [HeartClient(d, trainer) for d in data]
    w0 = initial_weights(20, seed)
    cfg = {"epochs": 1, "batch_size": 14, "validation_split": 0.0}
    h = History()
    federate(cl, lambda ps: run_rounds(ps, FedAvg(), w0, rounds, cfg, HEART_TRAIN, history=h,
                                       privacy=settings), ledger=Ledger())  # fmt: skip
    return float(np.mean(h.seconds))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    logging.disable(logging.INFO)
    out = {}
    for name, fn in (("dec_tsae", dec_run), ("heart_fl", heart_run)):
        fn(SETTINGS["off"], 1)  # warm-up
        best = {k: np.inf for k in SETTINGS}
        for _ in range(a.repeats):
            for k, s in SETTINGS.items():
                best[k] = min(best[k], fn(s, a.rounds))
        out[name] = {k: {"round_s": v, "ratio": v / best["off"]} for k, v in best.items()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
