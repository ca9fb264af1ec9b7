"""Rule `attack_property_inference`: sex from projected data (thesis §4.4.2, Fig 4.16), for the
projection conditions and runs of one part (issue 14 fan-out; `attacks_merge` joins)."""

import torch
from _common import run

from fedclust.attacks import workflow as wf
from fedclust.attacks.data import load_cohorts
from fedclust.attacks.property_inference import TrainSpec, run_property_inference
from fedclust.io import read_table, write_table


def device(name: str) -> str:
    return ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name


def main() -> None:
    torch.set_num_threads(snakemake.threads)
    cfg = snakemake.params.cfg
    cohorts = snakemake.params.cohorts
    conditions, runs = wf.pi_part(snakemake.params.att, snakemake.wildcards.part)
    counts, obs = load_cohorts(
        {c: read_table(p) for c, p in zip(cohorts, snakemake.input.counts, strict=True)},
        {c: read_table(p) for c, p in zip(cohorts, snakemake.input.obs, strict=True)},
    )
    spec = TrainSpec(
        d_nn=cfg["d_nn"],
        d_nn_small=cfg["d_nn_small"],
        small_input=cfg["small_input"],
        lrs=tuple(cfg["lrs"]),
        epochs=cfg["epochs"],
        batch_size=cfg["batch_size"],
        device=device(snakemake.params.device),
    )
    acc = run_property_inference(
        counts,
        obs,
        conditions=conditions,
        n_runs=cfg["n_runs"],
        spec=spec,
        seed=snakemake.params.seed,
        preprocessing=cfg["preprocessing"],
        genes=cfg["genes"],
        max_genes=cfg["max_genes"],
        runs=runs,
    )
    write_table(snakemake.output.table, acc, index=False)


run(main, snakemake)
