"""Parse-time helpers of rules/dec.smk and rules/dec_figures.smk (file lists from the config and
a job's wildcards), kept in the library so the rule files hold only rules (snakemake --lint) and
tests can call them; and :func:`fed_job_inputs`, what the federated DEC scripts unpack."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .tuning_spec import check_reuse, reuse_source, tuned_datasets
from .units import (
    central_level,
    central_units,
    federated_level,
    federated_units,
    unit_needs_tsae,
)

CENTRAL = "results/dec/{dataset}/centralized"
FEDERATED = "results/dec/{dataset}/federated/{split}"


def central_unit_ids(cfg: dict) -> list[str]:
    return list(central_units(cfg)) if cfg else []


def federated_unit_ids(cfg: dict) -> list[str]:
    return list(federated_units(cfg)) if cfg else []


def unit_tsae(cfg: dict, w: Any) -> list[str]:
    """Per-configuration units read their optimizer's TSAE (rule dec_tsae); coarser units
    train it themselves."""
    if not unit_needs_tsae(central_level(cfg)):
        return []
    opts = dict.fromkeys(c[0] for c in central_units(cfg)[w.unit])
    return [f"{CENTRAL.format(dataset=w.dataset)}/tsae/{o}.pt" for o in opts]


def merge_tsae(cfg: dict, w: Any) -> list[str]:
    """The TSAE files whose curves the merge reports (per-configuration level only)."""
    if not unit_needs_tsae(central_level(cfg)):
        return []
    return [f"{CENTRAL.format(dataset=w.dataset)}/tsae/{o}.pt" for o in cfg["grid"]["optimizers"]]


def fed_unit_tsae(cfg: dict, w: Any) -> list[str]:
    """Per-aggregation units read their strategy's TSAE state (rule dec_fed_tsae)."""
    if not unit_needs_tsae(federated_level(cfg)):
        return []
    strategies = dict.fromkeys(r[0] for r in federated_units(cfg)[w.unit])
    base = FEDERATED.format(dataset=w.dataset, split=w.split)
    return [f"{base}/tsae/{s}.pt" for s in strategies]


def central_unit_files(cfg: dict, w: Any, name: str) -> list[str]:
    base = CENTRAL.format(dataset=w.dataset)
    return [f"{base}/units/{u}/{name}" for u in central_unit_ids(cfg)]


def federated_unit_files(cfg: dict, w: Any, name: str) -> list[str]:
    base = FEDERATED.format(dataset=w.dataset, split=w.split)
    return [f"{base}/units/{u}/{name}" for u in federated_unit_ids(cfg)]


def data_source(config: dict, dataset: str) -> str | None:
    """``data.<mds|mnist>.source`` of a DEC data set (bmnist is binarised mnist)."""
    key = "mnist" if dataset == "bmnist" else dataset
    return ((config.get("data") or {}).get(key) or {}).get("source")


@dataclass
class FedJobInputs:
    """What the federated DEC scripts (rules ``dec_fed_tsae``, ``dec_train_federated_unit``)
    unpack from their job: the config with the selected settings laid over it, the dataset, the
    split's centers, the seed, the wildcards and the transport (``federation.engine``)."""

    cfg: dict
    x: Any
    obs: Any
    centers: Any
    seed: int
    wildcards: Any
    transport: Any


def fed_job_inputs(smk: Any, transport: Any) -> FedJobInputs:
    """Unpack a federated DEC job (``smk``: the script's ``snakemake`` object; ``transport``: the
    one the script built with :func:`fedclust.transports.from_config`); also sets torch's thread
    count to the job's ``threads``."""
    import torch

    from .io import load_centers, load_dataset
    from .units import apply_settings, read_settings

    torch.set_num_threads(max(1, int(smk.threads)))
    w = smk.wildcards
    cfg = apply_settings(smk.params.cfg, w.dataset, read_settings(smk.input))
    x, obs, _ = load_dataset(smk.input.features, smk.input.obs)
    centers = load_centers(smk.input.split, obs.index)
    return FedJobInputs(cfg, x, obs, centers, int(smk.params.seed), w, transport)


# ------------------------------------------------------------------ tuning (issue 16)
TUNING = "results/dec/{dataset}/tuning"


def selected_file(cfg: dict, dataset: str, grid: str) -> str:
    """The settings file after ``grid`` for ``dataset``: its own selection, or — for a reused
    grid — its previous settings with the source's selected keys (rule dec_tune_reuse)."""
    name = "reused" if reuse_source(cfg, dataset, grid) else "selected"
    return f"{TUNING.format(dataset=dataset)}/{grid}_{name}.json"


def tuned_grids(cfg: dict, dataset: str) -> list[str]:
    """The grids whose points run for ``dataset`` (the reused ones do not)."""
    from .tuning import GRIDS

    return [g for g in GRIDS if not reuse_source(cfg, dataset, g)]


def final_settings(cfg: dict, w: Any) -> list[str]:
    """The settings file the training rules read: the last tuning selection, when the dataset
    is tuned and ``dec.tuning.apply`` is on (the default config runs the grids but keeps its
    settings, so its tables stay those of the all-in-one run)."""
    if w.dataset in tuned_datasets(cfg) and cfg["tuning"]["apply"]:
        return [selected_file(cfg, w.dataset, "cluster")]
    return []


