"""Experiments 1–4 (seed 002 §5.4): settings from config, one run = one (experiment, setting,
repetition) on one client system, every variant (FedCRef / Perfect Associations / local-only)
on the same system and the same initial partition; evaluation against the true labels."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError
from fedclust.federation import INPROCESS, Transport
from fedclust.metrics.assignment import hungarian_accuracy
from fedclust.seeds import derive_seed

from .algorithm import Client, FedCRefParams, run_fedcref
from .association import Node, ideal_edges, node_classes, wrong_clusters, wrong_links
from .init import initial_partition
from .settings import EXPERIMENTS, settings  # noqa: F401  (re-exported)
from .system import system_for

log = logging.getLogger(__name__)


def make_evaluator(ys: list[np.ndarray]):
    def evaluate(clients: list[Client], groups, isolated, edges, pre_labels) -> dict[str, Any]:
        nc = node_classes(pre_labels, ys)
        nodes = sorted(nc)
        ideal = set(ideal_edges(nodes, nc))
        accs = [hungarian_accuracy(c.labels, y) for c, y in zip(clients, ys, strict=True)]
        tp = sum(1 for e in edges if e in ideal)
        return {
            "acc": float(np.mean(accs)),
            "wrong_links": wrong_links(edges, nc),
            "wrong_clusters": wrong_clusters(groups, nc),
            "precision": tp / len(edges) if edges else float("nan"),
            "recall": tp / len(ideal) if ideal else float("nan"),
            "empty_clusters": int(sum(c.k - len(np.unique(c.labels)) for c in clients)),
        }

    return evaluate


def perfect_oracle(ys: list[np.ndarray]):
    def oracle(clients: list[Client], nodes: list[Node]) -> list:
        nc = node_classes([c.labels for c in clients], ys)
        return ideal_edges(nodes, nc)

    return oracle


def run_setting(
    cfg: dict,
    setting: dict,
    x_pool: np.ndarray,
    y_pool: np.ndarray,
    seed: int,
    theta: float,
    variants: list[str] | None = None,
    side_theta: float | None = None,
    transport: Transport = INPROCESS,
) -> tuple[pd.DataFrame, list[dict[str, Any]], pd.DataFrame]:
    """One repetition: (per-iteration history, per-variant summaries, ledger summary). The
    variant ``fedcref_calibrated`` is FedCRef at ``side_theta`` (the calibrated θ). Every run's
    messages go through ``transport`` (the rule script's, ``federation.engine``)."""
    clients = system_for(cfg, setting, y_pool, seed)
    xs = [x_pool[c.idx] for c in clients]
    ys = [c.y for c in clients]
    ks = [c.k for c in clients]
    t0 = time.perf_counter()
    init = [
        initial_partition(
            setting["init"],
            x,
            y,
            k,
            derive_seed(seed, "init", c.cid),
            cfg["dec"],
            float(setting.get("dirtiness", 0.0)),
        )
        for x, y, k, c in zip(xs, ys, ks, clients, strict=True)
    ]
    init_seconds = time.perf_counter() - t0
    hist, summ, ledgers = [], [], []
    real_k = len(np.unique(np.concatenate(ys)))
    holders = pd.Series([c for y in ys for c in np.unique(y)]).value_counts()
    ideal_k = int((holders >= 2).sum())
    for v in variants or list(setting.get("variants", cfg["variants"])):
        if v == "fedcref_calibrated" and side_theta is None:
            raise ConfigError(
                "the variant fedcref_calibrated needs the calibrated θ",
                where="fedcref.variants",
                fix="pass the calibration (rule fedcref_calibrate)",
            )
        p = FedCRefParams.from_config(cfg, side_theta if v == "fedcref_calibrated" else theta)
        mode = "fedcref" if v == "fedcref_calibrated" else v
        res = run_fedcref(xs, init, ks, p, seed, mode, make_evaluator(ys), perfect_oracle(ys),
                          transport)  # fmt: skip
        h = pd.DataFrame(res.history).assign(variant=v)
        hist.append(h)
        last, first = res.history[-1], res.history[0]
        it_secs = [r["seconds"] for r in res.history[1:]]
        it_cpu = [r["cpu_seconds"] for r in res.history[1:]]
        summ.append(
            {
                "variant": v,
                "n_clients": len(clients),
                "real_k": real_k,
                "ideal_k": ideal_k,
                "sum_k": int(sum(ks)),
                "theta": p.theta,
                "acc_init": first["acc"],
                "acc_end": last["acc"],
                "improvement_pct": (last["acc"] - first["acc"]) / first["acc"] * 100.0,
                "groups_end": last["groups"],
                "wrong_links_end": last["wrong_links"],
                "wrong_clusters_end": last["wrong_clusters"],
                "isolated_start": first["isolated"],
                "isolated_end": last["isolated"],
                "iterations": res.iterations,
                "stop_reason": res.stop_reason,
                "seconds_per_iteration": float(np.mean(it_secs)) if it_secs else 0.0,
                "cpu_seconds_per_iteration": float(np.mean(it_cpu)) if it_cpu else 0.0,
                "init_seconds": init_seconds,
                "messages": res.ledger.n_messages,
                "floats": res.ledger.n_floats,
            }
        )
        t = res.ledger.table()
        if not t.empty:
            g = t.groupby("kind")
            ledgers.append(
                pd.DataFrame({"messages": g.size(), "floats": g["floats"].sum()})
                .reset_index()
                .assign(variant=v)
            )
    led = pd.concat(ledgers, ignore_index=True) if ledgers else pd.DataFrame()
    return pd.concat(hist, ignore_index=True), summ, led


def cross_method(
    cfg: dict,
    setting: dict,
    x_pool,
    y_pool,
    seed: int,
    dec_stage: dict | None = None,
) -> list[dict[str, Any]]:
    """References on the same client system: pooled k-means with K = |U| and global DEC with K
    by silhouette on t-SNE (§4 item 1), both centralized; and, given the DEC stage's config,
    federated DEC (fedclust.dec, one center per client, K = |U| given) evaluated pooled."""
    from sklearn.cluster import KMeans

    from .init import centralized_dec_k

    clients = system_for(cfg, setting, y_pool, seed)
    idx = np.unique(np.concatenate([c.idx for c in clients]))
    x, y = x_pool[idx], y_pool[idx]
    pos = {j: i for i, j in enumerate(idx)}
    real_k = len(np.unique(y))

    def per_client(lab: np.ndarray) -> float:
        return float(
            np.mean([hungarian_accuracy(lab[[pos[j] for j in c.idx]], c.y) for c in clients])
        )

    km = KMeans(n_clusters=real_k, n_init=10, random_state=derive_seed(seed, "pkm") % (2**31))
    lab = km.fit_predict(x)
    rows = [
        {
            "method": "pooled k-means (K = |U|)",
            "paradigm": "centralized",
            "k_found": real_k,
            "acc_pooled": hungarian_accuracy(lab, y),
            "acc_client_mean": per_client(lab),
        }
    ]
    g = cfg["global_dec"]
    best, sil, labels = centralized_dec_k(x, (g["k_min"], g["k_max"]), cfg["dec"], seed,
                                          g["tsne_max_points"])  # fmt: skip
    rows.append(
        {
            "method": "global DEC (K by silhouette on t-SNE)",
            "paradigm": "centralized",
            "k_found": best,
            "acc_pooled": hungarian_accuracy(labels[best], y),
            "acc_client_mean": per_client(labels[best]),
            "silhouette": {int(k): round(v, 4) for k, v in sil.items()},
            # Fig. 5: ACC of global DEC at every K tried (pooled, and mean over clients)
            "acc_by_k": {int(k): round(hungarian_accuracy(lab, y), 4) for k, lab in labels.items()},
            "client_acc_by_k": {int(k): round(per_client(lab), 4) for k, lab in labels.items()},
        }
    )
    if dec_stage:
        rows.append(federated_dec(cfg, dec_stage, x_pool, clients, real_k, seed))
    return rows


def federated_dec(cfg: dict, dec_stage: dict, x_pool, clients, k: int, seed: int) -> dict:
    """Federated DEC of the dec stage (seed 000) on the FedCRef clients as centers."""
    import copy

    from fedclust.dec.federated import TooFewCentroids
    from fedclust.dec.pipeline import run_federated

    g = cfg["global_dec"]
    d = copy.deepcopy(dec_stage)
    d["datasets"] = {"fedcref": {"k": int(k), "selection": "accuracy"}}
    d["federated"]["strategies"] = [g["federated_strategy"]]
    d["federated"]["centroid_aggregation"] = [g["centroid_aggregation"]]
    x = np.concatenate([x_pool[c.idx] for c in clients])
    y = np.concatenate([c.y for c in clients])
    centers = np.concatenate([np.full(len(c.idx), i) for i, c in enumerate(clients)])
    method = (
        f"federated DEC ({g['federated_strategy']}, {g['centroid_aggregation']}; K = |U| given)"
    )
    try:
        res = run_federated(x, y, centers, d, "fedcref", "clients", seed)
    except TooFewCentroids as err:  # tiny clients: every local cluster below its centre's floor
        log.warning("federated DEC not run on these clients: %s", err.what)
        return {
            "method": f"{method}: not run, {err.what}",
            "paradigm": "federated",
            "k_found": 0,
            "acc_pooled": float("nan"),
            "acc_client_mean": float("nan"),
        }
    row = res.table.iloc[0]
    return {
        "method": method,
        "paradigm": "federated",
        "k_found": int(row.get("n_clusters_found", k)),
        "acc_pooled": float(row["accuracy"]),
        "acc_client_mean": float("nan"),
    }


def resolve_theta(cfg: dict, calibration: str | None, setting: dict | None = None) -> float:
    """θ from config: a number, or ``calibrated`` (the θ calibration utility's output file, at
    the level of the setting's initial dirtiness)."""
    th = cfg["association"]["theta"]
    if str(th) != "calibrated":
        return float(th)
    return calibrated_theta(cfg, calibration, setting)


def calibrated_theta(cfg: dict, calibration: str | None, setting: dict | None = None) -> float:
    """The calibrated θ for ``setting`` (its initial dirtiness level) from the calibration file."""
    if not calibration:
        raise ConfigError(
            "a calibrated θ is needed (association.theta 'calibrated' or the variant "
            "fedcref_calibrated) but no calibration file was given",
            where="fedcref.association.theta",
            fix="run the rule fedcref_calibrate (the workflow does) or set a number",
        )
    from fedclust.io import read_json

    from .calibrate import theta_for
    from .settings import level_of

    return theta_for(read_json(calibration), level_of(setting or {}, cfg))


def run_units(
    cfg: dict,
    units: list[tuple],
    seed: int,
    rep: int,
    transport: Transport = INPROCESS,
) -> list[tuple[pd.DataFrame, list[dict[str, Any]], pd.DataFrame]]:
    """Several runs of one repetition in one process (``fedcref.fanout: repetition``, issue 15);
    a unit is (experiment, setting name, setting, x, y, θ[, side θ]). Each run's seed derives
    from its own (experiment, setting, repetition), so every result equals :func:`run_setting`
    alone."""
    return [
        run_setting(cfg, u[2], u[3], u[4], unit_seed(seed, u[0], u[1], rep), u[5],
                    side_theta=u[6] if len(u) > 6 else None, transport=transport)
        for u in units
    ]  # fmt: skip


def unit_seed(seed: int, exp: str, setting: str, rep: int) -> int:
    """The seed of one run (experiment, setting, repetition)."""
    return derive_seed(int(seed), "fedcref", exp, setting, int(rep))
