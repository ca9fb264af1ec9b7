"""Rule `survival_reference`: exact federated Cox-PH (stratified by centre) and federated KM /
log-rank on the training centres of one scenario (repetition 0), each checked against lifelines
on the pooled data."""

import pandas as pd
from _common import run

from fedclust.io import read_table, save_figure, write_json, write_table
from fedclust.survival.reference import reference_checks


def main() -> None:
    w = snakemake.wildcards
    x = read_table(snakemake.input.covariates)
    obs = pd.read_csv(snakemake.input.outcomes, sep="\t", index_col=0)
    obs.index = obs.index.astype(str)
    coef, km, check, fig = reference_checks(
        x, obs, w.endpoint, w.scenario, snakemake.params.cfg, snakemake.params.seed
    )
    write_table(snakemake.output.coxph, coef, index=False)
    write_table(snakemake.output.km, km, index=False)
    write_json(snakemake.output.check, check)
    save_figure(fig, snakemake.output.figure)


run(main, snakemake)
