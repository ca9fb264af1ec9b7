"""Attack inputs: pooled cohorts, sex labels, gene filters and separate preprocessing (seed 001 §8).

Attacker and centers preprocess their own data apart (thesis §4.4.2); only the library
preprocessing of the data stage is used (:mod:`fedclust.data.preprocess`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ConfigError, InputDataError

PREPROCESSINGS = ("size_factors", "vst")


def load_cohorts(
    counts: dict[str, pd.DataFrame], obs: dict[str, pd.DataFrame]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pool cohorts on their common genes; ``obs`` gains a ``cohort`` column."""
    if not counts:
        raise ConfigError("no cohort given to the attack", where="config attacks.cohorts")
    genes = None
    for name, c in counts.items():
        genes = c.columns if genes is None else genes.intersection(c.columns, sort=False)
        if name not in obs:
            raise InputDataError(f"no obs table for cohort {name}", where=f"cohort {name}")
        missing = c.index.difference(obs[name].index)
        if len(missing):
            raise InputDataError(
                f"{len(missing)} samples of cohort {name} have no row in obs.tsv",
                where=f"results/data/rnaseq/{name}/obs.tsv",
                fix="rerun the data stage for this cohort",
            )
    if genes is None or len(genes) == 0:
        raise InputDataError("the cohorts share no gene", where="counts.parquet")
    x = pd.concat([counts[n][genes] for n in counts], axis=0)
    o = pd.concat([obs[n].loc[counts[n].index].assign(cohort=n) for n in counts], axis=0)
    return x, o


def sex_labels(obs: pd.DataFrame, where: str = "obs.tsv") -> pd.Series:
    """1 = male, 0 = female, NaN = unknown (``sex`` column of the data contract)."""
    if "sex" not in obs.columns:
        raise InputDataError(
            "obs table has no 'sex' column", where=where, fix="rerun the data stage (contract)"
        )
    s = obs["sex"].astype("string").str.lower()
    bad = s.dropna()[~s.dropna().isin(["female", "male", ""])]
    if len(bad):
        raise InputDataError(
            f"unexpected sex values {sorted(set(bad))[:5]}",
            where=where,
            fix="use female/male/NA",
        )
    return s.map({"male": 1.0, "female": 0.0}).astype(float)


def no_zero_genes(counts: pd.DataFrame) -> pd.Index:
    """Genes with no zero count in any sample (the thesis' filter for §4.4.2 / §4.4.3.1)."""
    return counts.columns[(counts.to_numpy() > 0).all(axis=0)]


def preprocess(counts: pd.DataFrame, method: str) -> pd.DataFrame:
    """Size-factor normalisation or VST of one party's counts (pydeseq2 via the data stage)."""
    from ..data.preprocess import size_factor_normalise, vst

    if method == "size_factors":
        return size_factor_normalise(counts)
    if method == "vst":
        return vst(counts)
    raise ConfigError(f"unknown preprocessing {method!r}", fix=f"use one of {PREPROCESSINGS}")


def most_variable(values: pd.DataFrame, n: int | None) -> pd.Index:
    """The ``n`` genes with the largest variance of log1p values (reduced sizes; None = all)."""
    if n is None or n >= values.shape[1]:
        return values.columns
    var = np.log1p(np.clip(values.to_numpy(), 0, None)).var(axis=0)
    keep = np.sort(np.argsort(-var, kind="stable")[:n])
    return values.columns[keep]


def split_preprocess(
    counts: pd.DataFrame,
    attacker: np.ndarray,
    centers: np.ndarray,
    method: str,
    genes: str,
    max_genes: int | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Preprocess attacker rows and center rows apart; keep genes usable on both sides.

    ``genes``: ``no_zero`` (no zero count on either side, intersection, thesis §4.4.2) or ``all``
    (every gene with a non-zero count on both sides; all-zero genes carry nothing).
    ``max_genes`` then keeps the most variable genes of the attacker side (a reduced-size option).
    """
    ca, cc = counts.iloc[attacker], counts.iloc[centers]
    if genes == "no_zero":
        keep = no_zero_genes(ca).intersection(no_zero_genes(cc), sort=False)
        if len(keep) < 2:
            raise InputDataError(
                f"only {len(keep)} genes have no zero count on both sides",
                where="attack input counts",
                fix="use genes: all, or more samples",
            )
    elif genes == "all":  # every gene expressed (a non-zero count) on both sides
        keep = counts.columns[(ca.to_numpy() > 0).any(axis=0) & (cc.to_numpy() > 0).any(axis=0)]
    else:
        raise ConfigError(f"unknown gene filter {genes!r}", fix="use no_zero or all")
    xa = preprocess(ca, method)[keep]
    xc = preprocess(cc, method)[keep]
    sel = most_variable(xa, max_genes)
    return xa[sel], xc[sel]
