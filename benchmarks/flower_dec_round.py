"""Flower vs in-process engine: time of federated DEC rounds at the default config's sizes.

Default: the MDS shape of the default workflow (2957 samples × 54 features, 10 uniform centers,
arch [64, 64, 128, 10], TSAE batch 32 / DEC batch 64, Adam + FedAdam, one local epoch). Each
engine runs ``--rounds`` TSAE rounds and ``--rounds`` DEC (stage C) rounds; reported: the mean
round time (the core's round clock, inside the ServerApp for Flower), the CPU time per round
(``time.process_time`` between round ends, the first from the server function's start: less
sensitive to a shared machine's load than wall time), the CPU and wall time of the whole call
and the wall time of each ``run_rounds`` call, which for Flower includes building the
``ServerApp``, the ``ClientApp`` and the grid (:mod:`fedclust.flower.simulation`). Run on demand:

    OMP_NUM_THREADS=1 python benchmarks/flower_dec_round.py --rounds 1
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import fedclust.federation as core
from fedclust.dec.federated import AE_FIT, DEC_FIT, DECClient, dec_parameters, make_strategy
from fedclust.dec.model import TSAE, DECModel, encoder_dims, get_parameters
from fedclust.federation import Ledger, federate
from fedclust.transports import get


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2957)
    ap.add_argument("--features", type=int, default=54)
    ap.add_argument("--arch", type=int, nargs="+", default=[64, 64, 128, 10])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)
    x = np.random.default_rng(0).random((args.n, args.features), dtype=np.float32)
    dims = encoder_dims(args.features, args.arch)
    parts = np.array_split(np.arange(args.n), args.clients)
    server = {"eta": 0.01, "beta_1": 0.9, "beta_2": 0.999, "tau": 1e-3}
    out = {}
    # in-process twice: warm-up effects
    for engine in ("inprocess", "flower-simulation", "inprocess"):

        def make_model() -> DECModel:
            return DECModel(TSAE(dims), 10)

        clients = [DECClient(f"c{i}", x[p], make_model, "cpu", i) for i, p in enumerate(parts)]
        led = Ledger()
        torch.manual_seed(0)
        model = make_model()
        res = {}
        for stage, cfg, proto, start in (
            ("ae", {"stage": "ae", "optimizer": "adam", "lr": 1e-3, "batch_size": 32,
                    "epochs": 1, "loss": "mse", "shuffle": True}, AE_FIT,
             get_parameters(model.tsae)),
            ("dec", {"stage": "dec", "optimizer": "adam", "lr": 5e-4, "batch_size": 64,
                     "epochs": 1, "target_update": "batch", "shuffle": True}, DEC_FIT,
             dec_parameters(model)),
        ):  # fmt: skip
            hist = core.History()
            t0, c0 = time.perf_counter(), time.process_time()
            strategy = make_strategy("fedadam", server)

            cpu: list[float] = []

            def serve(ps, strategy=strategy, start=start, cfg=cfg, proto=proto, hist=hist,
                      stage=stage, cpu=cpu):  # fmt: skip
                cpu.append(time.process_time())
                return core.run_rounds(
                    ps,
                    strategy,
                    start,
                    args.rounds,
                    cfg,
                    proto,
                    kind=stage,
                    history=hist,
                    on_round=lambda *_: cpu.append(time.process_time()),
                )

            federate(clients, serve, ledger=led, transport=get(engine))
            res[stage] = {"round_s": float(np.mean(hist.seconds)),
                          "round_cpu_s": float(np.mean(np.diff(cpu))),
                          "call_cpu_s": time.process_time() - c0,
                          "call_wall_s": time.perf_counter() - t0}  # fmt: skip
        res["messages"], res["floats"] = led.n_messages, led.n_floats
        out[engine] = res
        print(engine, json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
