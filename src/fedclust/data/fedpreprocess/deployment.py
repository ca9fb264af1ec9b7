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

The tables' federated imputation (:mod:`.tables`) is the deployed stage ``fedprep_tables``
(:data:`TABLES`), ``params["variant"]``:

- ``mds``: :func:`.tables.mds_server` — the columns' frequencies of ones, broadcast as the
  fill; outputs ``fill`` (one per column, NaN where no centre reported) and ``n_obs``;
- ``heart``: :func:`.tables.heart_server` with ``how`` (median | mean) and ``bins`` — the class
  medians (binned counts) or means; outputs ``classes`` and ``fill`` (classes × columns).

A centre's file holds its rows of the table to impute (NaN = missing; for heart the columns
with 0 recoded as NaN, as :func:`.tables.heart_centres` does), the column names, for heart each
row's class, and its name; ``describe`` tells the server the column names (public: every centre
holds the same columns). Each centre fills its own rows with the broadcast fill and checks that
every column it must fill got a value (``TableCentre.take_fill``; heart: every (column, class)
of its missing cells, from the broadcast's ``classes`` and ``has`` — the same error as
in-process when no centre reported its class); its rows never leave it. Both outputs also carry
``columns``; heart's ``fill`` is NaN where no centre reported a value. Every protocol here is
exact: no drops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np

from fedclust.deployment import (
    DeployedStage,
    WorkflowHook,
    WorkflowRun,
    load_npz,
    pick,
    register,
    same_schema,
    save_npz,
)

from .centre import RnaseqCentre
from .protocols import MIN_SAMPLES, Protocols
from .server import RnaseqFit, RnaseqSettings, rnaseq_server
from .tables import heart_server, mds_server
from .tabular import BINS, TableCentre

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


# ---------------------------------------------------------------- the workflow's rule
def workflow_units(config: Mapping[str, Any]) -> list[str]:
    """The cohorts of rule ``rnaseq_federated`` (``data.rnaseq``: federated or compared)."""
    from fedclust.data.workflow import federated_cohorts

    return federated_cohorts(dict(config["data"]))


def workflow_unit(config: Mapping[str, Any]) -> str:
    return pick(config, NAME, workflow_units(config))


def workflow_inputs(config: Mapping[str, Any]) -> dict[str, str]:
    """Rule ``rnaseq_federated``'s counts and split of the deployed cohort."""
    from fedclust.data.workflow import federated_split

    cohort = workflow_unit(config)
    split = federated_split(dict(config["data"]), "rnaseq")
    return {"counts": f"results/data/rnaseq/{cohort}/counts.parquet",
            "split": f"results/data/rnaseq/{cohort}/splits/{split}.tsv"}  # fmt: skip


def _split(path: str) -> Any:
    import pandas as pd

    return pd.read_csv(path, sep="\t", dtype=str).set_index("sample_id")["center"]


