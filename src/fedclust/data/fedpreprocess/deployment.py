"""Federated RNA-seq preprocessing (issue 23: pydeseq2's size factors, genewise dispersions,
trend, blind VST and top-N genes) as a deployed stage ``fedprep`` (:mod:`fedclust.deployment`).

One run is :func:`.server.rnaseq_server`, the server function the data stage runs in-process
(:func:`.rnaseq.federated_rnaseq`): the log geometric means, the normalised-count moments, the
lockstep L-BFGS-B rounds of the dispersion fit, the trend and the VST moments, the selection.
A centre's file holds its raw counts (samples × genes, the cohort's gene order), the gene names
and its name; it keeps its size factors, normalised counts and VST between requests
(``Context.state`` on a deployment). The run's parameters are ``settings``
(:class:`.server.RnaseqSettings`' fields) and ``min_samples``. The gene names come from the
handshake (the centres must agree on them: public, every centre holds the same columns).
Outputs: the server's fit — what it learnt (aggregates) and decided — as
:class:`.server.RnaseqFit`'s fields (``coeffs`` / ``mean_disp``: null when not used), the selected
genes' names and the ledger. The centres' preprocessed rows never leave them: a site reproduces
its own matrices from its counts and the broadcasts (size factors from ``logmeans``, the VST
from ``coeffs`` or ``mean_disp``, the ``selected`` genes).

The tables' federated imputation (MDS, heart: :mod:`.tables`) is not deployable yet: its
server functions are closures inside the pooled-table functions (the MDS server no longer reads
the pooled table: a centre checks that every column it must fill got a value,
``TableCentre.take_fill``); moving them out is what is left. Every protocol here is exact: no
drops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np

from fedclust.deployment import DeployedStage, load_npz, register, same_schema, save_npz

from .centre import RnaseqCentre
from .protocols import Protocols
from .server import RnaseqFit, RnaseqSettings, rnaseq_server

NAME = "fedprep"


def settings(params: Mapping[str, Any]) -> RnaseqSettings:
    return RnaseqSettings(**dict(params.get("settings") or {}))


def params_from(s: RnaseqSettings, min_samples: int) -> dict[str, Any]:
    """The run parameters of :func:`.rnaseq.federated_rnaseq` with ``s`` and ``min_samples``."""
    return {"settings": asdict(s), "min_samples": int(min_samples)}


def centres(counts: Any, centre: Any, min_samples: int = 3) -> list[RnaseqCentre]:
    """The centres of a cohort's split as :func:`.rnaseq.federated_rnaseq` builds them
    (``counts``: samples × genes, ``centre``: sample → centre name), each with its gene names
    (to be written to its folder with :func:`fedclust.deployment.write_centres`)."""
    from .rnaseq import centre_labels

    labels = centre_labels(centre, counts.index, where="fedprep deployment split")
    out = []
    for c in sorted(labels.unique()):
        rc = RnaseqCentre(c, counts.to_numpy()[(labels == c).to_numpy()], min_samples)
        rc.genes = [str(g) for g in counts.columns]
        out.append(rc)
    return out


def save(centre: RnaseqCentre, path: Path) -> None:
    genes = getattr(centre, "genes", None)
    if genes is None:
        raise ValueError("an RNA-seq centre needs .genes (its column names) to be saved")
    save_npz(path, counts=np.ascontiguousarray(centre.counts), cid=centre.cid,
             genes=np.asarray(genes, dtype=str))  # fmt: skip


def load(path: Path, params: Mapping[str, Any]) -> RnaseqCentre:
    d = load_npz(path)
    c = RnaseqCentre(str(d["cid"]), d["counts"], int(params.get("min_samples", 3)))
    c.genes = d["genes"].tolist()
    return c


def describe(centre: RnaseqCentre) -> dict[str, Any]:
    return {"genes": [str(g) for g in centre.genes]}


def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    genes = np.asarray(same_schema(schema, "genes", NAME), dtype=str)
    fit = rnaseq_server(list(proxies), genes, settings(params),
                        Protocols(int(params.get("min_samples", 3))))  # fmt: skip
    return outputs(fit, genes)


def outputs(fit: RnaseqFit, genes: np.ndarray) -> dict[str, Any]:
    """The fit as a deployment's outputs (arrays, numbers, lists)."""
    out: dict[str, Any] = {}
    for f in fields(RnaseqFit):
        v = getattr(fit, f.name)
        if v is None:  # coeffs or mean_disp: the one not used
            pass
        elif f.name == "mean_disp":
            v = float(v)
        elif isinstance(v, np.ndarray):
            v = np.asarray(v)
        elif isinstance(v, np.generic):
            v = v.item()
        out[f.name] = v
    out["selected_genes"] = [str(g) for g in np.asarray(genes)[fit.selected]]
    return out


STAGE = register(DeployedStage(NAME, load, save, serve, describe, drops=False))
