"""The four convex problems of seed 003 §2.1 (D6.2 eqs 3.3–3.7) and their ADMM sub-steps.

Unified problem (3.3) with the bias absorbed (u_i = [v_i; 1], x = [w; b]):

    min_x  (1/N) Σ_i l(xᵀu_i, y_i) + R(x)

ridge:    l = (xᵀu − y)²,             R = (λ/2)‖x‖²   (3.4)
lasso:    l = (xᵀu − y)²,             R = λ‖x‖₁       (3.5)
logistic: l = ln(1 + exp(−y xᵀu)),    R = (λ/2)‖x‖²   (3.6), y ∈ {−1, +1}
svm:      l = max(1 − y xᵀu, 0),      R = (λ/2)‖x‖²   (3.7), y ∈ {−1, +1}

D6.2 penalises the bias (it is part of x); ``penalize_bias=False`` leaves the last coordinate
out of R (the usual statistical convention, and scikit-learn's). A block's loss is weighted by
``weight`` = 1/N_total (the scaling settled in seed 003 §2.3: Σ_i g_i = g, so the distributed
optimum is the centralized one) or 1/n_i (the literal (3.34), which rescales λ by N_b).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, optimize
from scipy.special import expit

from ..errors import ConfigError

PROBLEMS = ("ridge", "lasso", "logistic", "svm")
CLASSIFICATION = ("logistic", "svm")


def check_problem(problem: str, where: str = "admm.tasks.<task>.problem") -> str:
    if problem not in PROBLEMS:
        raise ConfigError(
            f"unknown ADMM problem '{problem}'",
            where=where,
            fix=f"use one of {', '.join(PROBLEMS)}",
        )
    return problem


def _pen_mask(d: int, penalize_bias: bool) -> np.ndarray:
    """1 for penalised coordinates; the bias is the last coordinate."""
    m = np.ones(d)
    if not penalize_bias:
        m[-1] = 0.0
    return m


def loss(problem: str, A: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
    """Sum over rows of the loss l(xᵀu_i, y_i) (unweighted)."""
    m = A @ x
    if problem in ("ridge", "lasso"):
        return float(np.sum((m - b) ** 2))
    if problem == "logistic":
        return float(np.sum(np.logaddexp(0.0, -b * m)))
    if problem == "svm":
        return float(np.sum(np.maximum(1.0 - b * m, 0.0)))
    raise check_problem(problem)  # pragma: no cover


def regularizer(problem: str, x: np.ndarray, lam: float, penalize_bias: bool = True) -> float:
    """R(x) of (3.4)–(3.7)."""
    xm = x * _pen_mask(len(x), penalize_bias)
    if problem == "lasso":
        return float(lam * np.sum(np.abs(xm)))
    return float(0.5 * lam * xm @ xm)


def objective(problem: str, A, b, x, lam: float, penalize_bias: bool = True) -> float:
    """(3.3): (1/N) Σ l + R at x."""
    return loss(problem, A, b, x) / len(b) + regularizer(problem, x, lam, penalize_bias)


def soft(a: np.ndarray, kappa: float | np.ndarray) -> np.ndarray:
    """Soft(a, κ) = (a − κ)_+ − (−a − κ)_+ (3.24)."""
    return np.maximum(a - kappa, 0.0) - np.maximum(-a - kappa, 0.0)


def z_update(
    problem: str, v: np.ndarray, lam: float, rho: float, n_blocks: int, penalize_bias: bool
) -> np.ndarray:
    """argmin_z R(z) + (N_b ρ/2)‖z − v‖², v = x̄ + w̄ (3.32; centralized: N_b = 1, 3.19).

    ridge/logistic/svm: z = N_bρ v/(λ + N_bρ) (= (3.40)); lasso: Soft(v, λ/(N_bρ)) (3.24).
    An unpenalised bias is copied from v.
    """
    mask = _pen_mask(len(v), penalize_bias)
    c = n_blocks * rho
    if problem == "lasso":
        return soft(v, lam * mask / c)
    return v * c / (lam * mask + c)


@dataclass
class LocalSolver:
    """argmin_x weight·Σ_rows l(xᵀa, b) + (ρ/2)‖x − v‖² on one block (the x-update, 3.23/3.32).

    ridge/lasso: closed form x = (2wAᵀA + ρI)⁻¹(2wAᵀb + ρv) with a cached Cholesky factor;
    logistic: Newton's method warm-started at the previous x, to ``tol``;
    svm: ``svm_method='dual'`` solves the box-constrained dual of the proximal hinge problem
    with L-BFGS-B (exact up to ``tol``); ``'subgradient'`` takes D6.2's ``n_sub`` subgradient
    steps of size μ (3.37–3.38, Algorithm 2), an inexact x-update as published.
    """

    problem: str
    A: np.ndarray
    b: np.ndarray
    weight: float
    rho: float
    tol: float = 1e-10
    max_inner: int = 100
    svm_method: str = "dual"
    svm_step: float = 0.01
    svm_substeps: int = 10
    _x: np.ndarray | None = field(default=None, repr=False)
    _chol: tuple | None = field(default=None, repr=False)
    _beta: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_problem(self.problem)
        if self.svm_method not in ("dual", "subgradient"):
            raise ConfigError(
                f"unknown svm x-update '{self.svm_method}'",
                where="admm.svm.x_update",
                fix="use 'dual' (exact) or 'subgradient' (D6.2 Algorithm 2)",
            )
        d = self.A.shape[1]
        self._x = np.zeros(d)
        if self.problem in ("ridge", "lasso"):
            H = 2.0 * self.weight * (self.A.T @ self.A) + self.rho * np.eye(d)
            self._chol = linalg.cho_factor(H)
            self._Atb = 2.0 * self.weight * (self.A.T @ self.b)
        if self.problem == "svm":
            self._beta = np.zeros(len(self.b))
            self._YA = self.b[:, None] * self.A

    def __call__(self, v: np.ndarray) -> np.ndarray:
        if self.problem in ("ridge", "lasso"):
            x = linalg.cho_solve(self._chol, self._Atb + self.rho * v)
        elif self.problem == "logistic":
            x = self._newton(v)
        elif self.svm_method == "dual":
            x = self._svm_dual(v)
        else:
            x = self._svm_subgradient(v)
        self._x = x
        return x.copy()

    def _newton(self, v: np.ndarray) -> np.ndarray:
        A, y, w, rho = self.A, self.b, self.weight, self.rho
        x = self._x.copy()
        eye = np.eye(len(x))
        for _ in range(self.max_inner):
            p = expit(-y * (A @ x))  # σ(−y aᵀx)
            g = -w * (A.T @ (y * p)) + rho * (x - v)
            H = w * (A.T * (p * (1.0 - p))) @ A + rho * eye
            step = linalg.solve(H, g, assume_a="pos")
            x = x - step
            if np.max(np.abs(step)) < self.tol:
                break
        return x

    def _svm_dual(self, v: np.ndarray) -> np.ndarray:
        """max_β Σβ_i(1 − y_i a_iᵀv) − ‖Σ β_i y_i a_i‖²/(2ρ), 0 ≤ β_i ≤ weight; x = v + YAᵀβ/ρ."""
        YA, rho = self._YA, self.rho
        margin = 1.0 - YA @ v

        def neg_dual(beta: np.ndarray) -> tuple[float, np.ndarray]:
            s = YA.T @ beta
            f = -(beta @ margin) + (s @ s) / (2.0 * rho)
            return f, -margin + (YA @ s) / rho

        res = optimize.minimize(
            neg_dual,
            self._beta,
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, self.weight)] * len(margin),
            options={"ftol": 0.0, "gtol": self.tol, "maxiter": 20 * self.max_inner},
        )
        self._beta = res.x
        return v + YA.T @ res.x / rho

    def _svm_subgradient(self, v: np.ndarray) -> np.ndarray:
        """(3.37)–(3.38): δ = ρ(x − v) − weight·Σ_{y aᵀx < 1} y a (0 at the kink), x ← x − μδ."""
        YA, x = self._YA, self._x.copy()
        for _ in range(self.svm_substeps):
            active = (YA @ x) < 1.0
            delta = self.rho * (x - v) - self.weight * YA[active].sum(axis=0)
            x = x - self.svm_step * delta
        return x


__all__ = [
    "CLASSIFICATION",
    "PROBLEMS",
    "LocalSolver",
    "check_problem",
    "loss",
    "objective",
    "regularizer",
    "soft",
    "z_update",
]
