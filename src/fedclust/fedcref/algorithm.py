"""FedCRef (seed 002 Algorithm 1, §4): clients (center side) and the loop (coordination).

Privacy boundary: a :class:`Client` holds its samples and never sends them. What travels, each
message through :class:`fedclust.federation.Ledger` under a :class:`~fedclust.federation.Protocol`
(:func:`protocols`): local AE weights (all-to-all), the association statistics (client → graph
builder), the refinement status, group membership, FedAvg weights (group aggregator = the
group's lowest client id ↔ members) and group models (aggregator → every client). Every client
message carries ``n``, the sizes of the local clusters it summarises, so the ledger's
``min_samples`` rule (``fedcref.federated.min_samples``) applies to it. Each client
computes errors of received models on its own data only. True labels enter only the
evaluation callback and the Perfect-Associations oracle.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import (
    EveryCentreAbstained,
    Ledger,
    LedgerClientProxy,
    Protocol,
    Strategy,
    fit_protocol,
    make_strategy,
    run_rounds,
)

from .association import (
    Node,
    association_edges,
    check_params,
    components,
    direction_statistic,
)
from .model import NDArrays, errors_many, flatten, generator, get_parameters, make_ae, unflatten
from .parallel import GroupRuntime, Job, Lockstep, run_jobs, same_weights
from .refine import align_labels, client_stable, cluster_refine, series_stable

log = logging.getLogger(__name__)
MODES = ("fedcref", "perfect", "local_only")

# What crosses the ledger (fedclust.federation.Protocol). Client messages carry their sample
# counts ``n`` (checked entry-wise ≥ min_samples, ``fedcref.federated.min_samples``, default 1):
# the local models of Step 1 (one size per model), the association statistics of Step 2 (one
# per own cluster: stat[q, ·] is computed on cluster q's samples), the Step-4 status (the
# client's size), a group member's AE weights with its cluster size; from the graph builder /
# aggregator: the membership table and the group model.
GROUP_FIT = fit_protocol("fedcref_group_fit", metrics=())
GROUP_MODEL = Protocol("fedcref_group_model", {"parameters": "parameters"})
GROUPS = Protocol("fedcref_groups", {"groups": "metadata"})


@dataclass(frozen=True)
class Protocols:
    """The client-side protocols of one run, bound to its ``min_samples``."""

    local_models: Protocol
    association: Protocol
    status: Protocol
    group_fit: Protocol


def protocols(min_samples: int = 1) -> Protocols:
    m = int(min_samples)
    return Protocols(
        local_models=Protocol(
            "fedcref_local_models", {"models": "parameters", "n": "count"}, min_samples=m
        ),
        association=Protocol(
            "fedcref_association_stats",
            {"clusters": "metadata", "foreign": "metadata", "stat": "aggregate", "n": "count"},
            min_samples=m,
        ),
        status=Protocol(
            "fedcref_status",
            {"stable": "aggregate", "acc_prev": "aggregate", "n": "count"},
            min_samples=m,
        ),
        group_fit=fit_protocol("fedcref_group_fit", metrics=(), min_samples=m),
    )


@dataclass
class FedCRefParams:
    """Algorithm parameters (config ``fedcref.{autoencoder,federated,association,stopping}``)."""

    theta: float = 0.2
    alpha: float = 75.0
    strict: bool = False
    policy: str = "all"
    tau: float = 0.8
    groups_pct: float = 10.0
    isolated_pct: float = 10.0
    consecutive: int = 3
    max_iterations: int = 10
    hidden: tuple[int, ...] = (100, 64, 32)
    epochs: int = 20
    batch_size: int = 32
    lr: float = 1e-3
    patience: int | None = 4
    rounds: int = 15
    first_epochs: int = 2
    later_epochs: int = 7
    max_members: int = 30
    strategy: str = "fedavg"
    min_samples: int = 1
    device: str = "cpu"

    @classmethod
    def from_config(cls, cfg: dict, theta: float | None = None) -> FedCRefParams:
        a, ae, fl, st = cfg["association"], cfg["autoencoder"], cfg["federated"], cfg["stopping"]
        th = a["theta"] if theta is None else theta
        device = str(cfg.get("device", "cpu"))
        if device == "cuda" and not torch.cuda.is_available():
            raise ConfigError(
                "fedcref.device is 'cuda' but this job sees no GPU",
                where="fedcref.device",
                fix="set fedcref.device: cpu, or give fedcref_run a GPU (resources gpu: 1)",
            )
        if isinstance(th, str):
            raise ConfigError(
                f"θ = {th!r} must be resolved to a number before the run",
                where="fedcref.association.theta",
            )
        return cls(
            theta=float(th),
            alpha=float(a["alpha"]),
            strict=bool(a["strict"]),
            policy=str(a["policy"]),
            tau=float(st["tau"]),
            groups_pct=float(st["groups_pct"]),
            isolated_pct=float(st["isolated_pct"]),
            consecutive=int(st["consecutive"]),
            max_iterations=int(st["max_iterations"]),
            hidden=tuple(int(h) for h in ae["hidden"]),
            epochs=int(ae["epochs"]),
            batch_size=int(ae["batch_size"]),
            lr=float(ae["lr"]),
            patience=None if ae["patience"] is None else int(ae["patience"]),
            rounds=int(fl["rounds"]),
            first_epochs=int(fl["first_epochs"]),
            later_epochs=int(fl["later_epochs"]),
            max_members=int(fl["max_members"]),
            min_samples=int(fl.get("min_samples", 1)),
            device=device,
        )


# ---------------------------------------------------------------- center side
class Client:
    """One FedCRef client: its samples, its current partition into K_i clusters, its local AEs
    and a cache of per-sample errors of every model it has evaluated (keyed by model id)."""

    def __init__(self, index: int, cid: str, x: np.ndarray, labels: np.ndarray, k: int,
                 p: FedCRefParams, seed: int) -> None:  # fmt: skip
        self.index, self.cid, self.k, self.p, self.seed = index, cid, int(k), p, seed
        self.x = torch.as_tensor(np.asarray(x, dtype=np.float32))
        self.labels = np.asarray(labels, dtype=int).copy()
        self.models: dict[int, str] = {}  # local cluster → model id
        self.sizes: dict[str, int] = {}  # model id → samples it was trained on
        self.cache: dict[str, np.ndarray] = {}
        self.active = True
        self._fl_gens: dict[str, torch.Generator] = {}
        self._prefetch: dict[tuple, tuple] = {}  # (cluster, group) → (weights, config, result)

    def template(self) -> Any:
        """An AE of this run's shape (weights set per use)."""
        return make_ae(self.x.shape[1], self.p.hidden, None)

    # Step 1
    def local_jobs(self, it: int) -> list[tuple[int, str, Job]]:
        """(cluster, model id, training job) of a fresh AE per non-empty local cluster."""
        out = []
        for q in range(self.k):
            rows = np.flatnonzero(self.labels == q)
            if len(rows) == 0:  # empty after refinement: no model, no graph node
                continue
            uid = f"{self.cid}/q{q}/it{it}"
            init = make_ae(self.x.shape[1], self.p.hidden, hash_seed(self.seed, uid)).flat
            gen = generator(self.seed, "shuffle", uid)
            out.append((q, uid, Job(init, self.x[rows], self.p.epochs, gen, self.p.patience)))
        return out

    def set_local(
        self, jobs: list[tuple[int, str, Job]], trained: Sequence[tuple[torch.Tensor, list]]
    ) -> dict[str, NDArrays]:
        """Adopt the trained local AEs; returns {model id: weights} to broadcast."""
        self.models, out = {}, {}
        model = self.template()
        if jobs:
            flats = torch.stack([f for f, _ in trained])
            errs = errors_many(model, flats, self.x, device=self.p.device)
        for a, ((q, uid, job), (flat, _)) in enumerate(zip(jobs, trained, strict=True)):
            self.cache[uid] = errs[:, a]
            self.models[q] = uid
            self.sizes[uid] = len(job.x)
            out[uid] = unflatten(model, flat)
        return out

    def train_local(self, it: int) -> dict[str, NDArrays]:
        """Fresh AE per non-empty local cluster (this client alone); {model id: weights}."""
        jobs = self.local_jobs(it)
        trained = run_jobs(self.template(), [j for _, _, j in jobs], self.p.batch_size,
                           self.p.lr, self.p.device)  # fmt: skip
        return self.set_local(jobs, trained)

    def models_message(self, models: dict[str, NDArrays]) -> dict[str, Any]:
        """Step 1's all-to-all message: the local models with the size of each one's cluster."""
        n = np.asarray([self.sizes[u] for u in models], dtype=np.int64)
        return {"models": models, "n": n}

    def live(self) -> list[int]:
        """Clusters with a model and samples: an inactive client's refined partition can leave
        a cluster of a frozen model empty (no graph node then, as an empty cluster at Step 1)."""
        counts = np.bincount(self.labels, minlength=self.k)
        return [q for q in sorted(self.models) if counts[q] > 0]

    def nodes(self) -> list[Node]:
        return [(self.index, q) for q in self.live()]

    def evaluate_models(self, received: dict[str, NDArrays]) -> None:
        """Errors of received models on this client's own data (cached by model id)."""
        new = [u for u in received if u not in self.cache]
        if not new:
            return
        flats = torch.stack([flatten(received[u]) for u in new])
        errs = errors_many(self.template(), flats, self.x, device=self.p.device)
        for a, u in enumerate(new):
            self.cache[u] = errs[:, a]

    # Step 2
    def association_stats(self, foreign: dict[Node, str]) -> dict[str, Any]:
        """stat[q, f] = pct_α(minmax|E_{iq→iq} − E_{f→iq}|) for own clusters × foreign models."""
        own = self.live()
        keys = sorted(foreign)
        s = np.full((len(own), len(keys)), np.nan)
        for a, q in enumerate(own):
            rows = self.labels == q
            e_own = self.cache[self.models[q]][rows]
            for b, f in enumerate(keys):
                s[a, b] = direction_statistic(e_own, self.cache[foreign[f]][rows], self.p.alpha)
        return {
            "clusters": np.asarray(own, dtype=np.int64),
            "foreign": np.asarray(keys, dtype=np.int64).reshape(-1, 2),
            "stat": s,
            "n": np.asarray([np.sum(self.labels == q) for q in own], dtype=np.int64),
        }

    # Step 3 (member side of FedAvg, Flower NumPyClient.fit shape)
    def fit_job(self, q: int, parameters: NDArrays, config: dict[str, Any]) -> Job:
        """Cluster q's local epochs from the group's weights (no early stop)."""
        rows = np.flatnonzero(self.labels == q)
        gen = self._fl_gens.setdefault(
            config["group"], generator(self.seed, "fl", config["group"], q)
        )
        return Job(flatten(parameters), self.x[rows], int(config["epochs"]), gen, None)

    def fit_result(self, q: int, out: tuple[torch.Tensor, list]) -> tuple[NDArrays, int, dict]:
        flat, losses = out
        n = int(np.sum(self.labels == q))
        return unflatten(self.template(), flat), n, {"loss": float(losses[-1]) if losses else 0.0}

    def prefetched(self, q: int, parameters: NDArrays, config: dict[str, Any]) -> bool:
        """Whether cluster q holds a batched result for exactly these weights and config."""
        got = self._prefetch.get((q, config.get("group")))
        return got is not None and got[1] == config and same_weights(got[0], parameters)

    def prefetch(self, q: int, parameters: NDArrays, config: dict[str, Any], out: Any) -> None:
        """Cluster q's fit computed in a batch with other members' (:class:`GroupRuntime`)."""
        self._prefetch[(q, config.get("group"))] = (parameters, dict(config), out)

    def fit(
        self, q: int, parameters: NDArrays, config: dict[str, Any]
    ) -> tuple[NDArrays, int, dict]:
        """Local epochs of cluster q from the group's weights: the batched result when one was
        computed for these weights, else trained here alone."""
        if self.prefetched(q, parameters, config):
            out = self._prefetch.pop((q, config.get("group")))[2]
        else:
            job = self.fit_job(q, parameters, config)
            out = run_jobs(self.template(), [job], self.p.batch_size, self.p.lr, self.p.device)[0]
        return self.fit_result(q, out)

    # Step 4
    def refine(self, group_models: Sequence[str]) -> dict[str, Any]:
        """ClusterRefine over {own local AEs} ∪ {group AEs}; stability check (§2.6)."""
        cols = [self.models[q] for q in sorted(self.models)] + list(group_models)
        e = np.stack([self.cache[u] for u in cols], axis=1)
        new = align_labels(cluster_refine(e, self.k)[0], self.labels, self.k)
        stable, acc = client_stable(self.labels, new, self.p.tau)
        self.labels = new
        if stable:
            self.active = False
        return {"stable": int(stable), "acc_prev": acc, "n": len(self.labels)}


