"""FedCRef (seed 002 Algorithm 1, §4): clients (centre side) and the server function
(coordination), connected by :func:`fedclust.federation.federate` (issue 30 B.1).

Privacy boundary: a :class:`Client` holds its samples and never sends them; it answers named
methods (``fedcref_local_models``, ``fedcref_association``, ``fedcref_refine``, ``fit``) whose
replies pass the centre-side guard under the protocols it declares (:func:`protocols`).
:func:`fedcref_server` sees only messages: the clients' new local AE weights (relayed by the
server to every other client: the paper's all-to-all exchange), the association statistics
(client → graph builder), the refinement status, the membership table, the groups' FedAvg
(:func:`groups_fedavg` on the core's :func:`run_rounds`) and the group models (server → every
client). Every client message carries ``n``, the sizes of the local clusters it summarises,
checked against ``fedcref.federated.min_samples`` raised to the client's own disclosure floor;
a cluster below it keeps its model and statistics to itself. Each client computes errors of
received models on its own data only. True labels enter only the simulation's evaluation hook
and the Perfect-Associations oracle (:class:`Hooks`), never a message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import (
    INPROCESS,
    Abstain,
    EveryCentreAbstained,
    Ledger,
    LedgerClientProxy,
    Protocol,
    Strategy,
    Transport,
    call_all,
    declares,
    federate,
    fit_protocol,
    make_strategy,
    run_rounds,
)
from fedclust.federation.guard import centre_policy
from fedclust.federation.privacy import current as current_privacy

from .association import (
    Node,
    association_edges,
    check_params,
    components,
    direction_statistic,
)
from .model import NDArrays, errors_many, flatten, generator, get_parameters, make_ae, unflatten
from .parallel import Job, SharedDevice, run_jobs, same_weights
from .refine import align_labels, client_stable, cluster_refine, series_stable

log = logging.getLogger(__name__)
MODES = ("fedcref", "perfect", "local_only")

# What crosses the ledger (fedclust.federation.Protocol). Client messages carry their sample
# counts ``n`` (checked entry-wise ≥ min_samples, ``fedcref.federated.min_samples``, default 1):
# the local models of Step 1 (one size per model), the association statistics of Step 2 (one
# per own cluster: stat[q, ·] is computed on cluster q's samples), the Step-4 status (the
# client's size), a group member's AE weights with its cluster size; from the server (the graph
# builder and the groups' aggregator): the requests below.
GROUP_FIT = fit_protocol("fedcref_group_fit", metrics=())
# Server → client requests (downlink: the server re-distributes what clients sent). Step 1 asks
# a client for its new local models; Step 2 relays the other clients' new models (the paper's
# all-to-all exchange, through the server) and names the foreign nodes to test; Step 4 carries
# the membership table and the group models (every group's FedAvg result) before refinement.
LOCAL_REQUEST = Protocol("fedcref_local_request", {"iteration": "metadata", "share": "metadata"})
ASSOCIATION_REQUEST = Protocol(
    "fedcref_association_request",
    {"models": "parameters", "uids": "metadata", "foreign": "metadata",
     "foreign_uids": "metadata"},
)  # fmt: skip
REFINE_REQUEST = Protocol(
    "fedcref_refine_request", {"groups": "metadata", "models": "parameters", "uids": "metadata"}
)
#: the methods a FedCRef client answers (:attr:`Client.protocols`)
METHODS = ("fedcref_local_models", "fedcref_association", "fedcref_refine", "fit")


@dataclass(frozen=True)
class Protocols:
    """The client-side protocols of one run, bound to its ``min_samples``."""

    local_models: Protocol
    association: Protocol
    status: Protocol
    group_fit: Protocol


@declares()
def protocols(min_samples: int = 1) -> Protocols:
    m = int(min_samples)
    return Protocols(
        local_models=Protocol(
            "fedcref_local_models",
            {
                "models": "parameters",
                "uids": "metadata",
                "n": "count",
                "live": "metadata",
                "live_uids": "metadata",
            },
            min_samples=m,
        ),  # fmt: skip
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
                 p: FedCRefParams, seed: int,
                 device: SharedDevice | None = None) -> None:  # fmt: skip
        self.index, self.cid, self.k, self.p, self.seed = index, cid, int(k), p, seed
        self.device = device  # a simulation's shared compute device (None: train here)
        self._ahead: dict[tuple, Any] = {}  # requests announced ahead (prefetch)
        self.x = torch.as_tensor(np.asarray(x, dtype=np.float32))
        self.labels = np.asarray(labels, dtype=int).copy()
        self.models: dict[int, str] = {}  # local cluster → model id
        self.sizes: dict[str, int] = {}  # model id → samples it was trained on
        self.cache: dict[str, np.ndarray] = {}
        self.active = True
        self._fl_gens: dict[str, torch.Generator] = {}
        self._status: dict[str, Any] = {}  # the last Step-4 status (repeated once stable)

    @property
    def n_samples(self) -> int:
        return len(self.x)

    @property
    def protocols(self) -> dict[str, Protocol]:
        """The protocol of each method this client answers (the guard applies these)."""
        pr = protocols(self.p.min_samples)
        return dict(zip(METHODS, (pr.local_models, pr.association, pr.status, pr.group_fit),
                        strict=True))  # fmt: skip

    def floor(self) -> int:
        """The smallest cluster whose model or statistics may leave this client: the run's
        ``min_samples`` raised to the client's own disclosure policy (``nfilter_subset``)."""
        return centre_policy(self).floor(self.p.min_samples)

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

    def _run(self, jobs: Sequence[Job]) -> list[tuple[torch.Tensor, list]]:
        return run_jobs(self.template(), list(jobs), self.p.batch_size, self.p.lr, self.p.device)

    def prefetch(self, method: str, parameters: Any, config: dict[str, Any]) -> None:
        """A request announced ahead (in-process, :meth:`LedgerClientProxy.push_fit` /
        ``push_call``): queue this client's trainings on the simulation's shared device, so
        that every client's trainings of one step run as one batch."""
        if self.device is None:
            return
        if method == "fedcref_local_models":
            it = int(config["iteration"])
            if self.active or it == 1:
                jobs = self.local_jobs(it)
                for _, uid, job in jobs:
                    self.device.queue((self.cid, "local", uid), job)
                self._ahead[("local", it)] = jobs
        elif method == "fit":
            q = int(config["cluster"])
            key = (self.cid, "fit", str(config["group"]), q)
            self.device.queue(key, self.fit_job(q, parameters, config))
            self._ahead[key] = (parameters, (config["group"], int(config["epochs"])))

    def fit(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[NDArrays, int, dict]:
        """Local epochs of cluster ``config["cluster"]`` from the group's weights (Flower's
        ``NumPyClient.fit``): (weights, cluster size, {"loss"}); the batched result when this
        very request was announced ahead (:meth:`prefetch`)."""
        q = int(config["cluster"])
        key = (self.cid, "fit", str(config["group"]), q)
        ahead = self._ahead.pop(key, None)
        if (
            ahead is not None
            and ahead[1] == (config["group"], int(config["epochs"]))
            and same_weights(ahead[0], parameters)
        ):
            flat, losses = self.device.take(key)  # type: ignore[union-attr]
        else:
            if ahead is not None:
                self.device.drop(self.cid)  # type: ignore[union-attr]
            flat, losses = self._run([self.fit_job(q, parameters, config)])[0]
        n = int(np.sum(self.labels == q))
        return unflatten(self.template(), flat), n, {"loss": float(losses[-1]) if losses else 0.0}

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

    def evaluate_flat(self, uids: Sequence[str], flats: Sequence[np.ndarray]) -> None:
        """:meth:`evaluate_models` for models sent as flat weight vectors."""
        new = [(str(u), f) for u, f in zip(uids, flats, strict=True) if str(u) not in self.cache]
        if not new:
            return
        stacked = torch.stack([torch.as_tensor(np.asarray(f, dtype=np.float32)) for _, f in new])
        errs = errors_many(self.template(), stacked, self.x, device=self.p.device)
        for a, (u, _) in enumerate(new):
            self.cache[u] = errs[:, a]

    # ---- the methods the server calls (through a proxy: in-process or Flower)
    def fedcref_local_models(self, parameters: Any, config: dict[str, Any]) -> dict[str, Any]:
        """Step 1: an active client (every client in iteration 1) trains a fresh AE per
        non-empty local cluster; with ``share`` it sends them (flat weight vectors, their ids,
        cluster sizes; clusters below its :meth:`floor` keep their model to themselves). Every
        client names its live clusters and their models' ids (the graph's nodes)."""
        it = int(config["iteration"])
        out: dict[str, Any] = {}
        if self.active or it == 1:
            ahead = self._ahead.pop(("local", it), None)
            if ahead is not None:  # queued on the shared device (prefetch)
                jobs = ahead
                dev: SharedDevice = self.device  # type: ignore[assignment]
                trained = [dev.take((self.cid, "local", u)) for _, u, _ in jobs]
            else:
                jobs = self.local_jobs(it)
                trained = self._run([j for _, _, j in jobs])
            new = self.set_local(jobs, trained)
            keep = [u for u in new if self.sizes[u] >= self.floor()]
            if config.get("share") and keep:
                out = {"models": [flatten(new[u]).numpy() for u in keep], "uids": keep,
                       "n": np.asarray([self.sizes[u] for u in keep], dtype=np.int64)}  # fmt: skip
        live = self.live()
        out["live"] = np.asarray(live, dtype=np.int64)
        out["live_uids"] = [self.models[q] for q in live]
        return out

    def fedcref_association(self, parameters: Any, config: dict[str, Any]) -> dict | Abstain:
        """Step 2: the other clients' new models (relayed by the server) evaluated on this
        client's data, then the association statistics of its clusters (those at or above its
        :meth:`floor`) against the ``foreign`` nodes' models."""
        if config.get("uids"):
            self.evaluate_flat(list(config["uids"]), list(config["models"]))
        nodes = np.asarray(config["foreign"], dtype=np.int64).reshape(-1, 2)
        uids = config.get("foreign_uids", [])
        foreign = {(int(a), int(b)): str(u) for (a, b), u in zip(nodes, uids, strict=True)}
        msg = self.association_stats(foreign)
        keep = msg["n"] >= self.floor()
        if not keep.any():
            return Abstain("every local cluster is below the centre's disclosure floor")
        if not keep.all():
            msg = {**msg, "clusters": msg["clusters"][keep], "stat": msg["stat"][keep],
                   "n": msg["n"][keep]}  # fmt: skip
        return msg

    def fedcref_refine(self, parameters: Any, config: dict[str, Any]) -> dict[str, Any]:
        """Steps 3–4 at the client: the membership table and the group models arrive; an
        active client evaluates the group models and refines (:meth:`refine`); a stable one
        repeats its last status."""
        if self.active:
            uids = [str(u) for u in config.get("uids", [])]
            if uids:
                self.evaluate_flat(uids, list(config["models"]))
            self._status = self.refine(uids)
        return self._status


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
    """Local cluster ``q`` of the centre behind ``proxy``, member of group ``gi``: the centre's
    proxy with the group and the cluster named in every fit request. Several groups' FedAvg
    run as one round loop (:func:`groups_fedavg`): the loop's parameters are every group's
    weights one after another, and a member sends and receives its group's ``size`` arrays
    from ``offset`` only. ``push``: tell the centre a round's request before its answer is
    awaited (``fit_all``): only where the proxy allows it (a Flower proxy holds one pending fit
    per round: a centre's first member of the round) and never for a centre's second cluster
    in one group, which trains after its first, as in a run without pushes (its minibatch
    generator of the group is shared with the first's)."""

    def __init__(self, proxy: Any, q: int, gi: int, tag: str, offset: int, size: int,
                 push: bool = True) -> None:  # fmt: skip
        self.proxy, self.q, self.gi, self.tag, self.cid = proxy, int(q), gi, tag, proxy.cid
        self.offset, self.size = offset, size
        under = getattr(proxy, "push_fit", None)
        if push and under is not None:
            self.push_fit = lambda parameters, config, rnd, kind, protocol: under(
                self._mine(parameters), self._config(config), rnd, kind, protocol
            )

    def _mine(self, parameters: NDArrays) -> NDArrays:
        return list(parameters[self.offset : self.offset + self.size])

    def _config(self, config: dict[str, Any]) -> dict[str, Any]:
        return {**config, "group": self.tag, "cluster": self.q}

    def fit(self, parameters: NDArrays, config: dict[str, Any], server_round: int, kind: str,
            protocol: Protocol) -> tuple[NDArrays, int, dict] | None:  # fmt: skip
        out = self.proxy.fit(self._mine(parameters), self._config(config), server_round, kind,
                             protocol)  # fmt: skip
        if out is None:
            return None
        return out[0], out[1], {**out[2], GROUP_KEY: self.gi}

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return self.proxy.call(*args, **kwargs)


GROUP_KEY = "__fedcref_group__"  # added by the server to a member's result, never sent


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


@dataclass
class _PerGroup(Strategy):
    """Every group's own strategy on its slice of the parameters (:func:`groups_fedavg`): a
    round's results are split by group (the member's group index, added by :class:`_Member`)
    and each group's weights are its strategy's ``aggregate_fit`` of its members' results. A
    group with no result in a round (every member abstained) is ``failed`` and ends with its
    initial weights, as its own round loop would (``EveryCentreAbstained``)."""

    strategies: list[Strategy]
    offsets: list[int]
    sizes: list[int]
    failed: set[int] = field(default_factory=set)

    def configure_fit(self, server_round, parameters, clients, config):
        return self.strategies[0].configure_fit(server_round, parameters, clients, config)

    def aggregate_fit(self, server_round, results, current=None):
        out = list(current)  # type: ignore[arg-type]
        for gi, (off, size) in enumerate(zip(self.offsets, self.sizes, strict=True)):
            mine = [(w, n, {k: v for k, v in m.items() if k != GROUP_KEY})
                    for w, n, m in results if m.get(GROUP_KEY) == gi]  # fmt: skip
            if not mine:
                self.failed.add(gi)
                continue
            out[off : off + size] = self.strategies[gi].aggregate_fit(
                server_round, mine, out[off : off + size]
            )
        return out


def groups_fedavg(
    proxies: Sequence[Any],
    groups: Sequence[Sequence[Node]],
    p: FedCRefParams,
    seed: int,
    it: int,
    n_features: int,
) -> list[NDArrays]:
    """Every group's FedAvg (§2.4, :func:`group_fedavg`) side by side in one round loop of the
    federation core (:func:`run_rounds`): the members of all groups are asked in one
    ``fit_all`` per round, so their trainings run at the same time (Flower) or as one batch
    (in-process, :class:`~.parallel.SharedDevice`); each group's weights are its own
    strategy's aggregate of its own members (:class:`_PerGroup`). With secure aggregation or
    central DP on, each group runs its own loop (the privacy layer sums one cohort a round) and
    a client with several clusters in a group trains its first one only (one share per centre
    and round; secure aggregation pairs the shares by centre)."""
    if not groups:
        return []
    tags = [f"G{gi}/it{it}" for gi in range(len(groups))]
    if current_privacy().active:
        return [group_fedavg(proxies, g, p, seed, tag, it, n_features)
                for g, tag in zip(groups, tags, strict=True)]  # fmt: skip
    inits = [get_parameters(make_ae(n_features, p.hidden, hash_seed(seed, tag))) for tag in tags]
    sizes = [len(w) for w in inits]
    offsets = [sum(sizes[:gi]) for gi in range(len(groups))]
    strategy = _PerGroup(
        [_EpochSchedule(make_strategy(p.strategy, {}), p.first_epochs, p.later_epochs)
         for _ in groups], offsets, sizes,
    )  # fmt: skip
    members, pushed = [], set()
    for gi, g in enumerate(groups):
        seen = set()
        for ci, q in sorted(g)[: p.max_members]:
            proxy = proxies[ci]
            push = ci not in seen and (isinstance(proxy, LedgerClientProxy) or ci not in pushed)
            seen.add(ci)
            if push:
                pushed.add(ci)
            members.append(_Member(proxy, q, gi, tags[gi], offsets[gi], sizes[gi], push))
    start = [a for w in inits for a in w]
    try:
        out = run_rounds(members, strategy, start, p.rounds, {}, protocols(p.min_samples).group_fit,
                         kind="group", label=f"fedcref it {it}: {len(groups)} groups")  # fmt: skip
    except EveryCentreAbstained:
        strategy.failed.update(range(len(groups)))
        out = start
    for gi in sorted(strategy.failed):
        log.warning("it %d: group %s not trained: every member abstained (clusters below "
                    "the centres' disclosure floors); it keeps its initial weights",
                    it, tags[gi])  # fmt: skip
    return [inits[gi] if gi in strategy.failed else out[offsets[gi] : offsets[gi] + sizes[gi]]
            for gi in range(len(groups))]  # fmt: skip


def group_fedavg(
    proxies: Sequence[Any],
    members: Sequence[Node],
    p: FedCRefParams,
    seed: int,
    tag: str,
    it: int,
    n_features: int,
) -> NDArrays:
    """One group AE by FedAvg (§2.4) on the federation core's round loop, over the centres'
    proxies: fresh init, ``rounds`` rounds, local epochs ``first_epochs`` in round 1 then
    ``later_epochs``, weighted by cluster size; only the first ``max_members`` members (node
    order) train. A member (centre index, cluster) is asked through its centre's proxy."""
    strategy = _EpochSchedule(make_strategy(p.strategy, {}), p.first_epochs, p.later_epochs)
    params = get_parameters(make_ae(n_features, p.hidden, hash_seed(seed, tag)))
    members = sorted(members)[: p.max_members]
    if current_privacy().active:  # a centre sends one (masked) share a round: its first cluster
        first: dict[int, int] = {}
        for ci, q in members:
            first.setdefault(ci, q)
        members = sorted(first.items())
    seen: set[int] = set()
    group = []
    for ci, q in members:
        group.append(_Member(proxies[ci], q, 0, tag, 0, len(params), ci not in seen))
        seen.add(ci)
    try:
        return run_rounds(group, strategy, params, p.rounds, {},
                          protocols(p.min_samples).group_fit, kind="group",
                          label=f"fedcref it {it} group {tag}")  # fmt: skip
    except EveryCentreAbstained:  # every member's cluster is below its centre's own floor
        log.warning("it %d: group %s not trained: every member abstained (clusters below "
                    "the centres' disclosure floors); it keeps its initial weights",
                    it, tag)  # fmt: skip
        return params


def train_group(
    clients: Sequence[Client],
    members: Sequence[Node],
    p: FedCRefParams,
    seed: int,
    tag: str,
    ledger: Ledger,
    it: int,
    transport: Transport = INPROCESS,
) -> NDArrays:
    """:func:`group_fedavg` of ``members`` (indices into ``clients``) on its own federation."""
    d = int(clients[0].x.shape[1])
    return federate(clients, lambda ps: group_fedavg(ps, members, p, seed, tag, it, d),
                    ledger=ledger, transport=transport)  # fmt: skip


@dataclass
class Hooks:
    """A simulation's evaluation callbacks (the harness holds the centres and the true labels;
    neither is part of the protocol). ``observe(groups, isolated, edges)``: the evaluation
    columns of a history row, after iteration 0 and after every iteration (the algorithm never
    reads them); ``oracle(nodes)``: the ideal graph of the Perfect-Associations variant."""

    observe: Callable[[list, list, list], dict] | None = None
    oracle: Callable[[list[Node]], list] | None = None


def fedcref_server(
    p: FedCRefParams, seed: int, n_features: int, mode: str = "fedcref",
    hooks: Hooks | None = None,
) -> Callable[[list], FedCRefResult]:  # fmt: skip
    """Algorithm 1's coordination as a server function over the clients' proxies
    (:func:`fedclust.federation.federate`): it sees only messages. Per iteration: Step 1
    ``fedcref_local_models`` at every client, Step 2 (``fedcref``) the new models relayed with
    ``fedcref_association`` and the association graph, Step 3 one FedAvg per group
    (:func:`group_fedavg`), Step 4 the membership table and group models with
    ``fedcref_refine``; Step 5 the stopping rules on the server's counts."""
    if mode not in MODES:
        raise ConfigError(
            f"unknown FedCRef mode {mode!r}", where="fedcref.variants", fix=f"{MODES}"
        )
    if mode == "perfect" and (hooks is None or hooks.oracle is None):
        raise ConfigError("perfect mode needs the ideal graph", where="fedcref.variants")
    hk = hooks or Hooks()

    def server(proxies: list) -> FedCRefResult:
        return _coordinate(proxies, p, seed, n_features, mode, hk)

    return server


def _coordinate(
    proxies: list, p: FedCRefParams, seed: int, d: int, mode: str, hooks: Hooks
) -> FedCRefResult:
    res = FedCRefResult()
    proto = protocols(p.min_samples)
    k = len(proxies)
    active = [True] * k
    row0 = {"iteration": 0, "groups": 0, "isolated": 0, "active": k, "edges": 0,
            "seconds": 0.0, "cpu_seconds": 0.0}  # fmt: skip
    if hooks.observe:
        row0.update(hooks.observe([], [], []))
    res.history.append(row0)
    hist_g, hist_i = [0], [0]
    groups: list[list[Node]] = []
    isolated: list[Node] = []
    edges: list = []
    shared: set[str] = set()  # ids of the models relayed so far
    for it in range(1, p.max_iterations + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        # Step 1: active clients (every client at it 1) train fresh local AEs; nodes
        replies = call_all(proxies, "fedcref_local_models",
                           {"iteration": it, "share": mode == "fedcref"}, it, "local_models",
                           proto.local_models, LOCAL_REQUEST)  # fmt: skip
        uid_of: dict[Node, str] = {}
        new_models: list[tuple[int, list[str], list[np.ndarray]]] = []
        for i, r in enumerate(replies):
            if r is None:  # abstained: no node this iteration
                continue
            lives = np.asarray(r["live"], dtype=np.int64).ravel()
            uid_of.update({(i, int(q)): str(u)
                           for q, u in zip(lives, r["live_uids"], strict=True)})  # fmt: skip
            if r.get("models") is not None and len(r["models"]):
                new_models.append((i, [str(u) for u in r["uids"]], list(r["models"])))
        nodes = sorted(uid_of)
        if it == 1:  # the initial partition's non-empty clusters (every one got a model)
            hist_i[0] = row0["isolated"] = len(nodes)
        # Step 2: the new local models relayed to every other client; association statistics
        stat: dict[tuple[Node, Node], float] = {}
        if mode == "fedcref":
            shared.update(u for _, us, _ in new_models for u in us)
            requests = []
            for i in range(k):
                relay = [(u, f) for j, us, fs in new_models if j != i
                         for u, f in zip(us, fs, strict=True)]  # fmt: skip
                foreign = sorted(n for n, u in uid_of.items() if n[0] != i and u in shared)
                req: dict[str, Any] = {
                    "foreign": np.asarray(foreign, dtype=np.int64).reshape(-1, 2),
                    "foreign_uids": [uid_of[n] for n in foreign],
                }
                if relay:
                    req["models"] = [f for _, f in relay]
                    req["uids"] = [u for u, _ in relay]
                requests.append(req)
            msgs = call_all(proxies, "fedcref_association", requests, it, "association_stats",
                            proto.association, ASSOCIATION_REQUEST)  # fmt: skip
            for i, msg in enumerate(msgs):
                if msg is None:
                    continue
                fs = np.asarray(msg["foreign"], dtype=np.int64).reshape(-1, 2)
                for a, q in enumerate(np.asarray(msg["clusters"]).ravel()):
                    for b, f in enumerate(fs):
                        stat[((i, int(q)), (int(f[0]), int(f[1])))] = float(msg["stat"][a, b])
            edges = association_edges(nodes, stat, p.theta, p.policy, p.strict)
        elif mode == "perfect":
            edges = hooks.oracle(nodes)  # type: ignore[misc]
        else:
            edges = []
        # Step 3: groups = connected components with ≥ 2 clusters; one FedAvg AE each
        groups, isolated = components(nodes, edges)
        membership = [[gi, *n] for gi, g in enumerate(groups) for n in g]
        table = np.asarray(membership, dtype=np.int64).reshape(-1, 3)
        group_uids = [f"G{gi}/it{it}" for gi in range(len(groups))]
        group_params = groups_fedavg(proxies, groups, p, seed, it, d)
        # Step 4: membership and group models to every client; active clients refine
        req = {"groups": table}
        if groups:
            req["models"] = [flatten(w).numpy() for w in group_params]
            req["uids"] = group_uids
        status = call_all(proxies, "fedcref_refine", req, it, "status", proto.status,
                          REFINE_REQUEST)  # fmt: skip
        for i, s in enumerate(status):
            if s is not None:
                active[i] = not bool(s["stable"])
        hist_g.append(len(groups))
        hist_i.append(len(isolated))
        row = {"iteration": it, "groups": len(groups), "isolated": len(isolated),
               "active": sum(active), "edges": len(edges),
               "seconds": time.perf_counter() - t0,
               "cpu_seconds": time.process_time() - c0}  # fmt: skip
        if hooks.observe:
            row.update(hooks.observe(groups, isolated, edges))
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
    res.groups, res.isolated, res.edges = groups, isolated, edges
    return res


def run_fedcref(
    xs: Sequence[np.ndarray],
    init_labels: Sequence[np.ndarray],
    ks: Sequence[int],
    p: FedCRefParams,
    seed: int,
    mode: str = "fedcref",
    evaluate: Callable[..., dict] | None = None,
    oracle_edges: Callable[[list[Client], list[Node]], list] | None = None,
    transport: Transport = INPROCESS,
) -> FedCRefResult:
    """Algorithm 1 on a simulated client system: one :class:`Client` per data block, the
    coordination (:func:`fedcref_server`) through one :func:`federate` call over ``transport``.
    ``mode``: fedcref (association test), perfect (``oracle_edges`` gives the ideal graph at
    Step 3), local_only (no association: refinement with local AEs only).
    ``evaluate(clients, groups, isolated, edges, labels_at_association)`` is called after
    iteration 0 and every iteration (evaluation only; the algorithm never reads its output)."""
    if mode not in MODES:
        raise ConfigError(
            f"unknown FedCRef mode {mode!r}", where="fedcref.variants", fix=f"{MODES}"
        )
    check_params(p.theta, p.alpha)
    check_clients(xs, ks, init_labels)
    d = int(np.shape(xs[0])[1])
    device = SharedDevice(make_ae(d, p.hidden, None), p.batch_size, p.lr, p.device)
    clients = [Client(i, f"c{i:03d}", x, lab, k, p, seed, device)
               for i, (x, lab, k) in enumerate(zip(xs, init_labels, ks, strict=True))]  # fmt: skip
    if mode == "perfect" and oracle_edges is None:
        raise ConfigError("perfect mode needs the ideal graph", where="fedcref.variants")
    pre = [c.labels.copy() for c in clients]

    def observe(groups: list, isolated: list, edges: list) -> dict:
        nonlocal pre
        out = evaluate(clients, groups, isolated, edges, pre)  # type: ignore[misc]
        pre = [c.labels.copy() for c in clients]  # the labels at the next association
        return out

    oracle = (lambda nodes: oracle_edges(clients, nodes)) if oracle_edges else None
    hooks = Hooks(observe if evaluate else None, oracle)
    ledger = Ledger()
    server = fedcref_server(p, seed, d, mode, hooks)
    res = federate(clients, server, ledger=ledger, transport=transport)
    res.ledger = ledger
    res.labels = [c.labels.copy() for c in clients]  # each client's own result
    return res
