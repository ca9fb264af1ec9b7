"""FedCRef (seed 002 Algorithm 1) with its group FedAvg under central DP-FedAvg (issue 24).

Step 3 of FedCRef trains one autoencoder per group of associated clusters by FedAvg on the
federation core's round loop (:func:`fedclust.fedcref.algorithm.train_group`). Here that loop
runs under the core's central DP-FedAvg (:mod:`fedclust.federation.privacy`, McMahan et al.
2018): each member (one local cluster of a client) clips its round update to L2 norm C
(``clip``) at the member, before the message leaves; the group's aggregator sums the clipped
updates and adds N(0, (z·C)²) once to the sum. Secure aggregation is on as configured
(``privacy_utility.secure_aggregation``, default true): the group's server receives masked
shares (:mod:`fedclust.federation.secagg`, one session per group loop) and learns only their
sum. Under privacy a client with several clusters in one group trains its first one only (one
share per centre and round).
Nothing else changes: the stage's own centres, round loop and refinement
(:func:`fedclust.fedcref.experiments.run_setting`). No second FedAvg here.

Unit and composition. A record lies in one local cluster, i.e. in at most one member of one
group per iteration, so it takes part in ``rounds`` Gaussian releases (Δ₂ = C) per iteration
in which its cluster is grouped, at most ``max_iterations × rounds`` in the run; z is
calibrated (the accountant, RDP) so that this many releases spend exactly ε (record level;
each group's loop is told the ε of its own ``rounds`` releases at that z). The budget rows give
each client the releases its clusters actually took part in (iterations in which one of its
clusters was grouped × rounds) and the ε those spent.

**Not privatised** (stated in the report): Step 1's local autoencoders, sent all-to-all
in the clear (every client's locally trained models!), Step 2's association statistics and
the graph builder's membership table, Step 4's status messages, and the sizes ``n``. Only the
group models are differentially private; the run as a whole is not (ε bounds what the group
models reveal, not what the local models do).

ε = ∞: the stage's own run (the ``fedcref`` variant of :func:`run_setting`, no clipping, no
noise). Isolated: the stage's ``local_only`` variant (refinement with the local models only);
pooled: k-means with K = |U| on the pooled samples of all clients (the stage's cross-method
reference), mean Hungarian accuracy over clients. Headline: the mean Hungarian accuracy of
the refined clusters over clients (the stage's ``acc_end``).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError
from fedclust.federation import privacy as PV
from fedclust.seeds import derive_seed

from .records import budget_rows, curve_row, epsilons, frames, noise_multiplier, settings_for, spent
from .workflow import OFFLINE  # the glyph sources that need no downloaded file


def stage_cfg(fcfg: dict[str, Any], m: dict[str, Any]) -> dict[str, Any]:
    """The fedcref section (schema-filled) at the privacy–utility sizes of ``m``."""
    from fedclust.config import defaults_at

    cfg = copy.deepcopy(defaults_at(fcfg, ["fedcref"]))
    cfg["system"] = {**cfg["system"], "n_clients": int(m["n_clients"]),
                     "samples_per_class": int(m["samples_per_class"])}  # fmt: skip
    cfg["autoencoder"] = {**cfg["autoencoder"], "hidden": [int(h) for h in m["hidden"]],
                          "epochs": int(m["epochs"]),
                          "batch_size": int(m["batch_size"])}  # fmt: skip
    cfg["federated"] = {**cfg["federated"], "rounds": int(m["rounds"]),
                        "first_epochs": int(m["first_epochs"]),
                        "later_epochs": int(m["later_epochs"])}  # fmt: skip
    cfg["stopping"] = {**cfg["stopping"], "max_iterations": int(m["max_iterations"])}
    cfg["device"] = "cpu"  # the privacy–utility job asks for no GPU
    ds = str(m["dataset"])
    spec = cfg["datasets"].get(ds) or ({"source": ds} if ds in OFFLINE else None)
    if spec is None or spec.get("source") not in OFFLINE:
        raise ConfigError(
            f"privacy_utility.fedcref.dataset {ds!r} is not an offline glyph dataset",
            where="privacy_utility.fedcref.dataset",
            fix=f"one of {OFFLINE}, or a fedcref.datasets entry whose source is one of them",
        )
    spec = dict(spec)
    spec.pop("system", None)  # the privacy–utility sizes hold
    cfg["datasets"] = {ds: spec}
    return cfg


def setting_of(m: dict[str, Any]) -> dict[str, Any]:
    """The stage's setting (Exp. 2 shape): dirty-uniform initial clusters."""
    return {"dataset": str(m["dataset"]), "init": "dirty_uniform",
            "dirtiness": float(m["dirtiness"])}  # fmt: skip