def hash_seed(seed: int, uid: str) -> int:
    from fedclust.seeds import derive_seed

    return derive_seed(seed, "fedcref", uid)


def check_clients(
    xs: Sequence[np.ndarray], ks: Sequence[int], labels: Sequence[np.ndarray]
) -> None:
    if len(xs) < 2:
        raise ConfigError(
            f"FedCRef needs at least two clients, got {len(xs)}",
            where="fedcref.system.n_clients",
            fix="use n_clients ≥ 2",
        )
    for i, (x, k, lab) in enumerate(zip(xs, ks, labels, strict=True)):
        if k < 2:
            raise InputDataError(
                f"client {i} has K_i = {k}: a client with one class has nothing to cluster",
                where="fedcref client system",
                fix="every client needs K_i ≥ 2 (fedcref.system.k_min ≥ 2)",
            )
        if k > len(x):
            raise InputDataError(
                f"client {i} has K_i = {k} clusters but only {len(x)} samples",
                where="fedcref client system",
                fix="raise samples_per_class or lower k_max",
            )
        if len(lab) != len(x) or (len(lab) and (lab.min() < 0 or lab.max() >= k)):
            raise InputDataError(
                f"client {i}: initial labels must be {len(x)} ids in 0..{k - 1}",
                where="fedcref initial clustering",
            )


