"""Time one unit of the fanned-out hac / attack rules at (scaled) thesis settings (issue 14).

    OMP_NUM_THREADS=1 python benchmarks/fanout_units.py hac --n 1100 --d 2000 --seeds 1
    OMP_NUM_THREADS=1 python benchmarks/fanout_units.py pi --n 3000 --d 2000 --epochs 2
    OMP_NUM_THREADS=1 python benchmarks/fanout_units.py pi-step --d 12000 --k 1000

``hac``: a synthetic TCGA-shaped cohort (n samples, d genes, 7 region centers with the BRCA
region shares, 5 clusters) through one gradual unit (sf, Euclidean, average: the heaviest, two
δ variants), one simultaneous unit (average) and one projection unit (vst, Euclidean, the
thesis' 8 sketch sizes, ``--seeds`` seeds); ``pi``: one property-inference unit (one Gaussian
k, one run, d_NN 2048, 3 learning rates) for ``--epochs`` epochs. Prints wall and CPU seconds
per unit (on a shared machine the CPU time is the figure) and the peak RSS; run twice with
different n / d / epochs to separate the fixed and the scaling cost (docs/RESOURCES.md says
how the thesis figures were extrapolated).
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np


def _thesis() -> dict:
    """config/thesis.yaml as the workflow sees it (schema defaults filled)."""
    from fedclust.config import load_config_file, validate_config

    return validate_config(load_config_file("config/thesis.yaml"))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hac(n: int, d: int, seeds: int, units: list[str]) -> None:
    from fedclust.hac import workflow as hw

    cfg = _thesis()["hac"]
    cfg["projection"]["seeds"] = seeds
    cfg["fanout"] = {"per_unit": True, "seed_block": seeds}
    g = np.random.default_rng(0)
    shares = np.array([0.31, 0.2, 0.16, 0.12, 0.1, 0.07, 0.04])
    centers = np.sort(g.choice(7, size=n, p=shares))
    lab = g.choice(5, size=n, p=[0.44, 0.24, 0.19, 0.11, 0.02])
    means = g.standard_normal((5, d)) * 0.5
    vst = means[lab] + g.standard_normal((n, d))
    data = {"vst": vst, "sf": np.exp(vst)}
    todo = {
        "gradual": hw.Unit("gradual", "sf", "euclidean", "average"),
        "simultaneous": hw.Unit("simultaneous", "sf", "euclidean", "average"),
        "projection": hw.Unit("projection", "vst", "euclidean", None, "geometric", (0, seeds)),
    }
    for name in units:
        u = todo[name]
        t, c = time.perf_counter(), time.process_time()
        if name == "projection":
            hw.run_projection(data, centers, cfg, u, "X", 1)
        elif name == "gradual":
            hw.run_gradual(data, centers, cfg, u, "X")
        else:
            hw.run_simultaneous(data, centers, cfg, u, "X")
        el, cpu = time.perf_counter() - t, time.process_time() - c
        print(
            f"hac {name} n={n} d={d} seeds={seeds}: {el:.1f} s wall, {cpu:.1f} s CPU, "
            f"peak RSS {_peak_mb():.0f} MB"
        )


def pi(n: int, d: int, epochs: int, k: int) -> None:
    import pandas as pd
    import torch

    from fedclust.attacks.property_inference import TrainSpec, run_property_inference

    torch.set_num_threads(1)
    cfg = _thesis()["attacks"]["property_inference"]
    g = np.random.default_rng(0)
    sex = g.choice(["female", "male"], size=n)
    counts = g.negative_binomial(5, 0.05, size=(n, d)) + 1
    idx = [f"s{i}" for i in range(n)]
    counts = pd.DataFrame(counts, index=idx, columns=[f"g{j}" for j in range(d)])
    obs = pd.DataFrame({"sex": sex, "cohort": "X"}, index=idx)
    spec = TrainSpec(
        d_nn=cfg["d_nn"],
        d_nn_small=cfg["d_nn_small"],
        small_input=cfg["small_input"],
        lrs=tuple(cfg["lrs"]),
        epochs=epochs,
        batch_size=cfg["batch_size"],
    )
    t, c = time.perf_counter(), time.process_time()
    run_property_inference(
        counts,
        obs,
        conditions=[{"kind": "gaussian", "k": k}],
        n_runs=1,
        spec=spec,
        seed=1,
        genes="all",
    )
    el, cpu = time.perf_counter() - t, time.process_time() - c
    print(
        f"pi gaussian({k}) n={n} d={d} epochs={epochs}: {el:.1f} s wall, {cpu:.1f} s CPU, "
        f"peak RSS {_peak_mb():.0f} MB"
    )


def pi_step(d: int, k: int, steps: int) -> None:
    """Per-batch costs of a property-inference unit: one Adam step of the thesis classifier
    (d_NN 2048, batch 64, input k) and one fresh d × k Gaussian matrix (invariant training; drawn
    by a CPU generator even when training on a GPU)."""
    import torch

    from fedclust.attacks.nets import SexClassifier, random_projection

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    model = SexClassifier(k, 2048 if k > 100 else 1024)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    xb, yb = torch.randn(64, k), torch.randint(0, 2, (64,)).float()
    loss = torch.nn.BCEWithLogitsLoss()
    c = time.process_time()
    for _ in range(steps):
        opt.zero_grad()
        loss(model(xb), yb).backward()
        opt.step()
    step = (time.process_time() - c) / steps
    c = time.process_time()
    for _ in range(steps):
        random_projection(d, k, "gaussian", gen)
    draw = (time.process_time() - c) / steps
    n_par = sum(p.numel() for p in model.parameters())
    print(
        f"pi step k={k} ({n_par / 1e6:.0f} M parameters): {step:.3f} s CPU per Adam step; "
        f"fresh {d} x {k} Gaussian: {draw:.3f} s CPU; peak RSS {_peak_mb():.0f} MB"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("what", choices=["hac", "pi", "pi-step"])
    ap.add_argument("--n", type=int, default=1100)
    ap.add_argument("--d", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--units", default="gradual,simultaneous,projection")
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    if a.what == "hac":
        hac(a.n, a.d, a.seeds, a.units.split(","))
    elif a.what == "pi":
        pi(a.n, a.d, a.epochs, a.k)
    else:
        pi_step(a.d, a.k, a.steps)


if __name__ == "__main__":
    main()
