"""Target lists of rules/dec_figures.smk (kept out of the rule file, snakemake --lint)."""

from __future__ import annotations

from typing import Any


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
