"""The centralized reference of D6.2 ch. 7: a Hierarchical Dirichlet Process topic model on the
same binary features (seed 003 §6.1, §6.5; Bersanelli et al. 2021's "gold standard" for MDS).

No federated HDP exists (D6.2), so the HDP is fitted on the pooled patients. Each patient is a
document whose words are its alterations (features equal to 1; imputed probabilities are not
words), as in Bersanelli et al.'s multinomial view; tomotopy's ``HDPModel`` (collapsed Gibbs,
one worker, seeded: deterministic) gives every patient a distribution over the live topics.
D6.2 compares DEC with HDP at 6 and 8 clusters without saying how the 8-cluster HDP solution was
made: here a patient's HDP cluster at k is k-means (scikit-learn, seeded) on its live-topic
distribution [DERIVED]; the HDP's own labels (the dominant topic) are reported too. A patient
without any alteration is an empty document: it gets the uniform distribution.

tomotopy is an optional dependency (extra ``fedclust[hdp]``); without it :func:`fit_hdp` raises
a :class:`~fedclust.errors.ConfigError` naming the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedclust.errors import ConfigError


def tomotopy():
    """The tomotopy module, or a ConfigError saying how to install it."""
    try:
        import tomotopy as tp
    except ImportError:
        raise ConfigError(
            "the HDP comparison of D6.2 ch. 7 needs tomotopy, which is not installed",
            where="dec.d62.hdp.enabled",
            fix="pip install 'fedclust[hdp]' (tomotopy), or set dec.d62.hdp.enabled: false",
        ) from None
    return tp


@dataclass
class HDPResult:
    theta: np.ndarray  # patients × live topics (rows sum to 1)
    dominant: np.ndarray  # the dominant live topic per patient
    live_topics: int
    log_likelihood_per_word: float
    empty_documents: int


def fit_hdp(x: np.ndarray, cfg: dict[str, Any], seed: int) -> HDPResult:
    """HDP on the binary rows of ``x`` (a word per feature equal to 1). ``cfg``: iterations,
    burn_in, initial_k, alpha, eta, gamma (tomotopy's HDPModel parameters)."""
    tp = tomotopy()
    x = np.asarray(x)
    words = [np.flatnonzero(row == 1) for row in x]
    mdl = tp.HDPModel(
        tw=tp.TermWeight.ONE, min_cf=0, rm_top=0, initial_k=int(cfg["initial_k"]),
        alpha=float(cfg["alpha"]), eta=float(cfg["eta"]), gamma=float(cfg["gamma"]),
        seed=int(seed) % (2**31 - 1),
    )  # fmt: skip
    rows = []
    for i, w in enumerate(words):
        if len(w):
            mdl.add_doc([f"f{j}" for j in w])
            rows.append(i)
    if not rows:
        raise ConfigError("no patient has any alteration: the HDP has no words", where="dec.d62")
    mdl.burn_in = int(cfg["burn_in"])
    mdl.train(int(cfg["iterations"]), workers=1, parallel=tp.ParallelScheme.NONE)
    live = [t for t in range(mdl.k) if mdl.is_live_topic(t)]
    theta = np.full((len(x), len(live)), 1.0 / len(live))
    dist = np.array([d.get_topic_dist() for d in mdl.docs])[:, live]
    theta[rows] = dist / np.maximum(dist.sum(axis=1, keepdims=True), 1e-12)
    return HDPResult(
        theta=theta,
        dominant=theta.argmax(axis=1),
        live_topics=len(live),
        log_likelihood_per_word=float(mdl.ll_per_word),
        empty_documents=int(len(x) - len(rows)),
    )


def hdp_clusters(theta: np.ndarray, k: int, seed: int, n_init: int = 25) -> np.ndarray:
    """k HDP clusters: k-means on the patients' live-topic distributions [DERIVED]."""
    from sklearn.cluster import KMeans

    if k > len(np.unique(np.round(theta, 12), axis=0)):
        raise ConfigError(
            f"the HDP's topic distributions take fewer than k={k} distinct values",
            where="dec.d62.hdp.k",
            fix="use a smaller k or more HDP iterations",
        )
    return KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(theta).astype(int)


def agreement(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """D6.2's "three agreement scores" (unnamed there): ARI, AMI and NMI (scikit-learn)."""
    from sklearn import metrics as skm

    return {
        "ari": float(skm.adjusted_rand_score(a, b)),
        "ami": float(skm.adjusted_mutual_info_score(a, b)),
        "nmi": float(skm.normalized_mutual_info_score(a, b)),
    }
