"""Rule `survival_job`: one (endpoint, scenario, strategy, repetition) of D6.2 Tables 8.1–8.3."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import pandas as pd  # noqa: E402
from _common import run  # noqa: E402

from fedclust.io import read_table, write_json, write_table  # noqa: E402
from fedclust.survival.experiment import run_job  # noqa: E402


def main() -> None:
    import torch

    torch.set_num_threads(1)
    w = snakemake.wildcards
    x = read_table(snakemake.input.covariates)
    obs = pd.read_csv(snakemake.input.outcomes, sep="\t", index_col=0)
    obs.index = obs.index.astype(str)
    res, cv, pred = run_job(
        x,
        obs,
        w.endpoint,
        w.scenario,
        w.strategy,
        int(w.rep),
        snakemake.params.cfg,
        snakemake.params.seed,
    )
    write_json(snakemake.output.result, res)
    write_table(snakemake.output.cv, cv, index=False)
    write_table(snakemake.output.predictions, pred)


run(main, snakemake)
