"""Rule `privacy_utility_run`: federated methods over ε × seeds (curve and ε spent); one method
per job or all of them in one process (``privacy_utility.fanout``)."""

import pandas as pd
from _common import run

from fedclust.io import write_table
from fedclust.privacy_utility.experiment import run_unit


def main() -> None:
    inp, out = snakemake.input, snakemake.output
    for method in snakemake.params.methods:
        features, obs = None, None
        if f"{method}_features" in inp.keys():
            features = pd.read_parquet(inp[f"{method}_features"])
            obs = pd.read_csv(inp[f"{method}_obs"], sep="\t", index_col=0, dtype={"tss": str})
        key = f"{method}_split"
        split = pd.read_csv(inp[key], sep="\t", index_col=0) if key in inp.keys() else None
        curve, budget = run_unit(
            method,
            features,
            obs,
            split,
            dict(snakemake.params.cfg),
            dict(snakemake.params.config),
            int(snakemake.params.seed),
        )
        for name, table in (("curve", curve), ("budget", budget)):
            key = f"{name}_{method}" if f"{name}_{method}" in out.keys() else name
            write_table(out[key], table, index=False)


run(main, snakemake)
