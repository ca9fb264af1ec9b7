"""Issue 24: what secure aggregation costs a FedAvg round and DP-SGD a local epoch, rows of
the performance table (:func:`privacy_benchmark`; sizes: config ``perf.privacy``, schema
defaults)."""

from __future__ import annotations

import time

import numpy as np

from ..federation import Ledger
from .hac import per_center


def privacy_benchmark(
    seed: int, *, n: int, centres: int, rounds: int, repeat: int = 1
) -> list[dict]:
    """Issue 24: (1) secure aggregation's overhead per FedAvg round — DEC's federated TSAE
    ([64, 64, 128, 10] on MDS-shaped binary data, ``centres`` centres, one local epoch) with
    secure aggregation on vs off, in-process, mean round time (the key set-up, once per run,
    is reported beside it); (2) DP-SGD's overhead per epoch — one local epoch of DP-SGD vs
    plain minibatch SGD at the same batch size: on the tied TSAE (per-sample gradients by
    torch.func) and on an ``nn.Sequential`` MLP of the same widths (Opacus' hooks). Sizes: config
    ``perf.privacy`` (schema defaults)."""
    import torch

    from ..dec.federated import AE_FIT, DECClient
    from ..dec.model import TSAE, DECModel, encoder_dims, get_parameters
    from ..federation import FedAvg, History, PrivacySettings, federate, run_rounds
    from ..federation.dpsgd import DPSGD

    gen = np.random.default_rng(seed)
    x = (gen.random((n, 54)) < 0.2).astype(np.float32)
    part = np.arange(n) % centres
    dims = encoder_dims(54, [64, 64, 128, 10])

    def make_model() -> DECModel:
        return DECModel(TSAE(dims), 6, 1.0)

    torch.manual_seed(seed)
    w0 = get_parameters(make_model().tsae)
    cfg = {"stage": "ae", "optimizer": "sgd", "lr": 0.1, "batch_size": 32, "epochs": 1,
           "loss": "mse", "shuffle": True}  # fmt: skip

    def fedavg(secure: bool) -> tuple[float, float, Ledger]:
        clients = [DECClient(f"center_{c}", x[part == c], make_model, "cpu", c)
                   for c in range(centres)]  # fmt: skip
        hist, led = History(), Ledger()
        t0 = time.perf_counter()
        federate(clients, lambda ps: run_rounds(
            ps, FedAvg(), w0, rounds, cfg, AE_FIT, history=hist,
            privacy=PrivacySettings(secure_aggregation=secure)), ledger=led)  # fmt: skip
        total = time.perf_counter() - t0
        return float(np.mean(hist.seconds)), total - float(np.sum(hist.seconds)), led

    fedavg(False)  # warm-up (imports, first torch calls)
    plain = min(fedavg(False)[0] for _ in range(repeat))
    runs = [fedavg(True) for _ in range(repeat)]
    secure, setup, led = min(runs, key=lambda r: r[0])
    n_par = int(sum(w.size for w in w0))
    _, fmean = per_center(led)
    rows = [{
        "method": "secure aggregation",
        # the key set-up's time in its own column: `objects` is copied into the section JSON,
        # which must be byte-identical across runs (issue 30 item 7)
        "objects": f"FedAvg round, {centres} centres, TSAE of {n_par} parameters, {n} samples "
        "(key set-up once per run: setup_seconds)",
        "linkage": "", "seconds": secure, "pooled_seconds": plain, "ratio": secure / plain,
        "setup_seconds": setup,
        "floats_per_center_max": np.nan, "floats_per_center_mean": fmean,
        "messages": led.n_messages, "rounds": rounds, "center_madds_max": np.nan,
    }]  # fmt: skip

    def mse(out, y):
        return ((out - y) ** 2).mean(1)

    xt = torch.as_tensor(x[: max(n // centres, 64)])

    def epoch(model, dp: bool) -> float:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(seed)
        t0 = time.perf_counter()
        if dp:
            DPSGD(1.0, 1.0, 32).epoch(model, list(model.parameters()), opt, xt, xt, mse, g)
        else:
            perm = torch.randperm(len(xt), generator=g)
            for i in range(0, len(xt), 32):
                opt.zero_grad()
                mse(model(xt[perm[i : i + 32]]), xt[perm[i : i + 32]]).mean().backward()
                opt.step()
        return time.perf_counter() - t0

    def mlp() -> torch.nn.Sequential:  # the TSAE's widths, untied: Opacus' own layers
        widths = dims + dims[-2::-1]
        layers: list[torch.nn.Module] = []
        for a, b in zip(widths[:-1], widths[1:], strict=True):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers[:-1])

    models = {"DP-SGD (TSAE, torch.func)": lambda: TSAE(dims), "DP-SGD (MLP, Opacus)": mlp}
    for name, build in models.items():
        epoch(build(), True)  # warm-up
        dp_s = min(epoch(build(), True) for _ in range(max(repeat, 1)))
        sgd_s = min(epoch(build(), False) for _ in range(max(repeat, 1)))
        rows.append({
            "method": name, "objects": f"one local epoch, {len(xt)} samples, batch 32",
            "linkage": "", "seconds": dp_s, "pooled_seconds": sgd_s, "ratio": dp_s / sgd_s,
            "floats_per_center_max": np.nan, "floats_per_center_mean": np.nan,
            "messages": np.nan, "rounds": np.nan, "center_madds_max": np.nan,
        })  # fmt: skip
    return rows
