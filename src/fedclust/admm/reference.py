"""Reference solutions of (3.3) from the field's libraries (seed 003 §12.4).

* ridge: closed form x = ((2/N)AᵀA + λD)⁻¹(2/N)Aᵀb (D = I, or I without the bias entry);
* LASSO: scikit-learn ``Lasso``: its objective (1/(2N))‖b − Aw‖² + α‖w‖₁ is half of ours with
  α = λ/2; a penalised bias is an explicit ones column (``fit_intercept=False``);
* logistic: scikit-learn ``LogisticRegression``: C Σ ln(1 + e^{−y f}) + ½‖w‖² is ours × 1/λ with
  C = 1/(λN) (λ = 0: no penalty);
* SVM: scipy ``minimize`` of the same objective: its dual box QP by L-BFGS-B (:func:`svm`),
  checked in the tests against SLSQP on the primal QP
  min (1/N)Σξ_i + (λ/2)‖Dx‖² s.t. ξ_i ≥ 1 − y_i a_iᵀx, ξ ≥ 0 (:func:`svm_primal_slsqp`).

``A`` holds the bias as its last column (a column of ones).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import optimize

from . import problems as P


def reference_solution(
    problem: str, A: np.ndarray, b: np.ndarray, lam: float, penalize_bias: bool = True
) -> np.ndarray:
    """x* of (3.3) for ``problem`` (bias = last column of A)."""
    P.check_problem(problem)
    return {"ridge": ridge, "lasso": lasso, "logistic": logistic, "svm": svm}[problem](
        A, b, lam, penalize_bias
    )


def ridge(A: np.ndarray, b: np.ndarray, lam: float, penalize_bias: bool = True) -> np.ndarray:
    n, d = A.shape
    D = np.diag(P._pen_mask(d, penalize_bias))
    return np.linalg.solve((2.0 / n) * A.T @ A + lam * D, (2.0 / n) * A.T @ b)


def lasso(A: np.ndarray, b: np.ndarray, lam: float, penalize_bias: bool = True) -> np.ndarray:
    from sklearn.linear_model import Lasso

    if penalize_bias:
        m = Lasso(alpha=lam / 2.0, fit_intercept=False, tol=1e-12, max_iter=100_000)
        return m.fit(A, b).coef_.copy()
    m = Lasso(alpha=lam / 2.0, fit_intercept=True, tol=1e-12, max_iter=100_000)
    m.fit(A[:, :-1], b)
    return np.append(m.coef_, m.intercept_)


def logistic(A: np.ndarray, b: np.ndarray, lam: float, penalize_bias: bool = True) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    n = len(b)
    kw = {"C": 1.0 / (lam * n)} if lam > 0 else {"C": np.inf}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # sklearn ≥ 1.8 renames `penalty`
        if penalize_bias:
            m = LogisticRegression(fit_intercept=False, tol=1e-12, max_iter=100_000, **kw)
            return m.fit(A, b).coef_.ravel().copy()
        m = LogisticRegression(fit_intercept=True, tol=1e-12, max_iter=100_000, **kw)
        m.fit(A[:, :-1], b)
    return np.append(m.coef_.ravel(), m.intercept_)


def svm(A: np.ndarray, b: np.ndarray, lam: float, penalize_bias: bool = True) -> np.ndarray:
    """SVM optimum through its dual (scipy L-BFGS-B, box constraints), certified by the gap.

    For a fixed bias β the primal min over the penalised coordinates has the dual
    max_α Σα_i(1 − y_iβ) − ‖Σα_i y_i a_i‖²/(2λ), 0 ≤ α_i ≤ 1/N, x = Σα_i y_i a_i/λ. A penalised
    bias is one of those coordinates (β = 0); an unpenalised one is found by Brent's method on
    the (convex) optimal value as a function of β. λ must be > 0.
    """
    if lam <= 0:
        raise ValueError("the SVM reference needs lambda > 0")
    if penalize_bias:
        return _svm_dual(A, b, lam, 0.0, None)[0]
    Aw, state = A[:, :-1], {"alpha": None}

    def value(beta: float) -> float:
        x, v, state["alpha"] = _svm_dual(Aw, b, lam, beta, state["alpha"])
        return v

    beta = optimize.minimize_scalar(value, bracket=(-1.0, 1.0), tol=1e-10).x
    return np.append(_svm_dual(Aw, b, lam, beta, state["alpha"])[0], beta)


def _svm_dual(A, b, lam, beta, alpha0):
    YA, n = b[:, None] * A, len(b)
    c = 1.0 - b * beta

    def neg(a: np.ndarray) -> tuple[float, np.ndarray]:
        s = YA.T @ a
        return -(a @ c) + (s @ s) / (2.0 * lam), -c + YA @ s / lam

    res = optimize.minimize(
        neg,
        np.zeros(n) if alpha0 is None else alpha0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0 / n)] * n,
        options={"ftol": 0.0, "gtol": 1e-14, "maxiter": 100_000, "maxfun": 100_000},
    )
    return YA.T @ res.x / lam, -res.fun, res.x


def svm_primal_slsqp(A: np.ndarray, b: np.ndarray, lam: float, penalize_bias: bool = True):
    """The SVM objective as a QP in (x, ξ) solved by scipy SLSQP (slow: small data / tests)."""
    n, d = A.shape
    mask = P._pen_mask(d, penalize_bias)

    def f(v: np.ndarray) -> tuple[float, np.ndarray]:
        x, xi = v[:d], v[d:]
        g = np.concatenate([lam * mask * x, np.full(n, 1.0 / n)])
        return float(xi.sum() / n + 0.5 * lam * (mask * x) @ x), g

    YA = b[:, None] * A
    # ξ_i + y_i a_iᵀx − 1 ≥ 0 and ξ ≥ 0, as one linear inequality block G v − h ≥ 0
    G = np.block([[YA, np.eye(n)], [np.zeros((n, d)), np.eye(n)]])
    h = np.concatenate([np.ones(n), np.zeros(n)])
    cons = {"type": "ineq", "fun": lambda v: G @ v - h, "jac": lambda v: G}
    v0 = np.concatenate([np.zeros(d), np.ones(n)])
    res = optimize.minimize(
        f,
        v0,
        jac=True,
        method="SLSQP",
        constraints=[cons],
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    return res.x[:d]
