"""Rules `attack_reconstruction` / `attack_reconstruction_pinv`: MMD decoders, pinv baseline,
VST vs size factors, combined attack (thesis §4.4.3, Figs 4.17–4.19), for the runs of one part
or the Fig 4.18 pseudo-inverse table of one cohort (issue 14 fan-out; `attacks_merge` joins)."""

import torch
from _common import run

from fedclust.attacks import workflow as wf
from fedclust.attacks.data import load_cohorts
from fedclust.attacks.reconstruction import run_reconstruction
from fedclust.io import read_table, write_table


def main() -> None:
    torch.set_num_threads(snakemake.threads)
    cohorts = snakemake.params.cohorts
    pinv_cohort = snakemake.wildcards.get("cohort")
    runs = (
        None
        if pinv_cohort
        else wf.reconstruction_part(snakemake.params.att, snakemake.wildcards.part)
    )
    counts, obs = load_cohorts(
        {c: read_table(p) for c, p in zip(cohorts, snakemake.input.counts, strict=True)},
        {c: read_table(p) for c, p in zip(cohorts, snakemake.input.obs, strict=True)},
    )
    name = snakemake.params.device
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name
    cfg, seed = snakemake.params.cfg, snakemake.params.seed
    if pinv_cohort:  # the pseudo-inverse job of one cohort (on the cohorts' common genes)
        out = run_reconstruction(counts, obs, cfg, seed, dev, runs=[], pinv=[pinv_cohort])
        write_table(snakemake.output.pinv, out["pinv"], index=False)
        return
    out = run_reconstruction(counts, obs, cfg, seed, dev, runs=runs, pinv=False)
    for key in ("errors", "combined"):
        write_table(snakemake.output[key], out[key], index=False)


run(main, snakemake)
