"""Time the bayes stage's thesis-size units on the available device (docs/RESOURCES.md).

    python benchmarks/bayes_thesis_sizes.py [--device cuda] [--out timing.json]

(a) one BBB epoch of 784-1200-1200-10 on 50 000 images (batch 128, Adam, MC KL, mixture prior)
plus one evaluation (10 000 validation + 10 000 test images, 10 weight samples); (b) one
VIRTUAL round: 10 clients x 20 epochs x 600 images (batch 20, SGD) of 784-100-100-10 without
biases, through the ledger; (c) the same for a deterministic SGD epoch. Synthetic images of
MNIST's shape: only the time is measured.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from fedclust.bayes import bbb, centre, protocols, server
from fedclust.federation import Ledger, federate


def _sync(dev: str) -> None:
    if dev == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default="")
    ap.add_argument("--n", type=int, default=50000)
    a = ap.parse_args()
    dev = a.device
    g = np.random.default_rng(0)
    out: dict[str, float | str] = {
        "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    }
    x = torch.as_tensor(g.random((a.n, 784), dtype=np.float32), device=dev)
    y = torch.as_tensor(g.integers(0, 10, a.n), device=dev)
    lay = bbb.make_layout(784, [1200, 1200], 10)
    mu = torch.as_tensor(bbb.init_weights(lay, 0), device=dev)
    rho = torch.full_like(mu, -5.0)
    prior = bbb.ScaleMixturePrior(0.5, 1.0, float(np.exp(-6)), device=dev)
    s = bbb.TrainSettings(epochs=1, batch_size=128, lr=1e-3, mc_test=10)
    gens = bbb.Generators.from_seed(1, dev)
    bbb.fit_variational(mu, rho, x[:2048], y[:2048], lay, prior, s, gens)  # warm-up
    _sync(dev)
    t = time.perf_counter()
    bbb.fit_variational(mu, rho, x, y, lay, prior, s, gens)
    _sync(dev)
    out["bbb_epoch_s"] = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(2):
        bbb.predict_proba(x[:10000], lay, mu, torch.nn.functional.softplus(rho), 10, gens.eval)
    _sync(dev)
    out["bbb_eval_s"] = time.perf_counter() - t
    w = mu.clone()
    t = time.perf_counter()
    bbb.fit_deterministic(w, x, y, lay, s, gens, (0.2, 0.5))
    _sync(dev)
    out["dropout_epoch_s"] = time.perf_counter() - t
    # one VIRTUAL round: 10 clients, 20 epochs each of 600 images, batch 20
    lay2 = bbb.make_layout(784, [100, 100], 10, bias=False)
    xs = x[:6000].cpu().numpy()
    ys = y[:6000].cpu().numpy()
    s2 = bbb.TrainSettings(
        epochs=20, batch_size=20, optimizer="sgd", lr=5e-5, kl_weight=0.006, mc_test=10
    )
    eta0 = list(bbb.gaussian_natural(lay2.n_params, 1.0))
    init = (bbb.init_weights(lay2, 0), np.full(lay2.n_params, -4.85, np.float32))
    cs = [
        centre.PVICentre(
            f"c{i}",
            i,
            xs[600 * i : 600 * i + 600],
            ys[600 * i : 600 * i + 600],
            xs[:100],
            ys[:100],
            lay2,
            s2,
            i,
            init,
            eta0,
            device=dev,
        )
        for i in range(10)
    ]
    strat = server.Scheduled(server.NaturalSum(var_max=1.0), "synchronous", None, 0)
    t = time.perf_counter()
    federate(
        cs,
        server.serve(strat, eta0, 1, {"epochs": 20, "damping": 0.6}, protocols.pvi_delta(3)),
        ledger=Ledger(),
    )
    _sync(dev)
    out["virtual_round_s"] = time.perf_counter() - t
    print(json.dumps(out, indent=1))
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
