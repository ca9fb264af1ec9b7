"""Many independent L-BFGS-B problems driven in lockstep (scipy's own solver, reverse
communication).

pydeseq2 fits every gene's dispersion with ``scipy.optimize.minimize(method="L-BFGS-B")`` on
log α (:func:`pydeseq2.utils.fit_alpha_mle`). A federation cannot call the loss of one gene at a
time (one round trip per evaluation and gene), but L-BFGS-B is a reverse-communication solver:
it asks for ``(f, g)`` at a point and waits. :func:`minimize_lockstep` keeps one solver state
per problem, collects every problem that waits for ``(f, g)``, asks ``evaluate`` for all of them
at once (one federated round), hands the answers back and repeats. Each problem sees the same
sequence of ``setulb`` calls as ``scipy.optimize._minimize_lbfgsb`` makes for it alone (same
defaults: ``maxcor=10``, ``ftol=2.22e-9``, ``gtol=1e-5``, ``maxls=20``), so with the same
``(f, g)`` values the iterates are scipy's, bit for bit.

Needs scipy ≥ 1.15 (the C port of L-BFGS-B, ``_lbfgsb.setulb`` with integer task codes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

try:  # scipy >= 1.15: the C port with integer task codes
    from scipy.optimize import _lbfgsb
except ImportError:  # pragma: no cover
    _lbfgsb = None

FG, NEW_X, CONVERGENCE = 3, 1, 4
MAXCOR, FTOL, GTOL, MAXLS, MAXFUN, MAXITER = 10, 2.2204460492503131e-09, 1e-5, 20, 15000, 15000


def check_scipy() -> None:
    """Raise a clear error when this scipy lacks the reverse-communication L-BFGS-B."""
    doc = getattr(getattr(_lbfgsb, "setulb", None), "__doc__", "") or ""
    if _lbfgsb is None or "ln_task" not in doc:
        import scipy

        from fedclust.errors import ConfigError

        raise ConfigError(
            f"scipy {scipy.__version__} lacks the C L-BFGS-B (scipy.optimize._lbfgsb.setulb "
            "with integer tasks) that federated dispersions drive in lockstep",
            where="data.rnaseq.preprocess: federated",
            fix="install scipy >= 1.15",
        )


@dataclass
class LockstepResult:
    x: np.ndarray  # (P, n) solutions
    fun: np.ndarray  # (P,) objective at x
    success: np.ndarray  # (P,) bool: CONVERGENCE (scipy's res.success)
    nfev: np.ndarray  # (P,) function evaluations (scipy's count, the start point included)
    nit: np.ndarray  # (P,) iterations
    rounds: int  # evaluation rounds (calls of ``evaluate``)


def minimize_lockstep(
    evaluate: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    x0: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> LockstepResult:
    """Minimise P independent problems of dimension n with scipy's L-BFGS-B.

    ``evaluate(idx, x)``: objective ``f`` (len(idx),) and gradient ``g`` (len(idx), n) of the
    problems ``idx`` at the points ``x`` (len(idx), n) — one call per round. ``x0``, ``lower``,
    ``upper``: (P, n) start points and finite bounds (the start is clipped into them, as scipy).
    """
    check_scipy()
    x0 = np.atleast_2d(np.asarray(x0, dtype=np.float64))
    p, n = x0.shape
    lo = np.broadcast_to(np.asarray(lower, np.float64), (p, n)).copy()
    hi = np.broadcast_to(np.asarray(upper, np.float64), (p, n)).copy()
    x = np.clip(x0, lo, hi)
    m = MAXCOR
    nbd = np.full(n, 2, np.int32)  # both bounds finite (pydeseq2: [log min_disp, log max_disp])
    factr = FTOL / np.finfo(float).eps
    wa = np.zeros((p, 2 * m * n + 5 * n + 11 * m * m + 8 * m))
    iwa = np.zeros((p, 3 * n), np.int32)
    task = np.zeros((p, 2), np.int32)
    ln_task = np.zeros((p, 2), np.int32)
    lsave = np.zeros((p, 4), np.int32)
    isave = np.zeros((p, 44), np.int32)
    dsave = np.zeros((p, 29))
    f = np.zeros(p)
    g = np.zeros((p, n))
    nfev = np.ones(p, np.int64)  # scipy evaluates the start point when it builds the function
    nit = np.zeros(p, np.int64)
    # scipy's ScalarFunction evaluates x0 at construction; its first FG request is x0 (cached)
    fv, gv = evaluate(np.arange(p), x.copy())
    f[:], g[:] = fv, np.asarray(gv, np.float64).reshape(p, n)
    last = x.copy()
    rounds = 1
    g_last = g.copy()
    active = np.ones(p, bool)
    while True:
        want = []
        for i in np.flatnonzero(active):
            xi, gi = x[i], g[i]
            while True:
                _lbfgsb.setulb(m, xi, lo[i], hi[i], nbd, f[i], gi, factr, GTOL, wa[i],
                               iwa[i], task[i], lsave[i], isave[i], dsave[i], MAXLS,
                               ln_task[i])  # fmt: skip
                t = task[i, 0]
                if t == FG:
                    if np.array_equal(xi, last[i]):  # scipy's memoised (f, g)
                        gi[:] = g_last[i]
                        continue
                    want.append(i)
                    break
                if t == NEW_X:
                    nit[i] += 1
                    if nit[i] >= MAXITER:
                        task[i] = (5, 504)
                    elif nfev[i] > MAXFUN:
                        task[i] = (5, 502)
                    continue
                active[i] = False
                break
        if not want:
            break
        idx = np.asarray(want)
        fv, gv = evaluate(idx, x[idx].copy())
        rounds += 1
        f[idx] = fv
        g[idx] = np.asarray(gv, np.float64).reshape(len(idx), n)
        g_last[idx] = g[idx]
        last[idx] = x[idx]
        nfev[idx] += 1
    return LockstepResult(x, f, task[:, 0] == CONVERGENCE, nfev, nit, rounds)
