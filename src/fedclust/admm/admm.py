"""Centralized (Algorithm 1) and consensus-distributed (Algorithm 2) ADMM, seed 003 §2.2–2.3.

Scaled form with the split x − z = 0 (3.17–3.19) and its consensus version (3.32 = 3.44):

    x_{i,k+1} = argmin_x g_i(x) + (ρ/2)‖x − z_k + w_{i,k}‖²        (center i, own data only)
    z_{k+1}   = argmin_z h(z) + (N_bρ/2)‖z − x̄_{k+1} − w̄_k‖²      (server, messages only)
    w_{i,k+1} = w_{i,k} + x_{i,k+1} − z_{k+1}                      (center i)

Initialisation x = z = w = 0 (Algorithms 1–2). Consensus ADMM runs on the transport seam
:func:`fedclust.federation.federate`: each centre is an :class:`AdmmCentre` holding only its own
rows, and :func:`consensus_server` reaches it only through ``proxy.call`` (in-process, Flower
simulation or a Flower deployment, :mod:`.deployment`). Round 0: ``moments`` {n, Σv, Σv²}
(:mod:`.data`), then ``design`` {mean, sd, y_mean, y_sd, N_total} down (acknowledged with n).
Iteration k: ``local_update`` (an empty request; the centre holds z_k) → {x_{i,k+1}, w_{i,k}, n},
the server's z-update, ``consensus`` {z_{k+1}} down → the centre's weighted loss at z_{k+1}
(monitoring only). What crosses the boundary is what D6.2 §3.3 says: (x_{i,k+1}, w_{i,k}) up,
z_{k+1} down. Each answer leaves under the protocol the centre declares (``protocols``, checked
against its own disclosure policy before it leaves; center messages carry their sample count
n_i, as the core's rule "aggregates-carry-their-sample-count" asks).

Disclosure (issue 22): from (x_i, w_i) over the iterations and the broadcast z the server
recovers each iterate's local gradient, ρ(z_k − w_{i,k} − x_{i,k+1}) = ∇g_i(x_{i,k+1}); for a
one-row center every such gradient is a multiple of the row u = [v; 1], which gives the row back
(:func:`fedclust.privacy.attacks.admm_rows`), and for ridge the iterates determine A_iᵀA_i and
A_iᵀb_i. A center therefore takes part only with n_i ≥ d / ``nfilter_glm`` rows (DataSHIELD's
rule for a fitted model: at most ``nfilter_glm · n`` parameters) and at least its floor
(``nfilter_subset``, raised by ``admm.min_samples``); otherwise it abstains (recorded) and its
rows are left out of the problem. ``x`` is the fitted model (``parameters``, ``glm``); ``w``, the
running sum of its residuals, is an ``aggregate``. What remains disclosed by design, as in
DataSHIELD's ``ds.glm``: the second moments A_iᵀA_i / N and A_iᵀb_i / N of a large enough center.

Stopping (seed 003 §12.5 settled): at most ``max_iter`` iterations (D6.2's fixed ``niter``);
with ``eps_abs`` set, stop earlier on Boyd et al. (2011) §3.3.1/§7.1 residuals

    r = (Σ_i ‖x_i − z‖²)^½,  s = ρ √N_b ‖z_k − z_{k−1}‖,
    ε_pri = √(N_b d) ε_abs + ε_rel max((Σ‖x_i‖²)^½, √N_b ‖z‖),
    ε_dual = √(N_b d) ε_abs + ε_rel ρ (Σ‖w_i‖²)^½,

stopping when r ≤ ε_pri and s ≤ ε_dual (N_b = 1: the centralized rule).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ConfigError, InputDataError
from ..federation import (
    INPROCESS,
    Abstain,
    Ledger,
    Message,
    Transport,
    call_all,
    federate,
    secure_sum,
)
from ..federation.disclosure import DisclosurePolicy
from ..federation.guard import centre_policy
from . import problems as P
from .data import center_moments, design, server_moments
from .protocols import (
    CONSENSUS,
    CONSENSUS_ACK,
    DESIGN,
    DESIGN_ACK,
    LOCAL_REQUEST,
    LOCAL_UPDATE,
    MOMENTS_REQUEST,
    OBJECTIVE,
    PRIVATE_UPDATE,
    STANDARDIZE,
    takes_part,
)

HISTORY_COLUMNS = [
    "iteration",
    "objective",
    "primal_residual",
    "dual_residual",
    "eps_pri",
    "eps_dual",
]


@dataclass
class AdmmSettings:
    """Everything but the data. ``scaling``: 'total' (1/N_total, default) or 'node' (1/n_i)."""

    problem: str
    lam: float
    rho: float = 1.0
    max_iter: int = 500
    eps_abs: float | None = None
    eps_rel: float = 1e-3
    penalize_bias: bool = True
    scaling: str = "total"
    inner_tol: float = 1e-10
    max_inner: int = 100
    svm_method: str = "dual"
    svm_step: float = 0.01
    svm_substeps: int = 10

    def __post_init__(self) -> None:
        P.check_problem(self.problem)
        if not np.isfinite(self.rho) or self.rho <= 0:
            raise ConfigError(
                f"ADMM penalty rho = {self.rho} must be a finite number > 0",
                where="admm.rho",
                fix="set rho > 0 (1.0 is a safe start for standardised data)",
            )
        if not np.isfinite(self.lam) or self.lam < 0:
            raise ConfigError(f"lambda = {self.lam} must be >= 0", where="admm.tasks.<task>.lam")
        if self.max_iter < 1:
            raise ConfigError(f"max_iter = {self.max_iter} must be >= 1", where="admm.max_iter")
        if self.scaling not in ("total", "node"):
            raise ConfigError(
                f"unknown loss scaling '{self.scaling}'",
                where="admm.scaling",
                fix="use 'total' (1/N_total: distributed = centralized) or 'node' (D6.2 3.34)",
            )

    def solver(self, A: np.ndarray, b: np.ndarray, weight: float) -> P.LocalSolver:
        return P.LocalSolver(
            self.problem,
            A,
            b,
            weight,
            self.rho,
            tol=self.inner_tol,
            max_inner=self.max_inner,
            svm_method=self.svm_method,
            svm_step=self.svm_step,
            svm_substeps=self.svm_substeps,
        )


@dataclass
class AdmmResult:
    """The consensus model ``z``, the per-iteration history and the run's bookkeeping."""

    z: np.ndarray
    history: pd.DataFrame
    converged: bool
    seconds: float
    ledger: Ledger = field(default_factory=Ledger)

    @property
    def iterations(self) -> int:
        return len(self.history)

    @property
    def objective(self) -> float:
        return float(self.history["objective"].iloc[-1])


