"""Rule `privacy_utility_run`: one federated method over ε × seeds (curve and ε spent)."""

import pandas as pd
from _common import run

from fedclust.io import write_table
from fedclust.privacy_utility.experiment import run_unit


def main() -> None:
    inp, method = snakemake.input, snakemake.wildcards.method
    features = pd.read_parquet(inp.features)
    obs = pd.read_csv(inp.obs, sep="\t", index_col=0, dtype={"tss": str})
    split = pd.read_csv(inp.split, sep="\t", index_col=0) if "split" in inp.keys() else None
    curve, budget = run_unit(
        method,
        features,
        obs,
        split,
        dict(snakemake.params.cfg),
        dict(snakemake.params.config),
        int(snakemake.params.seed),
    )
    write_table(snakemake.output.curve, curve, index=False)
    write_table(snakemake.output.budget, budget, index=False)


run(main, snakemake)