def workflow_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The centres of rule ``rnaseq_federated`` (the cohort's counts on its federated split)
    with its settings; reference: the rule's own :func:`.rnaseq.federated_rnaseq` fit."""
    from fedclust.io import read_table
    from fedclust.seeds import derive_seed

    from .rnaseq import federated_rnaseq

    cohort = workflow_unit(config)
    rna, prep = config["data"]["rnaseq"], config["data"]["federated"]
    s = RnaseqSettings(top_genes=rna["top_genes"], vst_fit_genes=rna.get("vst_fit_genes"),
                       vst_fit_pool=rna.get("vst_fit_pool", "mean5"),
                       seed=derive_seed(int(config["seed"]), "vst subset", cohort))  # fmt: skip
    counts, split = read_table(inputs["counts"]), _split(inputs["split"])
    ms = int(prep["min_samples"])
    fed = federated_rnaseq(counts, split, s, ms)
    return WorkflowRun(cohort, centres(counts, split, ms), params_from(s, ms),
                       outputs(fed.fit, np.asarray(counts.columns)))  # fmt: skip


STAGE = register(
    DeployedStage(NAME, load, save, serve, describe, drops=False,
                  workflow=WorkflowHook(workflow_unit, workflow_inputs, workflow_run))
)  # fmt: skip


# ---------------------------------------------------------------- tables (MDS, heart)
TABLES_NAME = "fedprep_tables"
VARIANTS = ("mds", "heart")


def mds_params(min_samples: int = MIN_SAMPLES) -> dict[str, Any]:
    """The run parameters of :func:`.tables.mds_impute_federated` with ``min_samples``."""
    return {"variant": "mds", "min_samples": int(min_samples)}


def heart_params(how: str = "median", bins: int = BINS,
                 min_samples: int = MIN_SAMPLES) -> dict[str, Any]:  # fmt: skip
    """The run parameters of :func:`.tables.heart_impute_federated`."""
    return {"variant": "heart", "how": str(how), "bins": int(bins),
            "min_samples": int(min_samples)}  # fmt: skip


def _variant(params: Mapping[str, Any]) -> str:
    from fedclust.errors import ConfigError

    v = params.get("variant")
    if v not in VARIANTS:
        raise ConfigError(f"unknown {TABLES_NAME} variant {v!r}", where="params.variant",
                          fix=f"one of {list(VARIANTS)}")  # fmt: skip
    return str(v)


def save_table(centre: TableCentre, path: Path) -> None:
    if centre.columns is None:
        raise ValueError("a table centre needs .columns (its column names) to be saved")
    arrays: dict[str, Any] = {"x": np.ascontiguousarray(centre.x), "cid": centre.cid,
                              "columns": np.asarray(centre.columns, dtype=str)}  # fmt: skip
    if centre.labels is not None:
        arrays["labels"] = np.asarray(centre.labels, dtype=np.int64)
    save_npz(path, **arrays)


def load_table(path: Path, params: Mapping[str, Any]) -> TableCentre:
    d = load_npz(path)
    return TableCentre(str(d["cid"]), d["x"], d.get("labels"),
                       int(params.get("min_samples", MIN_SAMPLES)),
                       columns=d["columns"].tolist())  # fmt: skip


def describe_table(centre: TableCentre) -> dict[str, Any]:
    return {"columns": list(centre.columns or [])}


def serve_tables(proxies: Sequence[Any], params: Mapping[str, Any],
                 schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    variant = _variant(params)
    columns = [str(c) for c in same_schema(schema, "columns", TABLES_NAME)]
    ms = int(params.get("min_samples", MIN_SAMPLES))
    if variant == "mds":
        stats = mds_server(list(proxies), len(columns), ms)
        return {"columns": columns, "fill": np.asarray(stats.mean), "n_obs": stats.n_obs}
    fills = heart_server(list(proxies), columns, str(params.get("how", "median")),
                         int(params.get("bins", BINS)), ms)  # fmt: skip
    classes = sorted(fills)
    return {"columns": columns, "classes": [int(c) for c in classes],
            "fill": np.array([fills[c] for c in classes])}  # fmt: skip


# ---------------------------------------------------------------- the workflow's rule
def tables_units(config: Mapping[str, Any]) -> list[str]:
    """``mds`` (rule ``mds_federated``, when configured) and ``heart`` (rule ``data_heart``)."""
    from fedclust.data.workflow import mds_federated

    return (["mds"] if mds_federated(dict(config["data"])) else []) + ["heart"]


def tables_unit(config: Mapping[str, Any]) -> str:
    return pick(config, TABLES_NAME, tables_units(config))


def tables_inputs(config: Mapping[str, Any]) -> dict[str, str]:
    """Rule ``mds_federated``'s raw table and split, or rule ``data_heart``'s two CSV files."""
    from fedclust.data import heart
    from fedclust.data.workflow import federated_split

    if tables_unit(config) == "heart":
        return dict(heart.input_files(dict(config["data"]["heart"])))
    split = federated_split(dict(config["data"]), "mds")
    return {"raw": "results/data/mds/features_raw.parquet",
            "split": f"results/data/mds/splits/{split}.tsv"}  # fmt: skip


def tables_run(config: Mapping[str, Any], inputs: Mapping[str, str]) -> WorkflowRun:
    """The centres of rule ``mds_federated`` (the raw 0/1/NaN table on the MDS federated
    split; reference: its :func:`.tables.mds_impute_federated` fill) or of rule ``data_heart``
    (the 918-row table, the five hospitals by row range, ``data.heart.imputation``; no
    reference: :func:`.tables.heart_impute_federated` returns only the fills it used)."""
    import pandas as pd

    from fedclust.io import read_table

    from .tables import heart_centres, mds_centres, mds_impute_federated

    prep = config["data"]["federated"]
    ms = int(prep["min_samples"])
    if tables_unit(config) == "mds":
        raw, split = read_table(inputs["raw"]), _split(inputs["split"])
        _, _, fill = mds_impute_federated(raw, split, ms)
        ref = {"columns": [str(c) for c in raw.columns], "fill": fill.to_numpy()}
        return WorkflowRun("mds", mds_centres(raw, split, ms), mds_params(ms), ref)
    from fedclust.data import heart

    cfg = dict(config["data"]["heart"])
    raw = heart.load_raw(inputs["raw"], heart.SHA256["Heart_Disease.csv"]
                         if cfg["check_sha256"] else None)  # fmt: skip
    hospital = pd.Series(heart.row_range_hospitals(len(raw)), index=raw.index)
    hospital = hospital.str.replace(r"[^A-Za-z0-9_-]", "_", regex=True)  # names its folder
    centres_, _, _ = heart_centres(raw, hospital, heart.TARGET, min_samples=ms)
    return WorkflowRun("heart", centres_, heart_params(cfg["imputation"], int(prep["bins"]), ms))


TABLES = register(
    DeployedStage(TABLES_NAME, load_table, save_table, serve_tables, describe_table,
                  drops=False,
                  workflow=WorkflowHook(tables_unit, tables_inputs, tables_run))
)  # fmt: skip