def check_block(A: Any, b: Any, problem: str, where: str = "data") -> tuple[np.ndarray, np.ndarray]:
    """Validate a block: finite 2-D A, finite b of matching length, b ∈ {−1, +1} if classifying."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float).ravel()
    if A.ndim != 2 or len(A) != len(b):
        raise InputDataError(
            f"design matrix of shape {A.shape} does not match {len(b)} targets", where=where
        )
    if len(b) == 0:
        raise InputDataError("a block holds no samples", where=where, fix="drop empty centers")
    bad = int((~np.isfinite(A)).sum() + (~np.isfinite(b)).sum())
    if bad:
        raise InputDataError(
            f"{bad} non-finite value(s) (NaN/inf) in the ADMM input",
            where=where,
            fix="impute or drop missing values before the ADMM stage",
        )
    if problem in P.CLASSIFICATION and not np.isin(b, (-1.0, 1.0)).all():
        raise InputDataError(
            f"{problem} needs labels in {{-1, +1}}, got {sorted(set(np.unique(b)))[:5]}",
            where=where,
            fix="encode the positive class as +1 and the other as -1",
        )
    return A, b


def _eps(d: int, nb: int, s: AdmmSettings, xnorm: float, znorm: float, wnorm: float):
    if s.eps_abs is None:
        return np.nan, np.nan
    root = np.sqrt(d * nb)
    pri = root * s.eps_abs + s.eps_rel * max(xnorm, np.sqrt(nb) * znorm)
    dual = root * s.eps_abs + s.eps_rel * s.rho * wnorm
    return pri, dual


def _row(k: int, obj: float, r: float, sd: float, pri: float, dual: float) -> dict[str, float]:
    return dict(zip(HISTORY_COLUMNS, (k, obj, r, sd, pri, dual), strict=True))


def _stop(row: dict[str, float]) -> bool:
    return bool(
        row["primal_residual"] <= row["eps_pri"] and row["dual_residual"] <= row["eps_dual"]
    )


def admm_centralized(A: Any, b: Any, settings: AdmmSettings) -> AdmmResult:
    """Algorithm 1 (generalised to the four problems): one data holder, x − z = 0 split."""
    t0 = time.perf_counter()
    s = settings
    A, b = check_block(A, b, s.problem)
    n, d = A.shape
    solve = s.solver(A, b, 1.0 / n)
    z, w = np.zeros(d), np.zeros(d)
    rows, converged = [], False
    for k in range(1, s.max_iter + 1):
        x = solve(z - w)  # x-update (3.23)
        z_prev = z
        z = P.z_update(s.problem, x + w, s.lam, s.rho, 1, s.penalize_bias)  # z-update
        w = w + x - z  # dual (scaled) update
        obj = P.objective(s.problem, A, b, z, s.lam, s.penalize_bias)
        r, sd = np.linalg.norm(x - z), s.rho * np.linalg.norm(z - z_prev)
        pri, dual = _eps(d, 1, s, np.linalg.norm(x), np.linalg.norm(z), np.linalg.norm(w))
        rows.append(_row(k, obj, r, sd, pri, dual))
        if s.eps_abs is not None and _stop(rows[-1]):
            converged = True
            break
    hist = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
    return AdmmResult(z, hist, converged, time.perf_counter() - t0)


# ---- consensus ADMM: centre side ----------------------------------------------------------


class AdmmCentre:
    """One centre of consensus ADMM: its own rows (X_i, y_i), the design it builds from the
    federated moments, and its iterates x_i, w_i and the last broadcast z. The server reaches it
    only through ``proxy.call`` (:func:`consensus_server`); every answer leaves under the
    protocol the centre itself declares (``protocols``), checked against its own disclosure
    policy (``disclosure``: default its configured one) with its true sample count.

    ``standardize``: scale by the federated moments (round 0, :mod:`.data`); ``bias``: append the
    bias column (off for blocks that already hold it, :func:`admm_distributed`);
    ``min_samples``: ``admm.min_samples``, raising the centre's floors.
    """

    def __init__(
        self,
        cid: str,
        X: Any,
        y: Any,
        settings: AdmmSettings,
        *,
        standardize: bool = True,
        bias: bool = True,
        min_samples: int = 1,
        disclosure: DisclosurePolicy | None = None,
    ):
        self.cid = str(cid)
        self.X, self.y = check_block(X, y, settings.problem, where=f"center {cid}")
        self.settings, self.standardize, self.bias = settings, bool(standardize), bool(bias)
        self.min_samples = int(min_samples)
        if disclosure is not None:
            self.disclosure = disclosure
        m = self.min_samples
        self.protocols = {
            "moments": replace(STANDARDIZE, min_samples=m),
            "design": replace(DESIGN_ACK, min_samples=m),
            "local_update": replace(LOCAL_UPDATE, min_samples=m),
            "consensus": replace(OBJECTIVE, min_samples=m),
        }
        self.A: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return len(self.y)

    @property
    def n_parameters(self) -> int:
        return self.X.shape[1] + int(self.bias)

    def _regress(self) -> bool:
        return self.settings.problem not in P.CLASSIFICATION

    def moments(self, parameters: Any, config: dict[str, Any]) -> Message | Abstain:
        """Round 0: n_i and, when standardising, the column sums and sums of squares of the
        inputs (and of a regression target), or abstain when too small for the model."""
        if not takes_part(centre_policy(self), self.n_samples, self.n_parameters,
                          self.min_samples):  # fmt: skip
            return Abstain("refused: too few rows for a model of this size")
        if not self.standardize:
            return {"n": self.n_samples}
        V = np.column_stack([self.X, self.y]) if self._regress() else self.X
        return center_moments(V)

    def design(self, parameters: Any, config: dict[str, Any]) -> Message:
        """Round 0: A_i = [(X_i − mean)/sd, 1], b_i standardised (regression), the loss weight
        1/N_total (or 1/n_i) and the x-update's solver; x = z = w = 0 (Algorithm 2)."""
        A, b = self.X, self.y
        if "mean" in config:
            mean, sd = np.asarray(config["mean"], float), np.asarray(config["sd"], float)
            A = design(A, mean, sd) if self.bias else (A - mean) / sd
            if self._regress():
                b = (b - config["y_mean"]) / config["y_sd"]
        elif self.bias:
            A = np.hstack([A, np.ones((len(A), 1))])
        s = self.settings
        self.A, self.b = A, b
        self.weight = 1.0 / (int(config["n_total"]) if s.scaling == "total" else self.n_samples)
        self.solve = s.solver(A, b, self.weight)
        d = A.shape[1]
        self.x, self.w, self.z = np.zeros(d), np.zeros(d), np.zeros(d)
        return {"n": self.n_samples}

    def local_update(self, parameters: Any, config: dict[str, Any]) -> Message:
        """x_{i,k+1} = argmin g_i(x) + (ρ/2)‖x − z_k + w_{i,k}‖²; message (x_{i,k+1}, w_{i,k})
        (z_k: the last consensus the centre received)."""
        self.x = self.solve(self.z - self.w)
        return {"x": self.x.copy(), "w": self.w.copy(), "n": self.n_samples}

    def consensus(self, parameters: Any, config: dict[str, Any]) -> Message:
        """z_{k+1} received: w_{i,k+1} = w_{i,k} + x_{i,k+1} − z_{k+1}; message: the weighted
        local loss at z_{k+1} (the objective history)."""
        self.z = np.asarray(config["z"], dtype=float)
        self.w = self.w + self.x - self.z
        return {
            "loss": self.weight * P.loss(self.settings.problem, self.A, self.b, self.z),
            "n": self.n_samples,
        }


