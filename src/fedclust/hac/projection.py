"""Shared-seed random projections (seed 001 §2.4, §3.3.4, Algorithms 2 and 5).

All centers draw the *same* matrix from the shared seed, so ``X^(k) @ Q`` rows are comparable
across centers. Used by the random-projection HAC variants and by the attacks.

The matrix is public, so it is defined as a *stream of row blocks*: rows
``[b·BLOCK_ROWS, (b+1)·BLOCK_ROWS)`` of Q come from their own generator seeded with
:func:`block_seed` (``derive_seed(seed, "projection", kind, d, k, b)``): Gaussian blocks are
``torch.randn`` of a ``torch.Generator`` with that seed, float32 (:func:`torch_normal_block`; ~4×
faster than numpy's float32 ziggurat on the benchmark machine, which made the normals ~60 % of the
sketch), Cauchy and sparse blocks numpy ``default_rng`` draws. A center computes
``X Q = Σ_b X[:, block b] Q_b`` holding one block at a time (memory O(BLOCK_ROWS × k), never
d × k), and a simulation of many centers draws each block once and applies it to every center
(:func:`project_centers`); each center still computes exactly its own ``X_c Q`` (n_c · d · k
multiply-adds for a dense Q, n_c · nnz(Q) for a sparse one: :func:`center_cost`). On the
transport seam each centre draws Q itself from the shared seed (:func:`project_own`, bit for bit
its row of :func:`project_centers`); the centres of one process (the in-process simulation, a
SuperNode answering several messages) share the drawn blocks (:func:`shared_blocks`: the cost
of drawing once for all, memory d × k up to :data:`CACHE_BYTES`, streamed beyond). The sketch
arithmetic runs in float32 by default (``dtype``), which changes distances by < 1e-6 relative
against a JL error of ~1.5e-2 at k = 1000 (benchmarks/hac_projection.py); Cauchy sketches
(cityblock) are always float64. torch's CPU normal fill is vectorised per instruction set, so
the same seed gives the same matrix on one machine and torch version (tested against
``torch.randn``), not necessarily bit for bit across CPUs.

Very sparse projections (``kind="sparse"``, Li, Hastie & Church 2006; ℓ2 metrics only): entries
``√s·{+1, 0, −1}``, ``s = √d`` by default, so a center touches only ``d k / s`` entries of Q.
Measured on 500 × 50 000 VST-like data, k = 1000 (benchmarks/hac_projection.py): median
relative distance error 0.0153 for both Gaussian and very sparse, Pearson correlation with the
pooled distances 0.905 (sparse) vs 0.899 (Gaussian), at ~1/9 of the Gaussian path's time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
import scipy.sparse as sp

from ..seeds import derive_seed, rng

Kind = Literal["gaussian", "cauchy", "sparse", "orthogonal"]
BLOCK_ROWS = 4096  # rows of Q per generator: part of the definition of the stream
STREAM_KINDS = ("gaussian", "cauchy", "sparse")


def sparse_s(d: int, density: float | None = None) -> float:
    """Li, Hastie & Church (2006) sparsity s: ``1/density``, default ``√d`` (very sparse)."""
    if density is None:
        return max(1.0, float(np.sqrt(d)))
    if not 0 < density <= 1:
        raise ValueError(f"sparse projection density must lie in (0, 1], got {density}")
    return 1.0 / density


def torch_normal_block(block_seed: int, rows: int, k: int, out=None) -> np.ndarray:
    """``rows × k`` float32 N(0, 1) draws of ``torch.Generator().manual_seed(block_seed)``.

    Equals ``torch.randn(rows, k, generator=torch.Generator().manual_seed(block_seed))``
    (tested); ``out`` (a float32 torch tensor with ≥ rows × k elements) is filled in place, so a
    stream of blocks reuses one buffer. torch's vectorised CPU normal fill is ~4× faster than
    numpy's float32 ziggurat here (benchmarks/hac_projection.py), which dominated the sketch.
    """
    import torch

    g = torch.Generator().manual_seed(int(block_seed))
    buf = torch.empty(rows * k, dtype=torch.float32) if out is None else out[: rows * k]
    return buf.normal_(generator=g).view(rows, k).numpy()


def _block(g, rows: int, k: int, kind: str, s: float, block_seed: int, out=None):
    """One row block of Q (float32 draws; Cauchy float64; scipy CSR for very sparse draws)."""
    if kind == "gaussian":
        return torch_normal_block(block_seed, rows, k, out)
    if kind == "cauchy":  # float64: heavy tails, see project_centers
        return g.standard_cauchy((rows, k))
    if kind == "sparse":
        # entries √s·{+1, 0, −1} with probabilities {1/2s, 1 − 1/s, 1/2s}: E q = 0, E q² = 1
        m, p = rows * k, 1.0 / s
        if p > 0.02:
            u = g.random((rows, k), dtype=np.float32)
            return np.float32(np.sqrt(s)) * ((u < p / 2).astype(np.float32) - (u > 1 - p / 2))
        nnz = int(g.binomial(m, p))
        flat = np.sort(g.choice(m, size=nnz, replace=False, shuffle=False))
        val = np.where(g.random(nnz) < 0.5, -1.0, 1.0).astype(np.float32) * np.float32(np.sqrt(s))
        return sp.csr_matrix((val, (flat // k, flat % k)), shape=(rows, k))
    raise ValueError(
        f"unknown projection kind {kind!r}: use gaussian, cauchy, sparse or orthogonal"
    )


def _check_stream(d: int, k: int, kind: str) -> None:
    if d < 1 or k < 1:
        raise ValueError(f"projection needs d ≥ 1 and k ≥ 1, got d={d}, k={k}")
    if kind not in STREAM_KINDS:
        raise ValueError(f"unknown projection kind {kind!r}: use gaussian, cauchy or sparse")


def block_seed(d: int, k: int, kind: str, seed: int, b: int, density: float | None = None) -> int:
    """The seed of row block ``b`` of the shared matrix (``fedclust.seeds.derive_seed``)."""
    extra = () if kind != "sparse" else (sparse_s(d, density),)
    return derive_seed(seed, "projection", kind, d, k, b, *extra)


def _block_b(d: int, k: int, kind: str, seed: int, density: float | None, b: int, out=None):
    """Row block ``b`` of Q: its own generator, so blocks can be drawn in any order/thread."""
    s = sparse_s(d, density) if kind == "sparse" else 1.0
    bs = block_seed(d, k, kind, seed, b, density)
    rows = min(d, (b + 1) * BLOCK_ROWS) - b * BLOCK_ROWS
    g = None if kind == "gaussian" else np.random.default_rng(bs)
    return _block(g, rows, k, kind, s, bs, out)


def projection_blocks(
    d: int, k: int, kind: Kind, seed: int, density: float | None = None
) -> Iterator[tuple[int, int, np.ndarray | sp.csr_matrix]]:
    """Yield ``(start, stop, Q[start:stop])`` row blocks of the shared-seed ``d × k`` matrix."""
    _check_stream(d, k, kind)
    for b, start in enumerate(range(0, d, BLOCK_ROWS)):
        yield start, min(d, start + BLOCK_ROWS), _block_b(d, k, kind, seed, density, b)


#: the public matrix's row blocks a process keeps (:func:`shared_blocks`): a matrix larger than
#: this is streamed (drawn again by each centre of the process) rather than held
CACHE_BYTES = 512 * 2**20
_SHARED: dict[tuple, dict[int, np.ndarray | sp.csr_matrix]] = {}


def shared_blocks(d: int, k: int, kind: str, seed: int, density: float | None = None):
    """The row blocks of the shared-seed matrix this process holds (``{b: Q_b}``, filled as
    they are drawn), or None when the matrix exceeds :data:`CACHE_BYTES`.

    Per process, the latest matrix only: the centres of one process (the in-process simulation,
    or a SuperNode answering several messages) draw Q once between them, as the simulation of
    :func:`project_centers` always did; a new seed replaces it. The blocks are public (the
    sites' shared seed), the cache holds nothing of any centre's data.
    """
    size = d * k * (8 if kind == "cauchy" else 4)
    if size > CACHE_BYTES:
        return None
    key = (int(d), int(k), str(kind), int(seed), density)
    if key not in _SHARED:
        _SHARED.clear()
        _SHARED[key] = {}
    return _SHARED[key]


def run_seed(base_seed: int, metric: str, k: int, run: int) -> int:
    """The seed of Q for projection run ``run`` of sketch size ``k`` (the hac stage's
    ``derive_seed(seed, "hac projection", metric, k, run)``), derived by every site from the
    shared ``base_seed``: the server names only the run."""
    return derive_seed(base_seed, "hac projection", metric, k, run)


def project_centers(
    xs: Sequence[np.ndarray],
    k: int,
    kind: Kind,
    seed: int,
    dtype: str | np.dtype = "float32",
    density: float | None = None,
    threads: int = 1,
    store: dict | None = None,
) -> list[np.ndarray]:
    """``[X_c Q for c]``: each row block of Q is drawn once and applied to every center.

    Equals calling :func:`project` with :func:`projection_matrix` center by center (same Q);
    memory O(threads × BLOCK_ROWS × k) beyond the inputs and outputs. ``threads > 1`` draws
    and applies blocks in parallel threads (torch/numpy release the GIL while filling and in BLAS).
    ``store``: a dict of already drawn blocks (:func:`shared_blocks`), read and filled; the
    result is the same bit for bit (only who draws a block changes).
    """
    # Cauchy entries reach ~1e9: float32 sums would cancel catastrophically in y_i − y_j
    dt = np.dtype("float64" if kind == "cauchy" else dtype)
    d = xs[0].shape[1]
    if any(x.shape[1] != d for x in xs):
        raise ValueError("every center must hold the same features (columns)")
    _check_stream(d, k, kind)
    n_blocks = -(-d // BLOCK_ROWS)

    def block(b: int, buf):
        if store is None:
            return _block_b(d, k, kind, seed, density, b, buf)
        qb = store.get(b)
        if qb is None:  # its own memory: the block outlives this call
            qb = store[b] = _block_b(d, k, kind, seed, density, b)
        return qb

    def work(first: int) -> list[np.ndarray]:
        import torch

        ys = [np.zeros((x.shape[0], k), dtype=dt) for x in xs]
        buf = None
        if kind == "gaussian" and store is None:  # one reused block buffer: no page faults
            buf = torch.empty(BLOCK_ROWS * k, dtype=torch.float32)
        for b in range(first, n_blocks, threads):
            qb = block(b, buf)
            cols = slice(b * BLOCK_ROWS, min(d, (b + 1) * BLOCK_ROWS))
            if sp.issparse(qb):
                for x, y in zip(xs, ys, strict=True):  # each center's own X_c Q_b
                    y += (qb.T @ np.asarray(x[:, cols], dtype=dt).T).T
                continue
            qt = torch.from_numpy(qb.astype(dt, copy=False))
            for x, y in zip(xs, ys, strict=True):  # each center's own X_c Q_b, accumulated
                xb = torch.from_numpy(np.asarray(x[:, cols], dtype=dt))
                torch.from_numpy(y).addmm_(xb, qt)  # in place (~17 % less CPU than y += x @ q)
        return ys

    threads = max(1, min(int(threads), n_blocks))
    if threads == 1:
        return work(0)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads) as pool:
        parts = list(pool.map(work, range(threads)))
    return [np.sum([p[c] for p in parts], axis=0, dtype=dt) for c in range(len(xs))]


def project_own(
    x: np.ndarray,
    k: int,
    kind: Kind,
    seed: int,
    dtype: str | np.dtype = "float32",
    density: float | None = None,
    threads: int = 1,
) -> np.ndarray:
    """Centre-side (Alg. 5): one centre's ``X Q``, Q drawn from the shared ``seed`` by the
    centre itself (kept per process: :func:`shared_blocks`). Bit for bit the centre's row of
    :func:`project_centers` (each centre's sums are its own)."""
    x = np.asarray(x)
    store = shared_blocks(x.shape[1], k, kind, seed, density) if x.ndim == 2 else None
    return project_centers([x], k, kind, seed, dtype, density, threads, store)[0]


def center_cost(n_c: int, d: int, k: int, kind: Kind, density: float | None = None) -> float:
    """Multiply-adds one center spends on ``X_c Q`` (expected nnz for the sparse kind)."""
    if kind == "sparse":
        return n_c * d * k / sparse_s(d, density)
    return float(n_c) * d * k


def projection_matrix(
    d: int, k: int, kind: Kind, seed: int, density: float | None = None
) -> np.ndarray:
    """The full ``d × k`` projection matrix drawn from the shared ``seed`` (float64 array).

    - ``gaussian``: i.i.d. N(0, 1) entries (2-stable; JL for Euclidean distances,
      ``‖xQ − yQ‖² / k`` is unbiased for ``‖x − y‖²``).
    - ``cauchy``: i.i.d. standard Cauchy entries (1-stable; sketches for cityblock distance).
    - ``sparse``: very sparse random projection (Li, Hastie & Church 2006): ``√s·{±1, 0}`` with
      ``P(±1) = 1/2s``, ``s = 1/density`` (default ``√d``); same Euclidean estimator as Gaussian.
    - ``orthogonal``: Haar-distributed orthonormal columns (``k ≤ d``: ``QᵀQ = I_k``) or rows
      (``k ≥ d``: ``QQᵀ = I_d``, hides d; exact ℓ2 distances — orthogonal perturbation, Alg. 2).
      QR of a Gaussian matrix with the sign fix of Mezzadri (2007); dense O(d²k), small d only
      (orthogonal perturbation of many genes uses :func:`orthogonal_transform`).

    The stream kinds equal the row blocks of :func:`projection_blocks` stacked.
    """
    if d < 1 or k < 1:
        raise ValueError(f"projection needs d ≥ 1 and k ≥ 1, got d={d}, k={k}")
    if kind == "orthogonal":
        g = rng(seed, "projection", kind, d, k)
        tall = d >= k
        a = g.standard_normal((d, k) if tall else (k, d))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        return q if tall else q.T
    parts = [
        qb.toarray() if sp.issparse(qb) else qb
        for _, _, qb in projection_blocks(d, k, kind, seed, density)
    ]
    return np.vstack(parts).astype(float)


def project(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Center-side: the only thing a center shares in Algorithms 2 and 5, ``X Q``."""
    return np.asarray(x, dtype=float) @ q


# ---- orthogonal perturbation at all genes (Algorithm 2) --------------------------------------

ORTHO_ROUNDS = 3


def _ortho_plan(p: int, seed: int, rounds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    g = rng(seed, "orthogonal transform", p, rounds)
    return [(np.where(g.random(p) < 0.5, -1.0, 1.0), g.permutation(p)) for _ in range(rounds)]


def orthogonal_transform(
    x: np.ndarray, seed: int, p: int | None = None, rounds: int = ORTHO_ROUNDS, rows: int = 256
) -> np.ndarray:
    """``X Q`` for a shared-seed exactly orthogonal ``p × p`` Q without forming Q (Alg. 2).

    Rows are zero-padded from d to ``p ≥ d`` features (hides d), then ``rounds`` times: random
    signs (D), orthonormal DCT-II (``scipy.fft.dct(norm="ortho")``, C), random permutation (P):
    ``Q = Π (D C P)``, a product of orthogonal maps, so ``‖xQ − yQ‖ = ‖x − y‖`` exactly (up to
    rounding). O(n p log p) time, O(rows × p) working memory; any p (no power of two needed).
    """
    from scipy.fft import dct

    x = np.asarray(x, dtype=float)
    n, d = x.shape
    p = d if p is None else int(p)
    if p < d:
        raise ValueError(f"orthogonal perturbation needs p ≥ d, got p={p} < d={d}")
    plan = _ortho_plan(p, seed, rounds)
    out = np.empty((n, p))
    for i in range(0, n, rows):
        z = np.zeros((min(rows, n - i), p))
        z[:, :d] = x[i : i + rows]
        for signs, perm in plan:
            z = dct(z * signs, type=2, norm="ortho", axis=1, overwrite_x=True)[:, perm]
        out[i : i + rows] = z
    return out


# ---- server-side distance estimators (Algorithm 5, spec §6) ----------------------------------


def gaussian_distances(y: np.ndarray, k: int | None = None) -> np.ndarray:
    """Euclidean estimate from a Gaussian sketch with N(0,1) entries: ``‖y_i − y_j‖ / √d′``.

    (The thesis prints 1/n; it is 1/d′ — spec §0.4.) Condensed vector.
    """
    from scipy.spatial.distance import pdist

    k = y.shape[1] if k is None else k
    return pdist(y, "euclidean") / np.sqrt(k)


def cauchy_distances(y: np.ndarray, estimator: str = "geometric") -> np.ndarray:
    """Cityblock estimate from a Cauchy sketch (spec §6), condensed vector.

    ``geometric``: ``exp(mean_t log|Δ_t|) · cos^{d′}(π / 2d′)`` (geometric-mean estimator, eq.
    2.2 for p = 1), computed in log space; ``median``: ``median_t |Δ_t|``. Pairs are processed one
    row at a time, never as an n × n × d′ array.
    """
    y = np.asarray(y, dtype=float)
    n, k = y.shape
    if estimator not in ("geometric", "median"):
        raise ValueError(f"unknown Cauchy estimator {estimator!r}: use geometric or median")
    out = np.empty(n * (n - 1) // 2)
    log_corr = k * np.log(np.cos(np.pi / (2 * k))) if k > 1 else 0.0
    pos = 0
    for i in range(n - 1):  # one row of differences at a time: O(n d′) memory
        diff = np.abs(y[i + 1 :] - y[i])
        if estimator == "geometric":
            with np.errstate(divide="ignore"):
                val = np.exp(np.log(diff).mean(axis=1) + log_corr)
        else:
            val = np.median(diff, axis=1)
        out[pos : pos + val.size] = val
        pos += val.size
    return out


def normalise_rows(x: np.ndarray, centre: bool = False) -> np.ndarray:
    """Center-side preprocessing for the cosine (and correlation, ``centre=True``) sketch."""
    x = np.asarray(x, dtype=float)
    if centre:
        x = x - x.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norm == 0, 1.0, norm)


def sketch_distances(y: np.ndarray, metric: str, estimator: str = "geometric") -> np.ndarray:
    """Server-side: condensed distance estimate for ``metric`` from the stacked sketches ``y``.

    ``euclidean``: Gaussian sketch; ``cityblock``: Cauchy sketch; ``cosine`` / ``correlation``:
    Gaussian sketch of locally normalised samples, ``½ ‖x̂ − ŷ‖²``.
    """
    if metric == "euclidean":
        return gaussian_distances(y)
    if metric == "cityblock":
        return cauchy_distances(y, estimator)
    if metric in ("cosine", "correlation"):
        return 0.5 * gaussian_distances(y) ** 2
    raise ValueError(f"no sketch for metric {metric!r}")


def sketch_kind(metric: str, kind: str | None = None) -> Kind:
    """The stable law of the projection for ``metric``: Cauchy for ℓ1; for the ℓ2 metrics
    Gaussian, or ``kind="sparse"`` (very sparse, Li et al. 2006, same estimator)."""
    if metric == "cityblock":
        if kind not in (None, "cauchy"):
            raise ValueError(f"the cityblock sketch needs Cauchy entries, not {kind!r}")
        return "cauchy"
    if kind not in (None, "gaussian", "sparse"):
        raise ValueError(f"projection kind {kind!r} for {metric}: use gaussian or sparse")
    return kind or "gaussian"
