"""Server functions of the generative stage: they talk to the centres only through their
proxies (``proxy.call``, :func:`fedclust.federation.run_rounds`) and combine messages, never
sample matrices. Each is ``server(proxies, ...)``; the experiment binds the extra arguments and
hands it to :func:`fedclust.federation.federate`. A request that goes to every centre goes
through :func:`fedclust.federation.call_all` (all at once on a deployment)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fedclust.federation import History, call_all, make_strategy, run_rounds

from . import protocols as P
from .data import scaler_from_moments
from .likelihoods import FeatureSpec

log = logging.getLogger(__name__)


def standardise(proxies: Sequence[Any], spec: FeatureSpec, min_samples: int) -> dict | None:
    """Federated standardisation of the gaussian columns: each centre's moments
    (``generative_moments``) → global mean / SD → back to every centre. Returns the global
    (mean, sd) of those columns (None when there is none: nothing is sent)."""
    cols = np.asarray([j for j, k in enumerate(spec.kinds) if k == "gaussian"], dtype=np.int64)
    if not cols.size:
        return None
    msgs = call_all(proxies, "moments", {"columns": cols}, 0, "moments", P.moments(min_samples),
                    P.MOMENTS_REQUEST)  # fmt: skip
    parts = [m for m in msgs if m is not None]
    if not parts:
        raise RuntimeError("every centre abstained from the federated standardisation")
    sc = scaler_from_moments(parts, spec.subset(cols))
    ack = P.received("generative_standardised", min_samples)
    call_all(proxies, "standardise", {"columns": cols, "mean": sc.mean, "sd": sc.sd}, 0,
             "standardise", ack, P.MOMENTS_GLOBAL)  # fmt: skip
    return {"mean": sc.mean, "sd": sc.sd}


def fedavg(
    proxies: Sequence[Any],
    init: list[np.ndarray],
    rounds: int,
    local_epochs: int,
    protocol,
    label: str,
    min_samples: int,
) -> tuple[list[np.ndarray], History]:
    """FedAvg (the core's ``fedavg`` strategy on the one round loop): ``rounds`` rounds of
    ``local_epochs`` local epochs from ``init``, then the final global model to every centre
    (``generative_global_model``)."""
    hist = History()
    params = run_rounds(
        proxies,
        make_strategy("fedavg"),
        init,
        int(rounds),
        {"epochs": int(local_epochs)},
        protocol,
        kind=label,
        label=label,
        history=hist,
    )
    ack = P.received(f"{label}_received", min_samples)
    call_all(proxies, "receive_global", {"parameters": params}, int(rounds) + 1, f"{label}_final",
             ack, P.MODEL_GLOBAL)  # fmt: skip
    return params, hist


def federated_training(
    proxies: Sequence[Any],
    spec: FeatureSpec,
    init: list[np.ndarray],
    rounds: int,
    local_epochs: int,
    protocol,
    label: str,
    min_samples: int,
) -> tuple[list[np.ndarray], History]:
    """Federated standardisation, then FedAvg (SAVAE and DGD)."""
    standardise(proxies, spec, min_samples)
    return fedavg(proxies, init, rounds, local_epochs, protocol, label, min_samples)


def savae_fedavg(
    proxies: Sequence[Any],
    spec: FeatureSpec,
    init: list[np.ndarray],
    rounds: int,
    local_epochs: int,
    min_samples: int,
) -> tuple[list[np.ndarray], History]:
    """SAVAE's federated training (D6.2 §6.6, the good node / poor node test's FedAvg arm):
    the federated standardisation, then ``rounds`` FedAvg rounds under ``savae_fit`` — what
    :func:`.experiment.run_savae` runs in-process and the deployed stage
    (:mod:`.deployment`) runs on Flower."""
    return federated_training(proxies, spec, init, rounds, local_epochs,
                              P.savae_fit(min_samples), "savae_fit", min_samples)  # fmt: skip


def dgd_fedavg(
    proxies: Sequence[Any],
    spec: FeatureSpec,
    init: list[np.ndarray],
    rounds: int,
    local_epochs: int,
    min_samples: int,
) -> tuple[list[np.ndarray], History]:
    """The DGD's federated training: the federated standardisation, then FedAvg of the decoder
    and the mixture under ``dgd_fit`` (the representations stay at their centres) — what
    :func:`.experiment.run_dgd` runs in-process and the deployed stage runs on Flower."""
    return federated_training(proxies, spec, init, rounds, local_epochs,
                              P.dgd_fit(min_samples), "dgd_fit", min_samples)  # fmt: skip


def virtual_patients(
    proxies: Sequence[Any], good: str, poor: str, n_virtual: int, min_samples: int,
    on_relay: Callable[[dict[str, Any]], None] | None = None,
) -> int:  # fmt: skip
    """Once: the good node's virtual patients (``savae_virtual_patients``) relayed to the poor
    node (D6.2 §6.5.2, Fig. 6.12). Returns how many rows were relayed (0: the good node
    abstained); ``on_relay``: called with the relay message (what the server sends on)."""
    by = {p.cid: p for p in proxies}
    msg = by[good].call(
        "virtual_patients",
        {"n_virtual": int(n_virtual)},
        0,
        "virtual",
        P.virtual_patients(min_samples),
        P.VIRTUAL_REQUEST,
    )
    if msg is None:
        return 0
    relay = {"x": msg["x"], "y": msg["y"], "t": msg["t"]}
    if on_relay is not None:
        on_relay(relay)
    by[poor].call(
        "receive_virtual",
        relay,
        0,
        "virtual_relay",
        P.received("savae_virtual_received", min_samples),
        P.VIRTUAL_RELAY,
    )
    return int(len(msg["x"]))


def radialgan(proxies: Sequence[Any], iterations: int, batch_size: int, rule: str,
              min_samples: int) -> dict[str, Any]:  # fmt: skip
    """RadialGAN training and augmentation (D6.2 ch. 5) with the latent codes as the only
    cross-centre payload: per iteration every centre's minibatch codes go to every other
    centre (``radialgan_codes`` → relay), each centre returns the gradient of its loss with
    respect to them (``radialgan_code_grads``), which the server sums per sender and sends back
    (``radialgan_grads_relay``) for the joint F/G step. Then every centre's training codes go
    to every other centre once (eq. 5.8) and each reports its downstream AUC without / with the
    augmented data (``radialgan_evaluation``). Each exchange goes to every centre at once
    (:func:`~fedclust.federation.call_all`: in parallel on a deployment, one after another and
    in the same order in-process). α_ij from the centres' counts (``rule``)."""
    from .radialgan import alpha

    codes_p, grads_p = P.radialgan_codes(min_samples), P.radialgan_code_grads(min_samples)
    ack = P.received("radialgan_applied", min_samples)
    losses: list[float] = []
    sizes: dict[str, int] = {}
    for it in range(1, int(iterations) + 1):
        codes = {}
        msgs = call_all(proxies, "encode", {"batch": int(batch_size)}, it, "codes", codes_p,
                        P.CODES_REQUEST)  # fmt: skip
        for p, msg in zip(proxies, msgs, strict=True):
            if msg is not None:
                codes[p.cid] = msg["z"]
                sizes[p.cid] = int(msg["n"])
        ids = list(codes)
        if len(ids) < 2:  # nobody to exchange with: the centres' own settings refused it
            log.warning("RadialGAN: %d centre(s) released latent codes; no training", len(ids))
            break
        a = alpha([sizes[c] for c in ids], rule)
        grads = {c: np.zeros_like(codes[c]) for c in ids}
        by = {p.cid: p for p in proxies}
        others = [[j for j in range(len(ids)) if j != i] for i in range(len(ids))]
        msgs = call_all([by[c] for c in ids], "step",
                        [{"codes": [codes[ids[j]] for j in o],
                          "alpha": np.asarray([a[i, j] for j in o]), "train": 1}
                         for i, o in enumerate(others)], it, "step", grads_p,
                        P.CODES_RELAY)  # fmt: skip
        total = 0.0
        for o, msg in zip(others, msgs, strict=True):
            for j, g in zip(o, msg["z_grad"], strict=True):
                grads[ids[j]] = grads[ids[j]] + np.asarray(g)
            total += float(msg["loss"])
        applied = [p for p in proxies if p.cid in grads]
        call_all(applied, "apply", [{"z_grad": grads[p.cid]} for p in applied], it, "apply",
                 ack, P.GRADS_RELAY)  # fmt: skip
        losses.append(total)
    # augmentation (eq. 5.8) and evaluation
    it = int(iterations) + 1
    codes = {}
    msgs = call_all(proxies, "encode", {"all": 1}, it, "codes_all", codes_p, P.CODES_REQUEST)
    for p, msg in zip(proxies, msgs, strict=True):
        if msg is not None:
            codes[p.cid] = msg["z"]
    ev = P.radialgan_evaluation(min_samples)
    reqs = [{"codes": [codes[c] for c in codes if c != p.cid],
             "alpha": np.zeros(len([c for c in codes if c != p.cid])), "train": 0}
            for p in proxies]  # fmt: skip
    msgs = call_all(proxies, "augment", reqs, it, "augment", ev, P.CODES_RELAY)
    out = {p.cid: msg for p, msg in zip(proxies, msgs, strict=True) if msg is not None}
    return {"evaluation": out, "sizes": sizes, "losses": losses, "released": sorted(codes)}