def centres_from_rows(
    X: Any,
    y: Any,
    centers: Any,
    names: Sequence[str],
    settings: AdmmSettings,
    standardize: bool = True,
    min_samples: int = 1,
) -> list[AdmmCentre]:
    """One :class:`AdmmCentre` per name of ``names``, holding the rows ``centers`` assigns it
    (how a workflow split is set up as centres; a real site builds its own)."""
    X, y, centers = np.asarray(X, float), np.asarray(y, float), np.asarray(centers)
    empty = [c for c in names if not np.any(centers == c)]
    if empty:
        raise InputDataError(
            f"center(s) {', '.join(empty)} hold no samples",
            where="admm split",
            fix="use a split without empty centers",
        )
    return [
        AdmmCentre(
            c,
            X[centers == c],
            y[centers == c],
            settings,
            standardize=standardize,
            min_samples=min_samples,
        )  # fmt: skip
        for c in names
    ]


# ---- consensus ADMM: server side (messages only) ------------------------------------------


def server_z_update(messages: Sequence[Message], settings: AdmmSettings) -> np.ndarray:
    """z_{k+1} = argmin h(z) + (N_bρ/2)‖z − x̄ − w̄‖² from the centers' (x_i, w_i) (3.32, 3.40)."""
    v = np.mean([m["x"] + m["w"] for m in messages], axis=0)
    s = settings
    return P.z_update(s.problem, v, s.lam, s.rho, len(messages), s.penalize_bias)


