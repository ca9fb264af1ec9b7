"""Initial local clustering (seed 002 §3.4–3.5): oracle, dirty-uniform, k-means, per-client DEC.

Each runs on one client's own data with K_i clusters (K_i known, §1). Only ``oracle`` and
``dirty_uniform`` read labels: they are simulators of a local clustering, as in the paper.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from fedclust import torch_optim
from fedclust.errors import ConfigError
from fedclust.seeds import derive_seed, rng

from .system import dirty_uniform, oracle_partition

METHODS = ("oracle", "dirty_uniform", "kmeans", "dec")


def local_dec(x: np.ndarray, k: int, cfg: dict, seed: int) -> np.ndarray:
    """Per-client DEC (§3.5) with :mod:`fedclust.dec`: TSAE pretraining (Adam), k-means init
    in the embedding, KL(P‖Q) fine-tuning; returns the cluster of every sample."""
    from fedclust.dec.model import TSAE, DECModel, encoder_dims  # DEC init only (exp1)
    from fedclust.dec.pipeline import train_autoencoder
    from fedclust.dec.train import embed, kmeans_centroids, predict, shuffle_generator, train_dec

    torch.manual_seed(derive_seed(seed, "fedcref", "dec", "init"))
    xt = torch.as_tensor(np.asarray(x, dtype=np.float32))
    tsae = TSAE(encoder_dims(x.shape[1], cfg["arch"]), hidden_act="relu", final_act="sigmoid")
    gen = shuffle_generator(derive_seed(seed, "fedcref", "dec", "shuffle"))
    bs = int(cfg["batch_size"])
    train_autoencoder(tsae, xt, "adam", float(cfg["ae_lr"]), int(cfg["ae_epochs"]), bs, "mse",
                      True, gen)  # fmt: skip
    mu, lab = kmeans_centroids(embed(tsae, xt), k, "none", int(cfg["n_init"]), seed % (2**31))
    model = DECModel(tsae, k, 1.0)
    with torch.no_grad():
        model.centroids.copy_(torch.as_tensor(mu))
    opt = torch_optim.Adam(model.parameters(), lr=float(cfg["dec_lr"]))  # no torch._dynamo
    train_dec(model, xt, opt, bs, int(cfg["dec_epochs"]), float(cfg["tol"]), "batch", lab, True,
              gen)  # fmt: skip
    return predict(model, xt)


def initial_partition(
    method: str, x: np.ndarray, y: np.ndarray, k: int, seed: int, cfg: dict, dirtiness: float = 0.0
) -> np.ndarray:
    """Local cluster ids 0..k−1 of one client's samples."""
    if method == "oracle":
        return oracle_partition(y)
    if method == "dirty_uniform":
        return dirty_uniform(y, dirtiness, rng(seed, "fedcref", "dirty"))
    if method == "kmeans":
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=k, n_init=10, random_state=derive_seed(seed, "km") % (2**31))
        return km.fit_predict(x).astype(int)
    if method == "dec":
        return _compact(local_dec(x, k, cfg, seed), k)
    raise ConfigError(
        f"unknown initial clustering {method!r}",
        where="fedcref.experiments.<exp>.init",
        fix=f"one of {METHODS}",
    )


def _compact(lab: np.ndarray, k: int) -> np.ndarray:
    """Relabel to 0..(#used−1) (DEC may leave a centroid without samples: that cluster starts
    empty, handled like an empty cluster after refinement)."""
    _, inv = np.unique(lab, return_inverse=True)
    return inv.astype(int)


def centralized_dec_k(
    x: np.ndarray, k_range: tuple[int, int], cfg: dict, seed: int, tsne_max: int = 1500
) -> tuple[int, dict[int, float], dict[int, np.ndarray]]:
    """Global DEC baseline (§4 item 1): pooled data, one TSAE pretraining, DEC for every K in
    ``k_range``; K chosen by the silhouette of the DEC labels on a 2-D t-SNE of the data
    (scikit-learn TSNE / silhouette_score, subsampled to ``tsne_max`` points).
    Returns (best K, silhouette per K, labels per K)."""
    from sklearn.manifold import TSNE
    from sklearn.metrics import silhouette_score

    from fedclust.dec.model import TSAE, DECModel, encoder_dims
    from fedclust.dec.pipeline import train_autoencoder
    from fedclust.dec.train import embed, kmeans_centroids, predict, shuffle_generator, train_dec

    torch.manual_seed(derive_seed(seed, "fedcref", "gdec"))
    xt = torch.as_tensor(np.asarray(x, dtype=np.float32))
    tsae = TSAE(encoder_dims(x.shape[1], cfg["arch"]), hidden_act="relu", final_act="sigmoid")
    gen = shuffle_generator(derive_seed(seed, "fedcref", "gdec", "shuffle"))
    bs = int(cfg["batch_size"])
    train_autoencoder(tsae, xt, "adam", float(cfg["ae_lr"]), int(cfg["ae_epochs"]), bs, "mse",
                      True, gen)  # fmt: skip
    z = embed(tsae, xt)
    sub = rng(seed, "fedcref", "tsne").permutation(len(x))[: min(tsne_max, len(x))]
    perplexity = float(min(30.0, max(5.0, (len(sub) - 1) / 3.5)))
    t2 = TSNE(2, perplexity=perplexity, random_state=derive_seed(seed, "tsne") % (2**31),
              init="pca").fit_transform(np.asarray(x)[sub])  # fmt: skip
    sil, labels = {}, {}
    for k in range(int(k_range[0]), int(k_range[1]) + 1):
        mu, lab = kmeans_centroids(z, k, "none", int(cfg["n_init"]), seed % (2**31))
        model = DECModel(copy.deepcopy(tsae), k, 1.0)
        with torch.no_grad():
            model.centroids.copy_(torch.as_tensor(mu))
        opt = torch_optim.Adam(model.parameters(), lr=float(cfg["dec_lr"]))  # no torch._dynamo
        train_dec(model, xt, opt, bs, int(cfg["dec_epochs"]), float(cfg["tol"]), "batch", lab,
                  True, gen)  # fmt: skip
        labels[k] = predict(model, xt)
        ls = labels[k][sub]
        sil[k] = float(silhouette_score(t2, ls)) if len(np.unique(ls)) > 1 else -1.0
    best = max(sil, key=lambda kk: (sil[kk], -kk))
    return best, sil, labels
