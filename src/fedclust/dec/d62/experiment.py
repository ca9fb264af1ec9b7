"""One unit of D6.2 ch. 7's grid (seed 003 §6.4–6.5): (Table 7.1 configuration, k, clients).

The patients are divided equally over the clients, the remainder to the last one (D6.2's
table: 1021/1022, 510×3/513, 340×5/343, 255×7/258 of 2043), after a seeded permutation; every
client holds 20 % of its patients out. One client is the centralized run (D6.2: "federations of
1 (= centralized)"): the same code, FedAvg over one centre. Evaluation — SAE accuracy on the
held-out parts, cycle accuracy, silhouettes and the labels of every patient for the HDP
comparison — uses the pooled data and is labelled as such; it is no part of the protocol.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedclust.dec.federated import set_dec_parameters
from fedclust.dec.model import TSAE, DECModel, get_parameters, set_parameters
from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import INPROCESS, Ledger, Transport, federate
from fedclust.metrics.assignment import cycle_accuracy, internal_scores
from fedclust.seeds import derive_seed, rng, seed_torch

from .centre import D62Centre
from .server import Plan, server

UNIT_RE = re.compile(r"^(?P<conf>[A-Za-z0-9]+)_k(?P<k>[0-9]+)_n(?P<clients>[0-9]+)$")


@dataclass(frozen=True, order=True)
class Unit:
    """(Table 7.1 configuration letter, k = clusters = bottleneck width, number of clients)."""

    conf: str
    k: int
    clients: int

    @property
    def id(self) -> str:
        return f"{self.conf}_k{self.k}_n{self.clients}"

    @classmethod
    def parse(cls, uid: str) -> Unit:
        m = UNIT_RE.match(uid)
        if not m:
            raise ConfigError(f"not a D6.2 ch. 7 unit id: {uid!r}", where="dec.d62")
        return cls(m["conf"], int(m["k"]), int(m["clients"]))


def client_parts(n: int, clients: int, seed: int) -> list[np.ndarray]:
    """D6.2's split: ``clients`` parts of ⌊n / clients⌋ patients, the remainder to the last,
    over a seeded permutation (D6.2 does not say whether the rows were shuffled)."""
    if clients < 1 or clients > n:
        raise ConfigError(f"{clients} clients for {n} patients", where="dec.d62.clients")
    order = np.random.default_rng(seed).permutation(n)
    size = n // clients
    cuts = [i * size for i in range(1, clients)]
    return [np.sort(p) for p in np.split(order, cuts)]


def settings(cfg: dict[str, Any], conf: str) -> dict[str, Any]:
    """The unit's settings: Table 7.1's row ``conf`` (``dec.d62.configurations``) with the
    epochs of ``dec.d62.autoencoder.epochs`` when that is set (reduced runs)."""
    table = cfg["configurations"]
    if conf not in table:
        raise ConfigError(
            f"unknown D6.2 Table 7.1 configuration {conf!r}",
            where="dec.d62",
            fix=f"one of {', '.join(sorted(table))} (dec.d62.configurations)",
        )
    row = dict(table[conf])
    if cfg["autoencoder"].get("epochs") is not None:
        row["ae_epochs"] = int(cfg["autoencoder"]["epochs"])
    return row


def make_model_factory(cfg: dict[str, Any], n_features: int, k: int, dropout: float):
    m = cfg["model"]
    dims = [int(n_features), *[int(h) for h in m["hidden"]], int(k)]  # bottleneck = k (D6.2)

    def make() -> DECModel:
        tsae = TSAE(dims, hidden_act=m["hidden_act"], final_act="sigmoid",
                    hidden_dropout=float(dropout), init=m["init"])  # fmt: skip
        return DECModel(tsae, k, 1.0)

    return make


def plan_for(cfg: dict[str, Any], unit: Unit, row: dict[str, Any], seed: int) -> Plan:
    le = int(cfg["local_epochs"])
    ae_epochs, dec_epochs = int(row["ae_epochs"]), int(cfg["clustering"]["epochs"])
    every = int(cfg["clustering"]["update_interval"])
    if ae_epochs % le or dec_epochs % le or every % le:
        raise ConfigError(
            f"epochs ({ae_epochs} AE, {dec_epochs} DEC) and the update interval ({every}) must "
            f"be multiples of dec.d62.local_epochs ({le})",
            where="dec.d62.local_epochs",
            fix="choose local_epochs dividing every one of them",
        )
    common = {"epochs": le, "flip": float(row["flip"]), "unit_norm": bool(row["unit_norm"])}
    ae, cl = cfg["autoencoder"], cfg["clustering"]
    return Plan(
        k=unit.k,
        ae_rounds=ae_epochs // le,
        dec_rounds=dec_epochs // le,
        local_epochs=le,
        update_every=every // le,
        ae={"stage": "ae", "optimizer": ae["optimizer"], "lr": float(ae["lr"]),
            "batch_size": int(ae["batch_size"]), "loss": ae["loss"], **common},
        dec={"stage": "dec", "optimizer": cl["optimizer"], "lr": float(cl["lr"]),
             "batch_size": int(cl["batch_size"]), **common},
        n_init=int(cfg["kmeans_n_init"]),
        seed=derive_seed(seed, "d62", unit.id, "kmeans"),
        min_samples=int(cfg["min_samples"]),
        min_cluster_size=int(cfg["min_cluster_size"]),
    )  # fmt: skip


def check_binary(x: np.ndarray, where: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2 or not len(x) or not np.isfinite(x).all() or x.min() < 0 or x.max() > 1:
        raise InputDataError(
            "D6.2 ch. 7 needs a finite samples × features matrix in [0, 1]",
            where=where,
            fix="use the data stage's results/data/mds/features.parquet (NaN imputed)",
        )
    return x


def run_unit(
    x: np.ndarray, unit: Unit, cfg: dict[str, Any], seed: int, transport: Transport = INPROCESS
) -> tuple[dict[str, Any], pd.DataFrame, np.ndarray, pd.DataFrame]:
    """Train one unit; returns (result row, per-round curves, every patient's cluster, ledger)."""
    x = check_binary(x, "results/data/mds/features.parquet")
    row = settings(cfg, unit.conf)
    plan = plan_for(cfg, unit, row, seed)
    make = make_model_factory(cfg, x.shape[1], unit.k, float(row["dropout"]))
    parts = client_parts(len(x), unit.clients, derive_seed(seed, "d62", "clients", unit.clients))
    centres = [
        D62Centre(f"client{i}", x[idx], make, derive_seed(seed, "d62", unit.id, "client", i),
                  float(cfg["test_fraction"]), plan.min_samples, plan.min_cluster_size)
        for i, idx in enumerate(parts)
    ]  # fmt: skip
    seed_torch(seed, "d62", unit.id, "init")
    init = get_parameters(make().tsae)
    ledger = Ledger()
    trained = federate(
        centres,
        lambda ps: server(ps, plan, init, make, rng(seed, "d62", unit.id, "max_min")),
        ledger=ledger,
        transport=transport,
    )
    # ---- evaluation on the pooled data (labelled; not part of the protocol)
    model = make()
    set_parameters(model.tsae, trained.ae_params)
    set_dec_parameters(model, trained.dec_params)
    model.eval()
    xt = torch.as_tensor(x)
    held = np.concatenate(
        [idx[_held_out(c, len(idx))] for c, idx in zip(centres, parts, strict=True)]
    )
    with torch.no_grad():
        ae_model = make().tsae
        set_parameters(ae_model, trained.ae_params)
        ae_model.eval()
        xh = torch.as_tensor(x[held])
        rec = ae_model(xh).numpy()
        pred = model(xt).argmax(1).numpy()
        pred_rec = model(model.tsae(xt)).argmax(1).numpy()
        z = model.tsae.encode(xt).numpy()
    binx = (x[held] >= 0.5).astype(np.float32)
    last_ae, last_dec = trained.ae_rounds[-1], trained.dec_rounds[-1]
    out = {
        "unit": unit.id,
        "configuration": unit.conf,
        "k": unit.k,
        "clients": unit.clients,
        "ae_epochs": int(row["ae_epochs"]),
        "dropout": float(row["dropout"]),
        "flip": float(row["flip"]),
        "unit_norm": bool(row["unit_norm"]),
        "client_sizes": " ".join(str(len(p)) for p in parts),
        "sae_accuracy": float(1.0 - np.mean(np.abs(x[held] - rec))),
        "sae_rounded_accuracy": float(np.mean((rec >= 0.5) == (binx >= 0.5))),
        "ae_train_loss": last_ae["loss"],
        "ae_eval_loss": last_ae["eval_loss"],
        "G_ae": _ratio(last_ae["loss"], last_ae["eval_loss"]),
        "dec_train_loss": last_dec["loss"],
        "dec_eval_loss": last_dec["eval_loss"],
        "G_dec": _ratio(last_dec["loss"], last_dec["eval_loss"]),
        "changed_last_round": last_dec.get("changed", float("nan")),
        "cycle_accuracy": cycle_accuracy(pred_rec, pred),
        "n_clusters_found": int(len(np.unique(pred))),
        "kmeans_senders": trained.kmeans_senders,
        **internal_scores(x, z, pred, cfg.get("silhouette_max_points")),
        "sil_hamming": hamming_silhouette(x, pred, cfg.get("silhouette_max_points")),
        "messages": ledger.n_messages,
        "floats": ledger.n_floats,
        "abstentions": ledger.n_abstentions,
    }
    curves = pd.DataFrame(
        [{"unit": unit.id, "stage": "ae", **r} for r in trained.ae_rounds]
        + [{"unit": unit.id, "stage": "dec", **r} for r in trained.dec_rounds]
    )
    curves["G"] = curves["loss"] / curves["eval_loss"]
    return out, curves, pred, ledger.table()


def _held_out(c: D62Centre, n: int) -> np.ndarray:
    """Indices (within the client's part) of its held-out patients: the centre's own seeded
    split, recomputed for the pooled evaluation."""
    order = np.random.default_rng(c.seed).permutation(n)
    return np.sort(order[: len(c.x_test)])


def _ratio(a: float, b: float) -> float:
    return float(a / b) if b and np.isfinite(b) else float("nan")


def hamming_silhouette(x: np.ndarray, labels: np.ndarray, sample_size: int | None = None) -> float:
    """Silhouette with the Hamming distance on the binarised features (≥ 0.5 → 1): the natural
    metric for 0/1 data, defined for patients without any alteration (cosine is not)."""
    from sklearn.metrics import silhouette_score

    labels = np.asarray(labels)
    if len(np.unique(labels)) < 2 or len(np.unique(labels)) >= len(labels):
        return 0.0
    n = len(labels)
    return float(silhouette_score((np.asarray(x) >= 0.5), labels, metric="hamming",
                                  sample_size=sample_size if sample_size and sample_size < n
                                  else None, random_state=0))  # fmt: skip