# ---------------------------------------------------------------- the loop
@dataclass
class FedCRefResult:
    history: list[dict[str, Any]] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    groups: list[list[Node]] = field(default_factory=list)
    isolated: list[Node] = field(default_factory=list)
    edges: list[tuple[Node, Node]] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    iterations: int = 0
    stop_reason: str = ""


class _Member:
    """Local cluster ``q`` of a client, member ``k`` of a group, as a Flower-shaped fit client:
    the group's :class:`~fedclust.fedcref.parallel.GroupRuntime` first runs the round's member
    fits as one batch, then the client's own ``fit`` answers."""

    def __init__(
        self, client: Client, q: int, runtime: GroupRuntime, k: int, cid: str | None = None
    ) -> None:
        self.client, self.q, self.runtime, self.k = client, q, runtime, k
        self.cid = client.cid if cid is None else cid  # its name in the group (the proxy's)

    def fit(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[NDArrays, int, dict]:
        self.runtime.prepare(self.k, parameters, config)
        return self.client.fit(self.q, parameters, config)


@dataclass
class _EpochSchedule(Strategy):
    """``inner``'s aggregation; ``first`` local epochs in round 1, then ``later`` (§2.4) — the
    per-round fit config (Flower's ``on_fit_config_fn`` place)."""

    inner: Strategy
    first: int
    later: int

    def configure_fit(self, server_round, parameters, clients, config):
        cfg = {**config, "epochs": self.first if server_round < 2 else self.later}
        return self.inner.configure_fit(server_round, parameters, clients, cfg)

    def aggregate_fit(self, server_round, results, current=None):
        return self.inner.aggregate_fit(server_round, results, current)


def train_group(
    clients: Sequence[Client],
    members: Sequence[Node],
    p: FedCRefParams,
    seed: int,
    tag: str,
    ledger: Ledger,
    it: int,
    submit: Callable[[Sequence[Job]], list] | None = None,
) -> NDArrays:
    """One group AE by FedAvg (§2.4) on the federation core's round loop: fresh init, ``rounds``
    rounds, local epochs ``first_epochs`` in round 1 then ``later_epochs``, weighted by cluster
    size; the aggregator (the ledger's ``server``) is the group's lowest client id; only the
    first ``max_members`` members train. ``submit`` runs the members' fits of a round (default:
    at once, :func:`~fedclust.fedcref.parallel.run_jobs`; a :class:`Lockstep` batches them with
    other groups')."""
    strategy = _EpochSchedule(make_strategy(p.strategy, {}), p.first_epochs, p.later_epochs)
    d = clients[0].x.shape[1]
    params = get_parameters(make_ae(d, p.hidden, hash_seed(seed, tag)))
    members = sorted(members)[: p.max_members]
    template = make_ae(d, p.hidden, None)
    runtime = GroupRuntime(
        [(clients[ci], q) for ci, q in members],
        lambda m, prm, cfg: m[0].fit_job(m[1], prm, cfg),
        lambda m, prm, cfg: m[0].prefetched(m[1], prm, cfg),
        lambda m, prm, cfg, out: m[0].prefetch(m[1], prm, cfg, out),
        submit or (lambda jobs: run_jobs(template, jobs, p.batch_size, p.lr, p.device)),
    )
    ids = [clients[ci].cid for ci, _ in members]
    # two clusters of one client in a group: members named apart (secure aggregation pairs
    # the members of a round by name)
    ids = [c if ids.count(c) == 1 else f"{c}/q{q}" for c, (_, q) in zip(ids, members, strict=True)]
    proxies = [LedgerClientProxy(ids[k], _Member(clients[ci], q, runtime, k, ids[k]), ledger)
               for k, (ci, q) in enumerate(members)]  # fmt: skip
    try:
        return run_rounds(proxies, strategy, params, p.rounds, {"group": tag},
                          protocols(p.min_samples).group_fit, kind="group",
                          label=f"fedcref it {it} group {tag}")  # fmt: skip
    except EveryCentreAbstained:  # every member's cluster is below its centre's own floor
        log.warning("it %d: group %s not trained: every member abstained (clusters below "
                    "the centres' disclosure floors); it keeps its initial weights",
                    it, tag)  # fmt: skip
        return params


def train_groups(
    clients: Sequence[Client],
    groups: Sequence[Sequence[Node]],
    p: FedCRefParams,
    seed: int,
    ledger: Ledger,
    it: int,
) -> list[NDArrays]:
    """Every group's FedAvg (:func:`train_group`), the groups' round loops side by side with
    each round's member fits of all groups as one batch (:class:`Lockstep`); each group's
    messages go through its own ledger, appended to ``ledger`` in group order."""
    if not groups:
        return []
    lock = Lockstep(clients[0].template(), p.batch_size, p.lr, p.device)
    subs = [dataclasses.replace(ledger, records=[], abstention_records=[]) for _ in groups]

    def one(gi: int) -> Callable[[], NDArrays]:
        return lambda: train_group(clients, groups[gi], p, seed, f"G{gi}/it{it}", subs[gi], it,
                                   lambda jobs: lock.submit((gi,), jobs))  # fmt: skip

    out = lock.map([one(gi) for gi in range(len(groups))])
    for sub in subs:
        ledger.records += sub.records
        ledger.abstention_records += sub.abstention_records
    log.info("it %d: %d groups, member fits in %d batches (%s jobs)", it, len(groups),
             len(lock.batches), "/".join(map(str, sorted(set(lock.batches)))))  # fmt: skip
    return out


def run_fedcref(
    xs: Sequence[np.ndarray],
    init_labels: Sequence[np.ndarray],
    ks: Sequence[int],
    p: FedCRefParams,
    seed: int,
    mode: str = "fedcref",
    evaluate: Callable[..., dict] | None = None,
    oracle_edges: Callable[[list[Client], list[Node]], list] | None = None,
) -> FedCRefResult:
    """Algorithm 1. ``mode``: fedcref (association test), perfect (``oracle_edges`` gives the
    ideal graph at Step 3), local_only (no association: refinement with local AEs only).
    ``evaluate(clients, groups, isolated, edges, labels_at_association)`` is called after
    iteration 0 and every iteration (evaluation only; the algorithm never reads its output)."""
    if mode not in MODES:
        raise ConfigError(
            f"unknown FedCRef mode {mode!r}", where="fedcref.variants", fix=f"{MODES}"
        )
    check_params(p.theta, p.alpha)
    check_clients(xs, ks, init_labels)
    clients = [Client(i, f"c{i:03d}", x, lab, k, p, seed)
               for i, (x, lab, k) in enumerate(zip(xs, init_labels, ks, strict=True))]  # fmt: skip
    res = FedCRefResult()
    ledger = res.ledger
    proto = protocols(p.min_samples)
    hist_g, hist_i = [0], [int(sum(len(np.unique(c.labels)) for c in clients))]
    row0 = {"iteration": 0, "groups": 0, "isolated": hist_i[0], "active": len(clients),
            "edges": 0, "seconds": 0.0, "cpu_seconds": 0.0}  # fmt: skip
    if evaluate:
        row0.update(evaluate(clients, [], [], [], [c.labels for c in clients]))
    res.history.append(row0)
    groups: list[list[Node]] = []
    isolated: list[Node] = []
    edges: list = []
    for it in range(1, p.max_iterations + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        # Step 1: active clients (every client at it 1) train fresh local AEs
        new_models: dict[int, dict[str, NDArrays]] = {}
        training = [c for c in clients if c.active or it == 1]
        jobs = [c.local_jobs(it) for c in training]
        trained = run_jobs(clients[0].template(), [j for js in jobs for _, _, j in js],
                           p.batch_size, p.lr, p.device)  # fmt: skip
        for c, js in zip(training, jobs, strict=True):  # each client's own models back
            new_models[c.index] = c.set_local(js, trained[: len(js)])
            trained = trained[len(js) :]
        nodes = sorted(n for c in clients for n in c.nodes())
        uid_of = {(c.index, q): c.models[q] for c in clients for q in c.live()}
        # Step 2: all-to-all exchange of the new local models; association statistics
        stat: dict[tuple[Node, Node], float] = {}
        if mode == "fedcref":
            for c in clients:
                received: dict[str, NDArrays] = {}
                for j, models in new_models.items():
                    if c.index != j and models:
                        got = ledger.send(
                            clients[j].cid, c.cid, clients[j].models_message(models), it,
                            "local_models", protocol=proto.local_models, downlink=False,
                        )  # fmt: skip
                        received.update(got["models"])
                c.evaluate_models(received)
            for c in clients:
                foreign = {n: u for n, u in uid_of.items() if n[0] != c.index}
                msg = ledger.send(
                    c.cid, "graph", c.association_stats(foreign), it, "association_stats",
                    protocol=proto.association, downlink=False,
                )  # fmt: skip
                for a, q in enumerate(msg["clusters"]):
                    for b, f in enumerate(msg["foreign"]):
                        stat[((c.index, int(q)), (int(f[0]), int(f[1])))] = float(msg["stat"][a, b])
            edges = association_edges(nodes, stat, p.theta, p.policy, p.strict)
        elif mode == "perfect":
            if oracle_edges is None:
                raise ConfigError("perfect mode needs the ideal graph", where="fedcref.variants")
            edges = oracle_edges(clients, nodes)
        else:
            edges = []
        # Step 3: groups = connected components with ≥ 2 clusters; one FedAvg AE each
        groups, isolated = components(nodes, edges)
        membership = [[gi, *n] for gi, g in enumerate(groups) for n in g]
        table = np.asarray(membership, dtype=np.int64).reshape(-1, 3)
        for c in clients:
            ledger.send("graph", c.cid, {"groups": table}, it, "groups", protocol=GROUPS,
                        downlink=True)  # fmt: skip
        group_uids = [f"G{gi}/it{it}" for gi in range(len(groups))]
        group_params = train_groups(clients, groups, p, seed, ledger, it)
        for c in clients:  # from each group's aggregator (re-distributes the group's FedAvg)
            got = {
                tag: ledger.send(
                    "server", c.cid, {"parameters": params}, it, "group_model",
                    protocol=GROUP_MODEL, downlink=True,
                )["parameters"]
                for tag, params in zip(group_uids, group_params, strict=True)
            }  # fmt: skip
            if c.active:
                c.evaluate_models(got)
        # Step 4: active clients refine; stable ones leave A
        pre_labels = [c.labels.copy() for c in clients]
        for c in clients:
            if c.active:
                ledger.send(
                    c.cid, "graph", c.refine(group_uids), it, "status", protocol=proto.status,
                    downlink=False,
                )  # fmt: skip
        hist_g.append(len(groups))
        hist_i.append(len(isolated))
        row = {"iteration": it, "groups": len(groups), "isolated": len(isolated),
               "active": sum(c.active for c in clients), "edges": len(edges),
               "seconds": time.perf_counter() - t0,
               "cpu_seconds": time.process_time() - c0}  # fmt: skip
        if evaluate:
            row.update(evaluate(clients, groups, isolated, edges, pre_labels))
        res.history.append(row)
        log.info("it %d: |G|=%d |I|=%d |A|=%d edges=%d (%.1fs)", it, len(groups), len(isolated),
                 row["active"], len(edges), row["seconds"])  # fmt: skip
        # Step 5: stop when A = ∅ or |G| and |I| stable over `consecutive` iterations
        res.iterations = it
        if row["active"] == 0:
            res.stop_reason = "no active client"
            break
        if series_stable(hist_g, p.groups_pct, p.consecutive) and series_stable(
            hist_i, p.isolated_pct, p.consecutive
        ):
            res.stop_reason = "|G| and |I| stable"
            break
    else:
        res.stop_reason = "max_iterations"
    res.labels = [c.labels.copy() for c in clients]
    res.groups, res.isolated, res.edges = groups, isolated, edges
    return res