def step1_settings(cfg: dict, w: Any) -> list[str]:
    """dec_tsae reads only the Step-1 selection (its TSAE then serves the Step-2 grid too)."""
    if w.dataset in tuned_datasets(cfg) and cfg["tuning"]["apply"]:
        return [selected_file(cfg, w.dataset, "batch")]
    return []


def tune_previous(cfg: dict, w: Any) -> list[str]:
    from .tuning import PREVIOUS

    prev = PREVIOUS[w.grid]
    return [selected_file(cfg, w.dataset, prev)] if prev else []


def reuse_inputs(cfg: dict, w: Any) -> dict[str, list[str]]:
    """Rule dec_tune_reuse: the dataset's own settings before the grid and the source's
    settings after it."""
    src = reuse_source(cfg, w.dataset, w.grid)
    if src is None:
        raise ValueError(f"{w.dataset} does not reuse the {w.grid!r} grid (dec.tuning.reuse)")
    return {"settings": tune_previous(cfg, w), "source": [selected_file(cfg, src, w.grid)]}


def tune_tsae(cfg: dict, w: Any, seed: int) -> list[str]:
    """The Step-2 grid's points run on the TSAE of their optimizer (rule dec_tsae, which reads
    the Step-1 selection)."""
    from .tuning import grid_points, point_ids

    if w.grid != "cluster":
        return []
    pts = grid_points(cfg, w.dataset, w.grid, seed)
    opts = dict.fromkeys(
        pts[i]["optimizer"] for i in point_ids(cfg, w.dataset, w.grid, seed)[w.unit]
    )
    return [f"{CENTRAL.format(dataset=w.dataset)}/tsae/{o}.pt" for o in opts]


def tune_points(cfg: dict, w: Any, seed: int) -> list[str]:
    from .tuning import point_ids

    base = TUNING.format(dataset=w.dataset)
    return [f"{base}/{w.grid}/{u}.parquet" for u in point_ids(cfg, w.dataset, w.grid, seed)]


def tuning_targets(cfg: dict) -> list[str]:
    """Each tuned grid's best table and its figures (Figs 5.1–5.4, A.1–A.10)."""
    from .tuning_plots import figure_panels

    check_reuse(cfg)
    out = []
    for d in tuned_datasets(cfg):
        for g in tuned_grids(cfg, d):
            out.append(f"{TUNING.format(dataset=d)}/{g}_best.tsv")
            out += [f"{TUNING.format(dataset=d)}/figures/{g}_{p}.png"
                    for p in figure_panels(cfg, d, g)]  # fmt: skip
    return out


# ------------------------------------------------------------------ rules/dec_figures.smk
def size_points(sc: dict[str, Any]) -> list[str]:
    """One size-curve result file per (schedule, size, repetition)."""
    out = []
    for name, sched in sc.get("schedules", {}).items():
        for size in sched.get("sizes") or sc.get("sizes", []):
            for rep in range(int(sc.get("repetitions", 1))):
                out.append(f"results/dec/size_curve/{name}/n{size}_r{rep}.tsv")
    return out


def curve_inputs(sc: dict[str, Any], run: bool, measured: str) -> list[str]:
    """Points of the curve's summary: this run's jobs, or the committed measurement."""
    return size_points(sc) if run else [measured]


def size_inputs(sc: dict[str, Any]) -> dict[str, str]:
    """The data stage's MNIST tables when the curve subsamples them (source: dataset)."""
    if sc.get("source") == "dataset":
        return {
            "features": "results/data/mnist/features.parquet",
            "obs": "results/data/mnist/obs.tsv",
        }
    return {}


def section_inputs(
    confusion: list[str], states: list[str], fed: list[str], mnist_bmnist: bool, curve: bool
) -> dict[str, list[str]]:
    """Inputs of the figures' report section."""
    out = {
        "confusion": [f"results/dec/figures/{d}/confusion.{e}" for d in confusion
                      for e in ("png", "tsv")],
        "states": [f"results/dec/figures/{d}/{f}" for d in states
                   for f in ("states.tsv", "density.png")],
        "fed": [f"results/dec/figures/{d}/{f}" for d in fed
                for f in ("federated_states.tsv", "federated_density.png")],
        "mnist": [f"results/dec/figures/mnist/{f}.png"
                  for f in ("fours_nines", "reconstruction", "recon_original")]
        if "mnist" in states else [],
        "mnist_bmnist": ["results/dec/figures/mnist_bmnist.png"] if mnist_bmnist else [],
    }  # fmt: skip
    if curve:
        out["size_curve"] = [
            "results/dec/size_curve/summary.tsv",
            "results/dec/size_curve/size_curve.png",
            "results/dec/size_curve/trend.tsv",
        ]
    return out


def report_spec(name: str, sub: str = "{dataset}") -> dict[str, str]:
    """report() keyword arguments of one extra figure."""
    return {
        "caption": f"../report/dec_{name}.rst",
        "category": "DEC",
        "subcategory": f"thesis figures {sub}".strip(),
    }
