"""Server functions of the generative stage: they talk to the centres only through their
proxies (``proxy.call``, :func:`fedclust.federation.run_rounds`) and combine messages, never
sample matrices. Each is ``server(proxies, ...)``; the experiment binds the extra arguments and
hands it to :func:`fedclust.federation.federate`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedclust.federation import History, make_strategy, run_rounds

from . import protocols as P
from .data import scaler_from_moments
from .likelihoods import FeatureSpec


def standardise(proxies: Sequence[Any], spec: FeatureSpec, min_samples: int) -> dict | None:
    """Federated standardisation of the gaussian columns: each centre's moments
    (``generative_moments``) → global mean / SD → back to every centre. Returns the global
    (mean, sd) of those columns (None when there is none: nothing is sent)."""
    cols = np.asarray([j for j, k in enumerate(spec.kinds) if k == "gaussian"], dtype=np.int64)
    if not cols.size:
        return None
    parts = []
    for proxy in proxies:
        msg = proxy.call(
            "moments", {"columns": cols}, 0, "moments", P.moments(min_samples), P.MOMENTS_REQUEST
        )
        if msg is not None:
            parts.append(msg)
    if not parts:
        raise RuntimeError("every centre abstained from the federated standardisation")
    sc = scaler_from_moments(parts, spec.subset(cols))
    ack = P.received("generative_standardised", min_samples)
    for proxy in proxies:
        proxy.call(
            "standardise",
            {"columns": cols, "mean": sc.mean, "sd": sc.sd},
            0,
            "standardise",
            ack,
            P.MOMENTS_GLOBAL,
        )
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
    for proxy in proxies:
        proxy.call(
            "receive_global",
            {"parameters": params},
            int(rounds) + 1,
            f"{label}_final",
            ack,
            P.MODEL_GLOBAL,
        )
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


def virtual_patients(
    proxies: Sequence[Any], good: str, poor: str, n_virtual: int, min_samples: int
) -> int:
    """Once: the good node's virtual patients (``savae_virtual_patients``) relayed to the poor
    node (D6.2 §6.5.2, Fig. 6.12). Returns how many rows were relayed (0: the good node
    abstained)."""
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
    by[poor].call(
        "receive_virtual",
        relay,
        0,
        "virtual_relay",
        P.received("savae_virtual_received", min_samples),
        P.VIRTUAL_RELAY,
    )
    return int(len(msg["x"]))