def pooled_accuracy(cfg, setting, x, y, seed: int) -> float:
    """k-means with K = |U| on the pooled samples of the clients, mean Hungarian accuracy
    over clients (:func:`fedclust.fedcref.experiments.cross_method`'s first reference)."""
    from sklearn.cluster import KMeans

    from fedclust.fedcref.system import system_for
    from fedclust.metrics.assignment import hungarian_accuracy

    clients = system_for(cfg, setting, y, seed)
    idx = np.unique(np.concatenate([c.idx for c in clients]))
    pos = {j: i for i, j in enumerate(idx)}
    km = KMeans(len(np.unique(y[idx])), n_init=10,
                random_state=derive_seed(seed, "pkm") % (2**31))  # fmt: skip
    lab = km.fit_predict(x[idx])
    return float(np.mean([hungarian_accuracy(lab[[pos[j] for j in c.idx]], c.y)
                          for c in clients]))  # fmt: skip


def client_releases(rows: list[dict[str, Any]], rounds: int) -> dict[str, int]:
    """Per client: ``rounds`` × the iterations in which one of its clusters was a group member
    (from the round loops' budget records: label ``fedcref it <i> group ...``, members
    ``c000`` or ``c000/q1``)."""
    its: dict[str, set[int]] = {}
    for r in rows:
        it = int(str(r["label"]).split()[2])
        for member in r["centres"]:
            its.setdefault(str(member).split("/")[0], set()).add(it)
    return {c: rounds * len(v) for c, v in its.items()}


def run_fedcref(fcfg: dict[str, Any], cfg: dict[str, Any], seed: int) -> tuple[pd.DataFrame, ...]:
    """FedCRef over ε × seeds (``fcfg``: the fedcref section, for its association, stopping
    and training settings and datasets; ``cfg``: ``privacy_utility``); module docstring."""
    from fedclust.data.glyphs import load_glyphs
    from fedclust.fedcref.experiments import run_setting

    m, delta = cfg["fedcref"], float(cfg["delta"])
    stage = stage_cfg(fcfg, m)
    setting = setting_of(m)
    theta, rounds = float(m["theta"]), int(m["rounds"])
    releases = int(m["max_iterations"]) * rounds
    x, y = load_glyphs(stage["datasets"][setting["dataset"]], [],
                       derive_seed(seed, "glyphs", setting["dataset"]))  # fmt: skip
    curve, budget = [], []
    for sd in range(int(cfg["seeds"])):
        s_seed = derive_seed(seed, "pu", "fedcref", sd)
        names = [f"c{i:03d}" for i in range(int(m["n_clients"]))]
        for eps in epsilons(cfg["epsilons"]):
            if math.isinf(eps):  # the stage's own run, and its local-only variant
                _, summ, _ = run_setting(stage, setting, x, y, s_seed, theta,
                                         ["fedcref", "local_only"])  # fmt: skip
                acc = {r["variant"]: r["acc_end"] for r in summ}
                curve.append(curve_row("fedcref", "federated", eps, sd, "accuracy",
                                       acc["fedcref"]))  # fmt: skip
                curve.append(curve_row("fedcref", "isolated", eps, sd, "accuracy",
                                       acc["local_only"]))  # fmt: skip
                continue
            z = noise_multiplier(eps, delta, releases)
            st = settings_for(
                spent(z, rounds, delta),
                cfg,
                derive_seed(seed, "pu", "fedcref", eps, sd),
                float(m["clip"]),
            )
            PV.budget_rows(reset=True)
            with PV.using(st):
                _, summ, _ = run_setting(stage, setting, x, y, s_seed, theta, ["fedcref"])
            rows = PV.budget_rows(reset=True)
            curve.append(curve_row("fedcref", "federated", eps, sd, "accuracy",
                                   summ[0]["acc_end"]))  # fmt: skip
            z_used = float(rows[0]["noise_multiplier"]) if rows else z
            per = client_releases(rows, rounds)
            for c in names:
                n = per.get(c, 0)
                budget += budget_rows(
                    "fedcref",
                    eps,
                    sd,
                    [c],
                    "central DP-FedAvg on the group models (gaussian on the sum)",
                    n,
                    z_used,
                    spent(z_used, n, delta) if n else 0.0,
                    delta,
                )
        curve.append(curve_row("fedcref", "pooled", math.inf, sd, "accuracy",
                               pooled_accuracy(stage, setting, x, y, s_seed)))  # fmt: skip
    return frames(curve, budget)