def server_residuals(
    messages: Sequence[Message], z: np.ndarray, z_prev: np.ndarray, settings: AdmmSettings
) -> tuple[float, float, float, float]:
    """Primal/dual residuals and tolerances (Boyd §7.1) from the messages and z only."""
    xs = np.array([m["x"] for m in messages])
    ws_next = np.array([m["w"] for m in messages]) + xs - z  # w_{i,k+1}, as the centers hold it
    nb, d = xs.shape
    r = float(np.sqrt(np.sum((xs - z) ** 2)))
    sd = float(settings.rho * np.sqrt(nb) * np.linalg.norm(z - z_prev))
    pri, dual = _eps(
        d, nb, settings, np.linalg.norm(xs), np.linalg.norm(z), np.linalg.norm(ws_next)
    )
    return r, sd, pri, dual


def server_objective(messages: Sequence[Message], z: np.ndarray, settings: AdmmSettings) -> float:
    """Σ_i g_i(z) + h(z) from the centers' loss messages."""
    s = settings
    return float(sum(m["loss"] for m in messages)) + P.regularizer(
        s.problem, z, s.lam, s.penalize_bias
    )


def consensus_server(settings: AdmmSettings, min_samples: int = 1, private: bool = False):
    """The server of Algorithm 2 (generalised): ``server(proxies) -> AdmmResult`` over the
    centres' proxies, seeing only their messages.

    Round 0: ``moments`` (n_i and, when the centres standardise, their sums; a centre too
    small for the model abstains and is left out), then ``design`` (the pooled mean and SD and
    N_total, from those messages only). Iteration k: ``local_update`` → (x_i, w_i, n_i),
    the z-update, ``consensus`` {z} → each centre's loss at z (the objective), residuals and
    stopping. ``min_samples``: the ledger's rule (``admm.min_samples``).

    ``private`` (the privacy–utility stage, issue 24): iteration k is instead ``private_update``
    → each centre's clipped, noised v_i = x_{i,k+1} + w_{i,k} (:data:`PRIVATE_UPDATE`, noise
    added at the centre) through :func:`fedclust.federation.secure_sum` (secure aggregation as
    the process's privacy settings say), z from their mean, ``consensus`` {z} acknowledged
    without a loss; no residuals or objective (NaN in the history: they are not privatised),
    so the run takes exactly ``max_iter`` iterations (the accountant's number of releases).
    """
    s = settings
    m = int(min_samples)
    std_p, ack_p, up_p, obj_p = (
        replace(p, min_samples=m) for p in (STANDARDIZE, DESIGN_ACK, LOCAL_UPDATE, OBJECTIVE)
    )

    def server(proxies: list) -> AdmmResult:
        t0 = time.perf_counter()
        if not proxies:
            raise InputDataError("consensus ADMM needs at least one center", where="admm split")
        msgs = call_all(proxies, "moments", {}, 0, "standardize", std_p, MOMENTS_REQUEST)
        kept = [(p, msg) for p, msg in zip(proxies, msgs, strict=True) if msg is not None]
        if not kept:
            raise InputDataError(
                "every center is too small to release the model (disclosure.nfilter_glm / "
                "nfilter_subset)",
                where="admm split",
                fix="fewer, larger centers",
            )
        proxies, msgs = [p for p, _ in kept], [msg for _, msg in kept]
        request: dict[str, Any] = {"n_total": int(sum(msg["n"] for msg in msgs))}
        if "sum" in msgs[0]:
            _same_dims([len(msg["sum"]) for msg in msgs])
            mean, sd = server_moments(msgs)
            ym, ysd = 0.0, 1.0
            if s.problem not in P.CLASSIFICATION:
                mean, sd, ym, ysd = mean[:-1], sd[:-1], mean[-1], sd[-1]
            request.update(mean=mean, sd=sd, y_mean=ym, y_sd=ysd)
        _answered(call_all(proxies, "design", request, 0, "design", ack_p, DESIGN), proxies, 0)
        z: np.ndarray | None = None
        rows, converged = [], False
        for k in range(1, s.max_iter + 1):
            if private:
                z = _private_iteration(proxies, k, s, m)
                rows.append(_row(k, *[np.nan] * 5))
                continue
            msgs = _answered(
                call_all(proxies, "local_update", {}, k, "local_update", up_p, LOCAL_REQUEST),
                proxies, k,
            )  # fmt: skip
            if z is None:
                z = np.zeros(_same_dims([len(msg["x"]) for msg in msgs]))
            z_prev, z = z, server_z_update(msgs, s)
            losses = _answered(
                call_all(proxies, "consensus", {"z": z}, k, "objective", obj_p, CONSENSUS),
                proxies, k,
            )  # fmt: skip
            obj = server_objective(losses, z, s)
            rows.append(_row(k, obj, *server_residuals(msgs, z, z_prev, s)))
            if s.eps_abs is not None and _stop(rows[-1]):
                converged = True
                break
        hist = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
        return AdmmResult(z, hist, converged, time.perf_counter() - t0)

    return server


