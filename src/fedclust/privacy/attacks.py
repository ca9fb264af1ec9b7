"""The attacks of an honest-but-curious server on the messages it recorded (issue 22, item 5).

Each attack takes only what a server holds — the kept messages of a
:class:`~fedclust.privacy.recorder.RecordingLedger` and public settings — and returns what it
claims about individual samples. :func:`matched_records` / :func:`matched_rows` score a claim
against the truth (which only the test or the suite holds): a record counts as *recovered* when
the claim equals it exactly (to rounding). No attack ever reads a centre's data.

- KM counts, :func:`km_records`: every (time, status, group) cell of a centre's count table is
  that many patients; cells below the floor isolate them (:func:`isolated_in_cells`);
- CV predictions, :func:`cv_records`: per-patient rows are the records;
- Cox-PH sums, :func:`cox_pair_difference`: a 2-patient stratum's score is x_event − x_other;
- genewise HAC, :func:`genewise_two_samples`: a 2-sample centre's moments and distance share
  give both profiles;
- simultaneous HAC, :func:`simultaneous_records`: centroids of one sample; local merge heights;
- gradual HAC, :func:`gradual_differencing`: published sums over sets the server rebuilds from
  the merge broadcasts, differenced across runs on the same data;
- ADMM, :func:`admm_rows`: the x-update's optimality condition gives each iterate's local
  gradient; for a one-row centre it is parallel to the row;
- DEC stage B, :func:`dec_single_embeddings`: a hostile k = n − 1, m = 1 request returns
  single-patient embeddings;
- abstentions, :func:`counts_in_reasons`: numbers in the reasons a centre gives;
- sketches / perturbation, :func:`known_input_inversion`: with enough known (x, y) pairs the
  map is solved and every row inverted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

Kept = Sequence[tuple[dict[str, Any], dict[str, Any]]]


# ---------------------------------------------------------------- scoring
def _key(time: float, event: int, group: Any, digits: int = 9) -> tuple:
    return (round(float(time), digits), int(event), str(group))


def matched_records(claims: Iterable[tuple], truth: Iterable[tuple]) -> int:
    """How many true (time, event, group) records a multiset of claims gets exactly right."""
    c = Counter(_key(*r) for r in claims)
    t = Counter(_key(*r) for r in truth)
    return int(sum(min(v, c[k]) for k, v in t.items()))


def matched_rows(claims: np.ndarray | None, truth: np.ndarray, rtol: float = 1e-6) -> int:
    """How many rows of ``truth`` appear (to ``rtol`` of the row's scale) among ``claims``."""
    if claims is None or len(claims) == 0:
        return 0
    claims, truth = np.atleast_2d(claims), np.atleast_2d(truth)
    scale = np.maximum(np.abs(truth).max(axis=1), 1e-12)
    d = np.abs(truth[:, None, :] - claims[None, :, :]).max(axis=2)
    return int(np.sum(d.min(axis=1) <= rtol * scale))


# ---------------------------------------------------------------- survival
def km_records(
    times: np.ndarray, events: np.ndarray, censored: np.ndarray, labels: Sequence[str]
) -> list[tuple]:
    """Records rebuilt from one centre's per-(group, time) event / censoring counts: each count
    of c at (group g, time τ) is c patients (τ, status, g)."""
    out = []
    ev, ce = np.atleast_2d(events), np.atleast_2d(censored)
    for i, lab in enumerate(labels):
        for j, tau in enumerate(times):
            out += [(tau, 1, lab)] * int(round(ev[i, j])) + [(tau, 0, lab)] * int(round(ce[i, j]))
    return out


def isolated_in_cells(tables: Iterable[np.ndarray], floor: int) -> int:
    """Patients in non-empty cells holding fewer than ``floor`` of them (DataSHIELD
    ``nfilter.tab``): each such cell singles out one or two patients."""
    n = 0
    for t in tables:
        e = np.asarray(t, dtype=float).ravel()
        n += int(e[(e > 0) & (e < floor)].sum())
    return n


def cv_records(kept: Kept) -> list[tuple]:
    """(time, event, "cv") records read from per-patient CV rows (fields time / event)."""
    out = []
    for _, m in kept:
        if "time" in m and "event" in m:
            out += [(t, e, "cv") for t, e in zip(np.ravel(m["time"]), np.ravel(m["event"]),
                                                  strict=True)]  # fmt: skip
    return out


def cox_pair_difference(msg: dict[str, Any]) -> np.ndarray | None:
    """x_event − x_other of a 2-patient, 1-event stratum from its score at β = 0 (the gradient
    is (x_e − x_o)/2 there). None when the message is not of such a stratum."""
    if int(msg.get("n", 0)) != 2 or int(msg.get("events", 0)) != 1:
        return None
    return 2.0 * np.asarray(msg["gradient"], dtype=float)


def cox_known_partner(msg: dict[str, Any], known: np.ndarray) -> np.ndarray | None:
    """The other patient of a 2-patient stratum when the attacker knows one of them (side
    information): ``known + d`` or ``known − d``; both are returned as claims."""
    d = cox_pair_difference(msg)
    if d is None:
        return None
    return np.vstack([known + d, known - d])


# ---------------------------------------------------------------- HAC
def genewise_two_samples(stats_msg: dict[str, Any], dist_msg: dict[str, Any],
                         global_stats: dict[str, Any]) -> np.ndarray | None:  # fmt: skip
    """Both profiles of a 2-sample centre from its genewise cosine messages.

    Round 1 gives per gene the mean μ and m2 = Σ(x − μ)², so {x_1g, x_2g} = μ_g ± r_g with
    r_g = √(m2_g / 2); round 2's share d_ij = ½ Σ_s (y_si − y_sj)², y = x / ‖x‖ (global norms,
    broadcast), fixes the relative sign s_i s_j of every pair of genes. Returns the 2 × G
    profiles (up to their order), or None when the centre does not hold exactly 2 samples.
    """
    if int(stats_msg.get("n", 0)) != 2:
        return None
    mu, r = np.asarray(stats_msg["mean"], float), np.sqrt(np.asarray(stats_msg["m2"], float) / 2)
    norm = np.asarray(global_stats["norm"], float)
    mu_, r_ = mu / norm, r / norm
    g = len(mu)
    ref = int(np.argmax(r_))
    d = np.asarray(dist_msg["d"], float)
    sign = np.ones(g)
    for j in range(g):
        if j == ref:
            continue
        a, b = min(ref, j), max(ref, j)
        obs = d[g * a - a * (a + 1) // 2 + (b - a - 1)]
        same = (mu_[ref] - mu_[j]) ** 2 + (r_[ref] - r_[j]) ** 2
        flip = (mu_[ref] - mu_[j]) ** 2 + (r_[ref] + r_[j]) ** 2
        sign[j] = 1.0 if abs(obs - same) <= abs(obs - flip) else -1.0
    return np.vstack([mu + sign * r, mu - sign * r])


def simultaneous_records(kept: Kept) -> np.ndarray:
    """Centroids of one sample (size 1) in simultaneous-sharing messages: the samples."""
    rows = [np.asarray(m["centroids"])[np.asarray(m["sizes"]) == 1]
            for _, m in kept if "centroids" in m]  # fmt: skip
    return np.vstack(rows) if rows else np.zeros((0, 0))


def simultaneous_pair_distances(kept: Kept) -> int:
    """Local merges of two single samples in the partial dendrograms: each height is the exact
    distance between two patients (disclosed by design)."""
    n = 0
    for _, m in kept:
        dend = np.asarray(m.get("dendrogram", np.zeros((0, 5))))
        if dend.size:
            # a row [a, b, h, size, node]: two leaves merged when size == 2
            n += int(np.sum(dend[:, 3] == 2))
    return n


def gradual_publications(kept: Kept, home: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The (centre, member sample ids, sum) of every centroid a centre published in one
    gradual-sharing run, with the members rebuilt by the server from the merge broadcasts:
    cluster ``s`` holds the leaves merged into it; a publication of centre k covers the
    leaves of k in the cluster not published before. ``home``: each sample id's centre (the
    server learns it from who sends the candidates and local rows)."""
    members: dict[int, set[int]] = {}
    published: dict[int, set[int]] = {}
    seen_merges: set[tuple] = set()
    out = []

    def merges(m):
        """The merges a server request broadcasts (events ``[0, i, j, h, t]``)."""
        for e in np.asarray(m.get("events", np.zeros((0, 5))), float):
            if e[0] == 0:
                yield (int(e[4]), int(e[1]), int(e[2]))

    for rec, m in kept:
        for key in merges(m) if rec["sender"] == "server" else ():
            if key in seen_merges:  # one broadcast per centre
                continue
            seen_merges.add(key)
            i, j = key[1], key[2]
            mi = members.pop(i, {i}) | members.pop(j, {j})
            members[i] = members[j] = mi  # the survivor keeps the id (both ids point here)
            pi = published.pop(i, set()) | published.pop(j, set())
            published[i] = published[j] = pi
        if rec["kind"] == "centroid" and rec["sender"] != "server":
            k = int(re.sub(r"\D", "", rec["sender"]) or 0)
            size = np.atleast_1d(np.asarray(m["size"], float))
            cent = np.atleast_2d(np.asarray(m["centroid"], float))
            slots = np.atleast_1d(np.asarray(m["cluster"], float)).astype(int)
            for s, p, c in zip(slots, size, cent, strict=True):
                mem = members.get(int(s), {int(s)})
                pub = published.setdefault(int(s), set())
                part = sorted(v for v in mem if home[v] == k and v not in pub)
                if len(part) != int(p):  # the rebuilt set must have the published size
                    continue
                pub.update(part)
                for v in mem:  # every id of the cluster shares the published set
                    published[v] = pub
                out.append((k, np.asarray(part), p * c))
    return out


def differencing(
    pubs: Sequence[tuple[int, np.ndarray, np.ndarray]], n: int
) -> dict[int, np.ndarray]:
    """Samples isolated by linear combinations of published sums over known sets: sample i is
    recovered when its unit vector lies in the row space of the sets' indicator matrix (per
    centre). Returns {sample id: recovered row}."""
    out: dict[int, np.ndarray] = {}
    by_centre: dict[int, list] = {}
    for k, part, s in pubs:
        by_centre.setdefault(k, []).append((part, s))
    for rows in by_centre.values():
        ids = np.unique(np.concatenate([p for p, _ in rows]))
        pos = {int(v): i for i, v in enumerate(ids)}
        M = np.zeros((len(rows), len(ids)))
        for r, (p, _) in enumerate(rows):
            M[r, [pos[int(v)] for v in p]] = 1.0
        S = np.vstack([s for _, s in rows])
        # rows of the pseudo-inverse: a with Mᵀa = e_i whenever e_i is in the row space
        coef = np.linalg.pinv(M)  # ids × releases
        for i, v in enumerate(ids):
            if np.abs(coef[i] @ M - np.eye(len(ids))[i]).max() < 1e-8:
                out[int(v)] = coef[i] @ S
    return out


def gradual_differencing(runs: Sequence[Kept], home: np.ndarray, n: int) -> dict[int, np.ndarray]:
    """Differencing of the centroid sums published in several gradual-sharing runs on the
    same data (other n_min, other linkage): {sample id: recovered row}."""
    pubs = [p for kept in runs for p in gradual_publications(kept, home)]
    return differencing(pubs, n)


# ---------------------------------------------------------------- ADMM
def admm_gradients(kept: Kept, centre: str, rho: float) -> list[np.ndarray]:
    """∇g_i at each iterate x_{i,k+1} from the x-update's optimality condition
    ∇g_i(x) + ρ(x − z_k + w_{i,k}) = 0: the server holds x_{i,k+1}, w_{i,k} and z_k."""
    z = None
    grads = []
    for rec, m in kept:
        if rec["receiver"] == centre and "z" in m:  # the consensus z the centre received
            z = np.asarray(m["z"], float)
        elif rec["kind"] == "local_update" and rec["sender"] == centre:
            zk = np.zeros_like(np.asarray(m["x"], float)) if z is None else z
            grads.append(rho * (zk - np.asarray(m["w"], float) - np.asarray(m["x"], float)))
    return grads


def admm_rows(kept: Kept, centre: str, rho: float) -> np.ndarray | None:
    """A one-row centre's row u = [v; 1]: every local gradient of a GLM-type loss is a multiple
    of u, and the bias coordinate is 1. None unless the gradients span one direction."""
    grads = [g for g in admm_gradients(kept, centre, rho) if np.abs(g).max() > 1e-14]
    if not grads:
        return None
    G = np.vstack(grads)
    s = np.linalg.svd(G, compute_uv=False)
    if len(s) > 1 and s[1] > 1e-8 * s[0]:
        return None  # more than one direction: not a single row
    g = grads[int(np.argmax([abs(v[-1]) for v in grads]))]
    if abs(g[-1]) < 1e-14:
        return None
    return (g / g[-1])[None, :]


# ---------------------------------------------------------------- DEC stage B
def dec_single_embeddings(kept: Kept) -> np.ndarray:
    """Local centroids over one sample (count 1): that patient's embedding (the server also
    holds the TSAE's decoder, so the embedding decodes to the patient's input)."""
    rows = [np.asarray(m["centroids"])[np.asarray(m["counts"]) == 1]
            for _, m in kept if "centroids" in m and "counts" in m]  # fmt: skip
    rows = [r for r in rows if len(r)]
    return np.vstack(rows) if rows else np.zeros((0, 0))


# ---------------------------------------------------------------- abstentions
_NUMBER = re.compile(r"\d")


def counts_in_reasons(abstentions: pd.DataFrame) -> int:
    """Abstention reasons that carry a number (a count below a floor, a sample size)."""
    if abstentions.empty or "reason" not in abstentions:
        return 0
    return int(abstentions["reason"].astype(str).str.contains(_NUMBER).sum())


# ---------------------------------------------------------------- one row per sample
def known_input_inversion(y: np.ndarray, known_x: np.ndarray, known_y: np.ndarray) -> np.ndarray:
    """Rows ``x`` of ``y = x Q`` (any linear map) from known pairs: Q = pinv(known_x) known_y,
    x = y pinv(Q) (exact when the known inputs span the row space)."""
    q = np.linalg.lstsq(known_x, known_y, rcond=None)[0]
    return y @ np.linalg.pinv(q)
