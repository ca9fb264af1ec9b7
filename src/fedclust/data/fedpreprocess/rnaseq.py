"""One federated RNA-seq preprocessing run and its comparison with pooled pydeseq2.

:func:`federated_rnaseq` builds one :class:`RnaseqCentre` per centre of a split (the cohort's
regions), runs :func:`.server.rnaseq_server` through
``fedclust.federation.federate(centres, server, ledger=..., transport=...)`` and assembles the
centres' own outputs (each centre's rows stay with it; the workflow writes them into the
cohort's matrices in the data contract's row order). :func:`pooled_rnaseq` is the pooled
reference (pydeseq2, :func:`fedclust.data.preprocess.vst_fit`) and :func:`agreement` the table
of differences the data report shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from fedclust.errors import InputDataError
from fedclust.federation import INPROCESS, Ledger, Transport, federate
from fedclust.federation.disclosure import DisclosurePolicy

from ..preprocess import VstFit, _dds, check_counts, top_variable_genes, vst_fit
from .centre import RnaseqCentre
from .protocols import MIN_SAMPLES, Protocols
from .server import RnaseqFit, RnaseqSettings, rnaseq_server


@dataclass
class FederatedRnaseq:
    sf: pd.DataFrame  # size-factor normalised counts, top-N genes (data contract)
    vst: pd.DataFrame  # VST, same genes
    size_factors: pd.Series
    fit: RnaseqFit
    ledger: Ledger


@dataclass
class PooledRnaseq:
    sf: pd.DataFrame
    vst: pd.DataFrame
    fit: VstFit
    genes: pd.Index  # the expressed genes the fit ran on (fit positions refer to these)


def centre_labels(centre: pd.Series, samples: pd.Index, where: str) -> pd.Series:
    """The centre of every sample (a split table's ``center`` by sample id), checked."""
    centre = centre.copy()
    centre.index = centre.index.astype(str)
    missing = pd.Index(samples.astype(str)).difference(centre.index)
    if len(missing):
        raise InputDataError(
            f"{len(missing)} sample(s) have no centre in the split, e.g. {missing[0]!r}",
            where=where,
            fix="rerun the split rule so that it covers every sample of the cohort",
        )
    out = centre.loc[samples.astype(str)]
    if out.isna().any():  # "None" / "nan" would become a centre of its own (issue 30 C)
        raise InputDataError(
            f"{int(out.isna().sum())} sample(s) have no centre in the split (empty), e.g. "
            f"{out.index[out.isna().to_numpy()][0]!r}",
            where=where,
            fix="rerun the split rule so that it covers every sample of the cohort",
        )
    return out.astype(str)


def federated_rnaseq(
    counts: pd.DataFrame,
    centre: pd.Series,
    settings: RnaseqSettings | None = None,
    min_samples: int = MIN_SAMPLES,
    transport: Transport = INPROCESS,
    ledger: Ledger | None = None,
    disclosure: DisclosurePolicy | None = None,
    make_centre: Callable[..., RnaseqCentre] = RnaseqCentre,
) -> FederatedRnaseq:
    """Federated size factors, VST and top-N genes of ``counts`` (samples × genes, all genes)
    over the centres ``centre`` (sample → centre name); outputs restricted to expressed genes
    and then the top-N, as the pooled rule does. ``disclosure``: every centre's own policy
    (default: the job's configured ``disclosure`` section,
    :mod:`fedclust.federation.disclosure`). ``make_centre``: builds each centre from
    ``(name, counts, min_samples, disclosure)`` (the privacy–utility stage's private centre)."""
    settings = settings if settings is not None else RnaseqSettings()
    counts = check_counts(counts, where="federated preprocessing counts")
    if not counts.columns.is_unique:
        raise InputDataError("gene names are not unique", where="counts columns")
    labels = centre_labels(centre, counts.index, where="federated preprocessing split")
    names = sorted(labels.unique())
    values = counts.to_numpy()
    centres = [
        make_centre(c, values[(labels == c).to_numpy()], min_samples, disclosure) for c in names
    ]
    led = ledger if ledger is not None else Ledger()
    server = partial(
        rnaseq_server, genes=counts.columns, settings=settings, protocols=Protocols(min_samples)
    )
    fit = federate(centres, server, ledger=led, transport=transport)
    genes = counts.columns[fit.selected]
    sf, vst, s = [], [], []
    for c in centres:  # each centre's own rows (never sent)
        a, b = c.outputs()
        rows = counts.index[(labels == c.cid).to_numpy()]
        sf.append(pd.DataFrame(a, index=rows, columns=genes))
        vst.append(pd.DataFrame(b, index=rows, columns=genes))
        s.append(pd.Series(c.size_factors, index=rows))
    order = counts.index
    return FederatedRnaseq(
        pd.concat(sf).loc[order],
        pd.concat(vst).loc[order],
        pd.concat(s).loc[order].rename("size_factor"),
        fit,
        led,
    )


def pooled_rnaseq(
    counts: pd.DataFrame, settings: RnaseqSettings | None = None, n_cpus: int = 1
) -> PooledRnaseq:
    """The pooled reference, as rule ``rnaseq_cohort`` computes it (expressed genes, pydeseq2
    VST, top-N), with pydeseq2's internals."""
    settings = settings if settings is not None else RnaseqSettings()
    counts = check_counts(counts)
    expressed = counts.columns[(counts > 0).any(axis=0)]
    x = counts[expressed]
    fit = vst_fit(_dds(x, n_cpus=n_cpus), settings.vst_fit_genes, settings.seed,
                  settings.vst_fit_pool)  # fmt: skip
    v = pd.DataFrame(fit.values, index=x.index, columns=expressed)
    genes = top_variable_genes(v, settings.top_genes)
    sf = x.astype(float).div(fit.size_factors, axis=0)
    return PooledRnaseq(sf[genes], v[genes], fit, expressed)


def save_vst_fit(path: str, fit: VstFit, genes: pd.Index) -> None:
    """pydeseq2's internals of the pooled rule (``vst_fit.npz``): the reference the federated
    run is compared with, without refitting (the VST values are in ``vst.parquet``)."""
    from fedclust.io import write_npz

    write_npz(
        path,
        size_factors=fit.size_factors,
        logmeans=fit.logmeans,
        normed_means=fit.normed_means,
        fit_idx=fit.fit_idx,
        dispersions=fit.dispersions,
        converged=fit.converged,
        coeffs=np.full(2, np.nan) if fit.coeffs is None else fit.coeffs,
        mean_disp=np.float64(np.nan if fit.mean_disp is None else fit.mean_disp),
        genes=np.asarray(genes, dtype=str),
    )


def load_pooled(sf_path: str, vst_path: str, fit_path: str) -> PooledRnaseq:
    """The pooled rule's outputs as a :class:`PooledRnaseq` (VST values of the kept genes)."""
    from fedclust.io import read_table

    z = np.load(fit_path, allow_pickle=False)
    coeffs = z["coeffs"]
    fit = VstFit(
        z["size_factors"], z["logmeans"], z["normed_means"], z["fit_idx"], z["dispersions"],
        z["converged"], None if np.isnan(coeffs).all() else coeffs,
        None if np.isnan(z["mean_disp"]) else float(z["mean_disp"]), np.empty((0, 0)),
    )  # fmt: skip
    return PooledRnaseq(read_table(sf_path), read_table(vst_path), fit, pd.Index(z["genes"]))


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        return float("nan")
    ok = np.isfinite(a) & np.isfinite(b)
    if not ok.any():
        return 0.0
    d = np.abs(a[ok] - b[ok]) / np.maximum(np.abs(b[ok]), np.finfo(float).tiny)
    return float(d.max()) if d.size else 0.0


def agreement(fed: FederatedRnaseq, pooled: PooledRnaseq, counts: pd.DataFrame) -> dict:
    """One row: federated vs pooled pydeseq2, step by step (max relative / absolute
    differences), the top-N selection and the communication."""
    f, p = fed.fit, pooled.fit
    pos = pd.Index(counts.columns).get_indexer(pooled.genes)  # pooled fit positions → all genes
    rows = fed.size_factors.index.intersection(pooled.sf.index)
    same_fit = np.array_equal(f.fit_idx, pos[p.fit_idx])
    common = fed.vst.columns.intersection(pooled.vst.columns)
    msgs = fed.ledger.messages()
    up = msgs[msgs["receiver"] == "server"]
    per_centre = up.groupby("sender")["floats"].sum()
    a_f = f.coeffs if f.coeffs is not None else np.array([np.nan, np.nan])
    a_p = p.coeffs if p.coeffs is not None else np.array([np.nan, np.nan])
    return {
        "samples": int(counts.shape[0]),
        "genes": int(len(pooled.genes)),
        "centres": int(len(set(msgs["sender"]) - {"server"})),
        "size_factors_max_rel": _rel(fed.size_factors.to_numpy(), p.size_factors),
        "normed_means_max_rel": _rel(f.normed_means[pos], p.normed_means),
        "fit_genes_identical": bool(same_fit),
        "dispersions_max_rel": _rel(f.dispersions, p.dispersions) if same_fit else np.nan,
        "trend_a0_rel": _rel(a_f[:1], a_p[:1]),
        "trend_a1_rel": _rel(a_f[1:], a_p[1:]),
        "vst_max_abs": float(
            np.abs(
                fed.vst.loc[rows, common].to_numpy() - pooled.vst.loc[rows, common].to_numpy()
            ).max()
        )
        if len(common)
        else np.nan,
        "sf_max_rel": _rel(
            fed.sf.loc[rows, common].to_numpy(), pooled.sf.loc[rows, common].to_numpy()
        ),
        "top_genes": int(fed.vst.shape[1]),
        "top_genes_swapped": int(len(set(fed.vst.columns) ^ set(pooled.vst.columns)) // 2),
        "dispersion_rounds": int(f.nb_rounds),
        "messages": int(len(msgs)),
        "floats_per_centre_max": int(per_centre.max()) if len(per_centre) else 0,
        "abstentions": int(fed.ledger.n_abstentions),
    }