def _private_iteration(proxies: list, k: int, s: AdmmSettings, min_samples: int) -> np.ndarray:
    """One iteration of the private mode (:func:`consensus_server`): secure Σ v_i, the
    z-update from their mean, z sent down (acknowledged)."""
    up_p, ack_p = (replace(p, min_samples=min_samples) for p in (PRIVATE_UPDATE, CONSENSUS_ACK))
    sums, alive = secure_sum(proxies, "private_update", {}, k, "private_update", up_p,
                             LOCAL_REQUEST)  # fmt: skip
    _answered([sums if p.cid in alive else None for p in proxies], proxies, k)
    v = np.asarray(sums["v"], dtype=float) / len(proxies)
    z = P.z_update(s.problem, v, s.lam, s.rho, len(proxies), s.penalize_bias)
    _answered(call_all(proxies, "consensus", {"z": z}, k, "objective", ack_p, CONSENSUS),
              proxies, k)  # fmt: skip
    return z


def _same_dims(dims: Sequence[int]) -> int:
    if len(set(dims)) != 1:
        raise InputDataError(f"centers hold different feature counts {sorted(set(dims))}")
    return int(dims[0])


def _answered(msgs: Sequence[Message | None], proxies: Sequence[Any], k: int) -> list[Message]:
    """Every centre's answer: consensus ADMM is exact, a centre cannot leave mid-run."""
    missing = [p.cid for p, msg in zip(proxies, msgs, strict=True) if msg is None]
    if missing:
        raise InputDataError(
            f"center(s) {', '.join(missing)} sent no answer in ADMM iteration {k}",
            where="admm",
            fix="see the ledger's abstention reason; consensus ADMM needs every center that "
            "took part in round 0",
        )
    return list(msgs)


