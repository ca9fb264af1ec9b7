"""The curious server's attacks on the privatised ADMM and boosting messages (issue 24, item 3:
the disclosure attacks re-run on the privatised messages, their success over ε).

The adversary is differential privacy's own: it holds the kept messages of one run on D (a
:class:`~fedclust.privacy.recorder.RecordingLedger`) and knows every record of D but the
target patient p — so it can compute what the target's centre would have sent on D ∖ {p}
(the second run of a differencing attack, here on the same public round-0 result: the same
standardisation or grid, so nothing but p differs). The attacks take arrays and return
arrays; scoring needs the truth, which only the experiment holds.

**Consensus ADMM (ridge, lasso), secure aggregation off.** A centre's release per iteration is
v_k = x_{i,k+1} + w_{i,k} (:mod:`.admm`); with w_0 = 0 and w_{k+1} = v_k − z_{k+1} the server
rebuilds every x_{i,k+1} and w_{i,k} and so every local gradient
g_k = ρ(z_k − w_{i,k} − x_{i,k+1}) = 2ω(M x_{i,k+1} − c) (the x-update's normal equations,
ω = 1/N_total, M = A_iᵀA_i, c = A_iᵀb_i; :func:`fedclust.privacy.attacks.admm_gradients` on
the stage's plain messages). Knowing the centre's other rows, every residual
g_k/2ω − M_rest x_k + c_rest = a_p(a_pᵀx_k − b_p) is a multiple of the patient's row: one
iteration gives it back (:func:`admm_record`; recovering the whole of (M, c) without that
knowledge needs more iterations than the d(d+1)/2 + d unknowns allow at the default 10).
With secure aggregation the ledger holds masked shares: read as the fixed-point encoding they
decode to uniform noise and the same attack returns garbage. Chance level
(:func:`prior_success`): the best data-independent guess, one fixed record, within the same
tolerance of the target.

**Boosting (histogram protocol).** The root node of every tree holds all of a centre's rows,
so every tree's root histogram has the patient's count in its bin of each feature, and tree
1's Σg (base margin, the same for every patient) carries g_p = σ(base) − y_p. The attack
averages the root count histograms over the trees, subtracts those of D ∖ {p} on the run's
grid and takes the argmax bin per feature (:func:`boosting_bins`); the label from the sign of
the first tree's Σg difference (:func:`boosting_label`). Chance level: the best constant
guess — per feature the share of its most frequent bin, for the label the majority share.
(ε, δ)-DP bounds any attack's expected success by e^ε · chance + δ — for boosting only as far
as the privatised fields go: which bins of a node are non-empty at a centre is not privatised,
and a patient alone in a bin of its centre shows there at every ε.

Not attacked here: round 0, which neither stage privatises (stated in the report). The same
adversary differences it exactly at every ε — a centre's column sums Σv (ADMM's standardising
moments, boosting's grid moments) minus those of D ∖ {p} are the patient's row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedclust.federation.secagg import decode

Kept = Sequence[tuple[dict[str, Any], dict[str, Any]]]


# ---------------------------------------------------------------- consensus ADMM
def _floats(a: Any) -> np.ndarray:
    """A released vector as the server reads it: a masked share (uint64, secure aggregation)
    decoded as the fixed-point encoding — the best the server can do with it."""
    a = np.asarray(a)
    return decode(a) if a.dtype == np.uint64 else a.astype(np.float64)


def admm_releases(kept: Kept, centre: str) -> tuple[np.ndarray, np.ndarray]:
    """The target centre's private releases v_k (K × d) and the consensus z_k it was sent
    before each (K × d, z_0 = 0) from the kept messages of a private ADMM run."""
    z, vs, zs = None, [], []
    for rec, m in kept:
        if rec["receiver"] == centre and "z" in m:
            z = np.asarray(m["z"], np.float64)
        elif rec["kind"] == "private_update" and rec["sender"] == centre and "v" in m:
            v = _floats(m["v"])
            vs.append(v)
            zs.append(np.zeros_like(v) if z is None else z)
    if not vs:
        return np.zeros((0, 0)), np.zeros((0, 0))
    return np.vstack(vs), np.vstack(zs)


def admm_iterates(V: np.ndarray, Z: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """(x_{k+1}, g_k) per iteration from the releases: w_0 = 0, x_{k+1} = v_k − w_k,
    g_k = ρ(z_k − w_k − x_{k+1}), w_{k+1} = v_k − z_{k+1} (the centre's dual update)."""
    K = len(V)
    w = np.zeros(V.shape[1])
    X, G = np.zeros_like(V), np.zeros_like(V)
    for k in range(K):
        X[k] = V[k] - w
        G[k] = rho * (Z[k] - w - X[k])
        if k + 1 < K:
            w = V[k] - Z[k + 1]
    return X, G


def admm_record(
    X: np.ndarray, G: np.ndarray, weight: float, A_rest: np.ndarray, b_rest: np.ndarray
) -> np.ndarray:
    """The target's standardised row and target [a_p (without the bias); b_p] from the
    iterates (``X``: x_{k+1}, ``G``: g_k, K × d) and the centre's other rows in the run's
    standardisation (``A_rest`` with the bias column last, ``b_rest``; ``weight``: ω).

    g_k / 2ω = (M_rest + a aᵀ) x_k − c_rest − a b, so r_k = g_k / 2ω − M_rest x_k + c_rest
    = a (aᵀx_k − b): every residual is a multiple of the row. a: the leading right singular
    vector of R (K × d) scaled to bias entry 1; b = mean_k(aᵀx_k − r_k·a / ‖a‖²)."""
    R = G / (2.0 * weight) - X @ (A_rest.T @ A_rest) + A_rest.T @ b_rest
    if not len(R) or not np.all(np.isfinite(R)):
        return np.full(A_rest.shape[1], np.nan)
    a = np.linalg.svd(R, full_matrices=False)[2][0]
    a = a / a[-1] if abs(a[-1]) > 1e-300 else np.full_like(a, np.nan)
    b = float(np.mean(X @ a - R @ a / (a @ a)))
    return np.append(a[:-1], b)


def prior_success(W: np.ndarray, tol: float) -> float:
    """Chance level of a reconstruction within ``tol`` (relative): the best fixed guess among
    the records ``W`` (n × d) — the largest share of the other records within ``tol`` of it."""
    W = np.asarray(W, np.float64)
    dist = np.sqrt(np.maximum(
        (W * W).sum(1)[:, None] - 2 * W @ W.T + (W * W).sum(1)[None, :], 0.0))  # fmt: skip
    hit = dist <= tol * np.linalg.norm(W, axis=1)[None, :]  # guess g (row), target t (column)
    np.fill_diagonal(hit, False)
    return float(hit.sum(1).max() / max(len(W) - 1, 1))


def relative_error(estimate: np.ndarray, truth: np.ndarray) -> float:
    """‖estimate − truth‖ / ‖truth‖ (∞ for an empty estimate)."""
    estimate, truth = np.ravel(estimate), np.ravel(truth)
    if estimate.shape != truth.shape or not np.all(np.isfinite(estimate)):
        return float("inf")
    return float(np.linalg.norm(estimate - truth) / max(np.linalg.norm(truth), 1e-300))


# ---------------------------------------------------------------- boosting
def root_histograms(kept: Kept, centre: str) -> list[dict[str, Any]]:
    """Per tree, the target centre's root-node histogram message (the first histogram
    message of each round whose nodes include 0)."""
    out: dict[int, dict[str, Any]] = {}
    for rec, m in kept:
        if rec["kind"] == "histogram" and rec["sender"] == centre and "nodes" in m:
            nodes = [int(v) for v in np.ravel(m["nodes"])]
            if 0 in nodes and int(rec["round"]) not in out:
                keys = ("bin_feature", "bin_start", "bin_end", "bin_n")
                out[int(rec["round"])] = {k: m[k][nodes.index(0)] for k in keys}
    return [out[r] for r in sorted(out)]


def dense_counts(msg: dict[str, Any], n_bins: np.ndarray) -> np.ndarray:
    """A root histogram message's counts per (feature, bin) (d × max bins; at floor 1 every
    run is one bin — a merged run is put on its first bin)."""
    out = np.zeros((len(n_bins), int(np.max(n_bins))))
    f, s = np.ravel(msg["bin_feature"]), np.ravel(msg["bin_start"])
    np.add.at(out, (f.astype(int), s.astype(int)), np.ravel(msg["bin_n"]).astype(float))
    return out


def boosting_bins(with_p: Sequence[np.ndarray], without_p: np.ndarray,
                  n_bins: np.ndarray) -> np.ndarray:  # fmt: skip
    """The target's bin per feature: argmax over the feature's bins of the mean over trees of
    the released root counts minus the counts of D ∖ {p} (d,). No root histogram released
    (the centre refused every one, e.g. a noisy count above its size): the prior's mode, the
    most frequent bin of the others. A bin the release lists as non-empty (which bins are
    non-empty is not privatised) while the others leave it empty is the target's, at any ε."""
    diff = np.mean(np.asarray(with_p), axis=0) - without_p if len(with_p) else without_p
    mask = np.arange(diff.shape[1])[None, :] < np.asarray(n_bins)[:, None]
    if len(with_p):  # a bin listed (non-empty: not privatised) that the others leave empty
        alone = np.any(np.asarray(with_p) > 0, axis=0) & (without_p == 0) & mask
        diff = np.where(alone, np.inf, diff)
    return np.argmax(np.where(mask, diff, -np.inf), axis=1)


def boosting_label(g_with: float, g_without: float, base_probability: float) -> int:
    """The target's label from tree 1's Σg difference g_p = σ(base) − y_p (nearest of the two
    values)."""
    g = float(g_with) - float(g_without)
    return int(abs(g - (base_probability - 1.0)) < abs(g - base_probability))
