"""Federated DeepCox strategies (seed 003 §7.3, D6.2 Figs 8.4–8.6) and the two bounds.

Centre side: :class:`SurvivalClient` (``evaluate`` / ``fit`` / ``predict`` shaped like Flower's
NumPyClient; sees only its own arrays). Server side: the ``run_*`` functions see only messages,
every one of which passes :meth:`fedclust.federation.Ledger.send` under one of the stage's
:class:`~fedclust.federation.Protocol` s below (a breach raises ``DisclosureError`` naming centre,
protocol and rule). Weights Averaging is the federation core's round loop
(:func:`fedclust.federation.run_rounds` with :class:`LedgerClientProxy` transport) and FedAvg;
the D6.2 learning-rate rule is its ``configure_fit`` (Flower's ``on_fit_config_fn`` place), fed by
an evaluate exchange. Sequential is not a fit-and-aggregate round: it visits the centres through
the same proxies, logged by :class:`RoundLog`.

A trained "model" is a list of ``(parameters, weight)``: one member with weight 1 for Sequential,
Weights Averaging and centralized; the K local models with a_k = n_k / N for Ensemble (risk =
Σ a_k f_k(x)); the K local models for isolated centres, scored one by one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from fedclust.errors import ConfigError, DisclosureError, InputDataError
from fedclust.federation import (
    INPROCESS,
    FedAvg,
    Ledger,
    LedgerClientProxy,
    Protocol,
    RoundLog,
    Transport,
    federate,
    fit_protocol,
    run_rounds,
    secure_sum,
    unit_floor,
)
from fedclust.federation.guard import centre_policy, sanitise
from fedclust.privacy.centre import centre_send

from .cohort import check_covariates, check_survival
from .cox import c_index, concordance_counts
from .model import get_parameters, set_parameters
from .names import CENTRALIZED, STRATEGIES
from .train import (
    HyperParams,
    LrRule,
    ModelConfig,
    local_train,
    loss_sum,
    predict,
    tensors,
    train_centralized,
)

Model = list[tuple[list[np.ndarray], float]]

# What a centre may disclose (fedclust.federation.Protocol). A Cox risk set needs two patients
# (SurvivalClient refuses fewer), so every model update summarises at least MIN_SAMPLES (the
# default of ``survival.min_samples``; :class:`Federation` binds another).
MIN_SAMPLES = 2
# a model update also says, only when > 0, how many hidden units the centre withheld (reset to
# the weights it received) because fewer patients than its floor reached them
# (fedclust.federation.unit_floor)
_WITHHELD = {"units_withheld": "metadata"}
_FIT = fit_protocol("survival_fit", metrics=(), min_samples=MIN_SAMPLES)
FIT = replace(_FIT, fields={**_FIT.fields, **_WITHHELD})
_LOCAL = fit_protocol("survival_local_model", metrics=(), min_samples=MIN_SAMPLES)
LOCAL_MODEL = replace(_LOCAL, fields={**_LOCAL.fields, **_WITHHELD})
EVALUATE_REQUEST = Protocol("survival_evaluate_request", {"parameters": "parameters"})
# a summing protocol (the server needs Σ loss and Σ events only): secure aggregation applies
EVALUATE = Protocol(
    "survival_evaluate", {"loss_sum": "aggregate", "n_events": "count"}, summed=True
)
# leave-one-centre-out CV scored at the held-out centre (issue 22): the server sends the fold's
# model (members' parameters, their weights and sizes), the centre answers its Harrell
# concordant / comparable pair counts. D6.2's pooled CV C-index needed every held-out patient's
# risk, time and event on the server; the centre-scored C-index pools pairs within centres.
CV_REQUEST = Protocol(
    "survival_cv_request",
    {"parameters": "parameters", "weights": "parameters", "sizes": "metadata"},
)
CV_CONCORDANCE = Protocol(
    "survival_cv_concordance",
    {"concordant": "aggregate", "comparable": "aggregate", "n": "count"},
    min_samples=MIN_SAMPLES,
)
PROTOCOLS = (FIT, LOCAL_MODEL, EVALUATE_REQUEST, EVALUATE, CV_REQUEST, CV_CONCORDANCE)


@dataclass(frozen=True)
class Federation:
    """How the strategies federate: the ``min_samples`` of the model-update protocols (config
    ``survival.min_samples``) and the transport that carries every exchange (built by the rule
    script from ``federation.engine``, :func:`fedclust.transports.from_config`)."""

    min_samples: int = MIN_SAMPLES
    transport: Transport = INPROCESS

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], transport: Transport = INPROCESS) -> Federation:
        return cls(int(cfg.get("min_samples", MIN_SAMPLES)), transport)

    @property
    def fit(self) -> Protocol:
        return replace(FIT, min_samples=self.min_samples)

    @property
    def local_model(self) -> Protocol:
        return replace(LOCAL_MODEL, min_samples=self.min_samples)


DEFAULT = Federation()


class SurvivalClient:
    """One centre holding (x, t, e); ``seed`` seeds its minibatch generator (kept across rounds).

    Its model updates (``fit``, ``local_model``) pass its per-hidden-unit floor
    (:mod:`fedclust.federation.unit_floor`): a ReLU unit that 0 < m < floor of its patients
    reached during the local training keeps the received weights (floor = max(``min_samples``,
    its disclosure policy's ``nfilter_subset``)); ``units_withheld`` counts them over its
    messages."""

    def __init__(
        self, cid: str, x: np.ndarray, t: np.ndarray, e: np.ndarray, mc: ModelConfig, seed: int,
        min_samples: int = MIN_SAMPLES,
    ):  # fmt: skip
        where = f"survival centre {cid}"
        check_survival(t, e, where)
        check_covariates(x, len(np.asarray(t)), where)
        if len(t) < 2:
            raise InputDataError(
                f"centre {cid} holds {len(t)} patient(s): a Cox risk set needs at least two",
                where=where,
                fix="use fewer centres or a less extreme unbalanced split",
            )
        if not np.asarray(e).any():
            raise InputDataError(
                f"centre {cid} has no event among its {len(t)} patients: its partial "
                "likelihood is an empty sum",
                where=where,
                fix="use fewer centres, or another scenario / endpoint",
            )
        self.cid, self.mc, self.seed = cid, mc, int(seed)
        self.x_np, self.t_np, self.e_np = np.asarray(x), np.asarray(t), np.asarray(e)
        self.x, self.t, self.e = tensors(x, t, e)
        self.model = mc.build(self.x.shape[1])
        self.gen = torch.Generator().manual_seed(self.seed)
        self.min_samples, self.units_withheld = int(min_samples), 0

    def _withhold(self, params: list[np.ndarray], received, touched) -> dict[str, int]:
        """The per-unit floor on ``params`` (in place); the message's ``units_withheld``."""
        floor = centre_policy(self).floor(self.min_samples)
        n = unit_floor.withhold(unit_floor.pairs(params), unit_floor.pairs(received), touched,
                                floor)  # fmt: skip
        self.units_withheld += n
        return {"units_withheld": n} if n else {}

    @property
    def n(self) -> int:
        return len(self.t)

    @property
    def n_samples(self) -> int:  # the centre-side guard checks counts against it (issue 22)
        return len(self.t)

    def evaluate(
        self, parameters: list[np.ndarray], config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        set_parameters(self.model, parameters)
        s, n_ev = loss_sum(self.model, self.x, self.t, self.e)
        return {"loss_sum": s, "n_events": n_ev}

    def fit(
        self, parameters: list[np.ndarray], config: dict[str, Any]
    ) -> tuple[list[np.ndarray], int, dict]:
        set_parameters(self.model, parameters)
        touched = unit_floor.mlp_units(self.model, self.n)
        local_train(
            self.model,
            self.x,
            self.t,
            self.e,
            int(config["epochs"]),
            int(config["batches"]),
            float(config["lr"]),
            self.gen,
            self.mc,
            touched,
        )
        params = get_parameters(self.model)
        received = [np.asarray(a, np.float32) for a in parameters]
        return params, self.n, self._withhold(params, received, touched)

    def fit_local(self, init: list[np.ndarray], hp: HyperParams) -> tuple[list[np.ndarray], int]:
        """Isolated / ensemble member: the centralized trainer on local data only."""
        params, _ = train_centralized(self.x_np, self.t_np, self.e_np, init, hp, self.mc, self.seed)
        return params, self.n

    def local_model(self, init: list[np.ndarray], hp: HyperParams) -> dict[str, Any]:
        """Ensemble member / isolated model as the centre sends it: :meth:`fit_local` under
        the per-unit floor (received weights: ``init``)."""
        touched = unit_floor.mlp_units(self.model, self.n)
        params, _ = train_centralized(self.x_np, self.t_np, self.e_np, init, hp, self.mc,
                                      self.seed, touched)  # fmt: skip
        received = [np.asarray(a, np.float32) for a in init]
        return {"parameters": params, "n": self.n, **self._withhold(params, received, touched)}

    def cv_concordance(self, parameters: list[np.ndarray], config: Mapping[str, Any]) -> dict:
        """Centre-scored CV: the (possibly ensemble) model's risk on the centre's own patients,
        reduced here to Harrell's concordant and comparable pair counts (no patient row)."""
        model = unpack_model(parameters, config["weights"], config["sizes"])
        conc, comp = concordance_counts(
            self.t_np, predict_model(self.model, model, self.x_np), self.e_np
        )
        return {"concordant": conc, "comparable": float(comp), "n": self.n}


def pack_model(model: Model) -> dict[str, Any]:
    """A (possibly ensemble) model as one request: every member's arrays, weights, sizes."""
    return {
        "parameters": [a for p, _ in model for a in p],
        "weights": np.asarray([w for _, w in model], dtype=float),
        "sizes": [len(p) for p, _ in model],
    }


def unpack_model(parameters, weights, sizes) -> Model:
    out, i = [], 0
    for w, k in zip(np.asarray(weights, float), sizes, strict=True):
        out.append((list(parameters[i : i + int(k)]), float(w)))
        i += int(k)
    return out


def predict_model(net, model: Model, x: np.ndarray) -> np.ndarray:
    return sum(w * predict(net, p, x) for p, w in model)


def _lr_round(proxies: Sequence[LedgerClientProxy], params, rule: LrRule, k: int) -> float:
    """Evaluate exchange: masked (per-centre) Cox loss of the current model → lr rule. The
    server needs Σ loss and Σ events only: a summing exchange (:func:`secure_sum`), so with
    secure aggregation on it receives the sums alone."""
    sums, _ = secure_sum(proxies, "evaluate", {"parameters": params}, k, "evaluate", EVALUATE,
                         EVALUATE_REQUEST)  # fmt: skip
    loss = sums["loss_sum"] / sums["n_events"]
    return rule.update(loss, k)


@dataclass
class LrRuleFedAvg(FedAvg):
    """FedAvg (weights n_k / N) whose ``configure_fit`` first runs the evaluate exchange and
    the D6.2 lr rule, then asks every centre for ``ie`` local epochs at that lr."""

    rule: LrRule | None = None

    def configure_fit(
        self, server_round: int, parameters, clients, config: Mapping[str, Any]
    ) -> list[tuple[Any, dict[str, Any]]]:
        lr = _lr_round(clients, parameters, self.rule, server_round - 1)
        return super().configure_fit(server_round, parameters, clients, {**config, "lr": lr})


def run_weights_averaging(
    clients: Sequence[SurvivalClient],
    init,
    hp: HyperParams,
    mc: ModelConfig,
    ledger: Ledger,
    fed: Federation = DEFAULT,
) -> Model:
    """FedAvg with ``ie`` local epochs for ``fe`` rounds, weights n_k / N (D6.2 Fig. 8.5), on
    the federation core's round loop over ``fed.transport``."""
    server = weights_averaging_server(init, hp, mc, fed)
    params = federate(clients, server, ledger=ledger, transport=fed.transport)
    return [(params, 1.0)]


def weights_averaging_server(init, hp: HyperParams, mc: ModelConfig, fed: Federation = DEFAULT):
    """The server function of Weights Averaging: ``server(proxies) -> parameters`` (also what
    a Flower deployment runs, :mod:`.deployment`)."""
    strategy = LrRuleFedAvg(rule=LrRule(hp.lr, mc.lr_floor))

    def server(proxies: list) -> list:
        return run_rounds(
            proxies, strategy, [p.copy() for p in init], hp.fe,
            {"epochs": hp.ie, "batches": hp.batches}, fed.fit, kind="fit",
            label=f"survival weights_averaging {hp.label()} ({len(proxies)} centres)",
        )  # fmt: skip

    return server


def run_sequential(
    clients: Sequence[SurvivalClient],
    init,
    hp: HyperParams,
    mc: ModelConfig,
    ledger: Ledger,
    rng: np.random.Generator,
    fed: Federation = DEFAULT,
) -> Model:
    """The model visits the centres one after another, ``ie`` epochs each; the order is
    reshuffled every federated epoch (D6.2 Fig. 8.4)."""
    server = sequential_server(init, hp, mc, rng, fed)
    return [(federate(clients, server, ledger=ledger, transport=fed.transport), 1.0)]


def sequential_server(init, hp: HyperParams, mc: ModelConfig, rng: np.random.Generator,
                      fed: Federation = DEFAULT):  # fmt: skip
    """The server function of Sequential: ``server(proxies) -> parameters``."""
    rule = LrRule(hp.lr, mc.lr_floor)

    def server(proxies: list) -> list:
        params = [p.copy() for p in init]
        clock = RoundLog(f"survival sequential {hp.label()} ({len(proxies)} centres)", hp.fe)
        for k in range(hp.fe):
            lr = _lr_round(proxies, params, rule, k)
            cfg = {"epochs": hp.ie, "batches": hp.batches, "lr": lr}
            for i in rng.permutation(len(proxies)):
                out = proxies[int(i)].fit(params, cfg, k, "sequential", fed.fit)
                if out is not None:
                    params = out[0]
            clock.done(k + 1)
        return params

    return server


def run_local(
    clients: Sequence[SurvivalClient],
    init,
    hp: HyperParams,
    ledger: Ledger,
    weighted: bool,
    fed: Federation = DEFAULT,
) -> Model:
    """Independent local models sent once to the server: Ensemble (weights n_k / N, D6.2
    Fig. 8.6) or isolated centres (``weighted=False``: weights 1, scored one by one). A centre
    whose model its own disclosure check refuses (fewer patients than its floor) abstains —
    the ledger records why — and the ensemble goes on without it, as in the other protocols."""
    out = []
    for c in clients:
        policy = centre_policy(c)
        try:
            msg = centre_send(ledger, policy, c.cid, c.n, c.local_model(init, hp), 0,
                              "local_model", fed.local_model)  # fmt: skip
        except DisclosureError as err:
            ledger.abstain(c.cid, 0, fed.local_model, sanitise(f"refused: {err.rule}", policy))
            continue
        out.append((msg["parameters"], float(msg["n"])))
    if weighted and not out:
        raise InputDataError(
            "every centre abstained from Ensemble's local models", where="survival ensemble",
            fix="lower survival.min_samples / the centres' disclosure.nfilter_subset",
        )  # fmt: skip
    if weighted:
        total = sum(w for _, w in out)
        out = [(p, w / total) for p, w in out]
    return out


def train_strategy(
    strategy: str,
    clients: Sequence[SurvivalClient],
    init,
    hp: HyperParams,
    mc: ModelConfig,
    ledger: Ledger,
    rng: np.random.Generator,
    fed: Federation = DEFAULT,
) -> Model:
    """Train ``strategy`` on ``clients`` (centralized: the clients' data pooled, no messages);
    ``fed``: the ledger's min_samples and the transport."""
    if strategy == "weights_averaging":
        return run_weights_averaging(clients, init, hp, mc, ledger, fed=fed)
    if strategy == "sequential":
        return run_sequential(clients, init, hp, mc, ledger, rng, fed)
    if strategy == "ensemble":
        return run_local(clients, init, hp, ledger, weighted=True, fed=fed)
    if strategy == "isolated":
        return run_local(clients, init, hp, ledger, weighted=False, fed=fed)
    if strategy in CENTRALIZED:
        x = np.concatenate([c.x_np for c in clients])
        t = np.concatenate([c.t_np for c in clients])
        e = np.concatenate([c.e_np for c in clients])
        # centralized: one centre holding all data (a centre's optimiser path, full batch when
        # batches = 1); centralized_steps: K × batches minibatches per epoch, as many optimizer
        # steps per epoch as Sequential makes over K centres. With one centre both are the same run.
        k = len(clients) if strategy == "centralized_steps" else 1
        params, _ = train_centralized(
            x, t, e, init, replace(hp, batches=hp.batches * k), mc, clients[0].seed
        )
        return [(params, 1.0)]
    raise ConfigError(
        f"unknown strategy {strategy!r}",
        where="survival.strategies",
        fix=f"one of {', '.join(STRATEGIES)}",
    )


def blind_c_index(net, model: Model, strategy: str, x: np.ndarray, t: np.ndarray, e: np.ndarray):
    """Blind-test C-index: one number; isolated centres: the mean over centres (and each)."""
    if strategy == "isolated":
        each = [c_index(t, predict(net, p, x), e) for p, _ in model]
        return float(np.mean(each)), each
    return c_index(t, predict_model(net, model, x), e), None