def admm_federated(
    centres: Sequence[AdmmCentre],
    settings: AdmmSettings,
    ledger: Ledger | None = None,
    min_samples: int = 1,
    transport: Transport = INPROCESS,
    private: bool = False,
) -> AdmmResult:
    """Consensus ADMM over ``centres`` through the seam :func:`fedclust.federation.federate`
    (``transport``: in-process or Flower), every message in ``ledger``; ``private``: the
    centres' privatised iteration (:func:`consensus_server`)."""
    ledger = ledger if ledger is not None else Ledger()
    server = consensus_server(settings, min_samples, private)
    res = federate(list(centres), server, ledger=ledger, transport=transport)
    res.ledger = ledger
    return res


def admm_distributed(
    blocks: Sequence[tuple[str, Any, Any]],
    settings: AdmmSettings,
    ledger: Ledger | None = None,
    min_samples: int = 1,
    policies: dict[str, DisclosurePolicy] | None = None,
    transport: Transport = INPROCESS,
) -> AdmmResult:
    """Algorithm 2 over ready blocks ``[(center, A_i, b_i), ...]`` (A_i with its bias column,
    no standardisation): :func:`admm_federated` with one :class:`AdmmCentre` per block.
    ``policies``: the centres' own disclosure policies by name (default their configured ones).
    """
    if not blocks:
        raise InputDataError("consensus ADMM needs at least one center", where="admm split")
    centres = [
        AdmmCentre(
            name,
            A,
            b,
            settings,
            standardize=False,
            bias=False,
            min_samples=min_samples,
            disclosure=(policies or {}).get(name),
        )  # fmt: skip
        for name, A, b in blocks
    ]
    return admm_federated(centres, settings, ledger, min_samples, transport)
