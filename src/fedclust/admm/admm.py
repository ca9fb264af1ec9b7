"""Centralized (Algorithm 1) and consensus-distributed (Algorithm 2) ADMM, seed 003 §2.2–2.3.

Scaled form with the split x − z = 0 (3.17–3.19) and its consensus version (3.32 = 3.44):

    x_{i,k+1} = argmin_x g_i(x) + (ρ/2)‖x − z_k + w_{i,k}‖²        (center i, own data only)
    z_{k+1}   = argmin_z h(z) + (N_bρ/2)‖z − x̄_{k+1} − w̄_k‖²      (server, messages only)
    w_{i,k+1} = w_{i,k} + x_{i,k+1} − z_{k+1}                      (center i)

Initialisation x = z = w = 0 (Algorithms 1–2). What crosses the boundary is what D6.2 §3.3
says: each center sends (x_{i,k+1}, w_{i,k}); the server broadcasts z_{k+1}. For the
objective history every center also sends one number, its weighted loss at z_{k+1}. Each
message is checked against its :class:`~fedclust.federation.Protocol` (``PROTOCOLS``): center
messages carry their sample count n_i, as the core's rule "aggregates-carry-their-sample-count"
asks, and are checked at the center against its own disclosure policy before they leave it.

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
from ..federation import Ledger, Message, Protocol
from ..federation.disclosure import DisclosurePolicy, configured_policy
from ..privacy.centre import centre_send, glm_floor, server_send
from . import problems as P

LOCAL_UPDATE = Protocol(
    "admm_local_update", {"x": "parameters", "w": "aggregate", "n": "count"}, glm=True
)
CONSENSUS = Protocol("admm_consensus", {"z": "parameters"})
OBJECTIVE = Protocol("admm_objective", {"loss": "aggregate", "n": "count"})
PROTOCOLS = (LOCAL_UPDATE, CONSENSUS, OBJECTIVE)

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


# ---- consensus ADMM: center side ----------------------------------------------------------


class AdmmCenter:
    """Center-side state of consensus ADMM. Holds its own (A_i, b_i), x_i and w_i."""

    def __init__(
        self,
        name: str,
        A: Any,
        b: Any,
        settings: AdmmSettings,
        n_total: int,
        policy: DisclosurePolicy | None = None,
    ):
        self.name = name
        self.policy = policy if policy is not None else configured_policy(name)
        self.A, self.b = check_block(A, b, settings.problem, where=f"center {name}")
        self.settings = settings
        self.n = len(self.b)
        self.weight = 1.0 / (n_total if settings.scaling == "total" else self.n)
        self.solve = settings.solver(self.A, self.b, self.weight)
        d = self.A.shape[1]
        self.x, self.w = np.zeros(d), np.zeros(d)

    def local_update(self, z: np.ndarray) -> Message:
        """x_{i,k+1} = argmin g_i(x) + (ρ/2)‖x − z_k + w_{i,k}‖²; message (x_{i,k+1}, w_{i,k})."""
        self.x = self.solve(z - self.w)
        return {"x": self.x.copy(), "w": self.w.copy(), "n": self.n}

    def receive_consensus(self, z: np.ndarray) -> Message:
        """w_{i,k+1} = w_{i,k} + x_{i,k+1} − z_{k+1}; message: weighted local loss at z_{k+1}."""
        self.w = self.w + self.x - z
        return {
            "loss": self.weight * P.loss(self.settings.problem, self.A, self.b, z),
            "n": self.n,
        }


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


def takes_part(policy: DisclosurePolicy, n: int, d: int, min_samples: int = 1) -> bool:
    """Whether a center of ``n`` rows may release a ``d``-parameter model (module docstring)."""
    return int(n) >= glm_floor(policy, int(d), int(min_samples))


def admm_distributed(
    blocks: Sequence[tuple[str, Any, Any]],
    settings: AdmmSettings,
    ledger: Ledger | None = None,
    min_samples: int = 1,
    policies: dict[str, DisclosurePolicy] | None = None,
) -> AdmmResult:
    """Algorithm 2 (generalised): consensus ADMM over ``blocks`` = [(center, A_i, b_i), ...].

    Every message is checked at its center and passes ``ledger.send`` under its protocol:
    center → server ``local_update`` {x, w, n} and ``objective`` {loss, n}; server → center
    ``consensus`` {z}. ``min_samples``: ``admm.min_samples``, raising the centers' own floors
    (``policies`` by center name; default their configured ones). A center too small for the
    model abstains and is left out (module docstring).
    """
    t0 = time.perf_counter()
    s = settings
    ledger = ledger if ledger is not None else Ledger()
    if not blocks:
        raise InputDataError("consensus ADMM needs at least one center", where="admm split")
    pols = {name: (policies or {}).get(name) or configured_policy(name) for name, _, _ in blocks}
    kept = []
    for name, A, b in blocks:
        n, d_i = len(np.asarray(b).ravel()), np.asarray(A).shape[1]
        if takes_part(pols[name], n, d_i, min_samples):
            kept.append((name, A, b))
        else:
            ledger.abstain(name, 0, LOCAL_UPDATE, "refused: too few rows for a model of this size")
    if not kept:
        raise InputDataError(
            "every center is too small to release the model (disclosure.nfilter_glm / "
            "nfilter_subset)",
            where="admm split",
            fix="fewer, larger centers",
        )
    n_total = sum(len(np.asarray(b).ravel()) for _, _, b in kept)
    centers = [AdmmCenter(name, A, b, s, n_total, pols[name]) for name, A, b in kept]
    dims = {c.A.shape[1] for c in centers}
    if len(dims) != 1:
        raise InputDataError(f"centers hold different feature counts {sorted(dims)}")
    d = dims.pop()
    z = np.zeros(d)
    up, obj_p = (replace(p, min_samples=int(min_samples)) for p in (LOCAL_UPDATE, OBJECTIVE))
    rows, converged = [], False
    for k in range(1, s.max_iter + 1):
        msgs = [
            centre_send(ledger, c.policy, c.name, c.n, c.local_update(z), k, "local_update", up)
            for c in centers
        ]
        z_prev, z = z, server_z_update(msgs, s)
        losses = []
        for c in centers:
            received = server_send(ledger, c.name, {"z": z.copy()}, k, "consensus", CONSENSUS)
            answer = c.receive_consensus(received["z"])
            losses.append(centre_send(ledger, c.policy, c.name, c.n, answer, k, "objective", obj_p))
        obj = server_objective(losses, z, s)
        rows.append(_row(k, obj, *server_residuals(msgs, z, z_prev, s)))
        if s.eps_abs is not None and _stop(rows[-1]):
            converged = True
            break
    hist = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
    return AdmmResult(z, hist, converged, time.perf_counter() - t0, ledger)
