"""Rule `survival_job`: one (endpoint, scenario, strategy, repetition) of D6.2 Tables 8.1–8.3,
or (``survival.fanout: repetition``) every (scenario, strategy) of one (endpoint, repetition)."""

import pandas as pd
from _common import run

from fedclust.io import read_table, write_json_and_benchmark, write_table
from fedclust.survival.experiment import run_units
from fedclust.transports import from_config


def main() -> None:
    import torch

    torch.set_num_threads(1)
    w, out = snakemake.wildcards, snakemake.output
    x = read_table(snakemake.input.covariates)
    obs = pd.read_csv(snakemake.input.outcomes, sep="\t", index_col=0)
    obs.index = obs.index.astype(str)
    units = snakemake.params.units
    if units is None:  # one unit per job
        units = [(w.scenario, w.strategy)]
        paths = [(out.result, out.cv, out.predictions, out.timing)]
    else:
        units = [tuple(u) for u in units]
        paths = list(zip(out.result, out.cv, out.predictions, out.timing, strict=True))
    results = run_units(
        x,
        obs,
        w.endpoint,
        units,
        int(w.rep),
        snakemake.params.cfg,
        snakemake.params.seed,
        transport=from_config(snakemake.config),
    )
    for (res, cv, pred), (p_res, p_cv, p_pred, p_time) in zip(results, paths, strict=True):
        write_json_and_benchmark(p_res, p_time, res)  # wall_s: the benchmark file only
        write_table(p_cv, cv, index=False)
        write_table(p_pred, pred)


run(main, snakemake)
