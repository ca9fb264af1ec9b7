"""Rule `attack_known_io`: guaranteed max. relative error ε_x per known fraction for one cohort,
for the preprocessings and known sets of one part (issue 14 fan-out; `attacks_merge` joins)."""

import logging

import pandas as pd
from _common import run

from fedclust.attacks import workflow as wf
from fedclust.attacks.data import most_variable, preprocess
from fedclust.attacks.known_io import known_io_curve
from fedclust.io import read_table, write_table


def main() -> None:
    cfg, cohort = snakemake.params.cfg, snakemake.wildcards.cohort
    preps, seeds = wf.known_io_part(snakemake.params.att, snakemake.wildcards.part)
    counts = read_table(snakemake.input.counts)
    counts = counts.loc[:, (counts > 0).any(axis=0)]
    if cfg["genes"] == "no_zero":
        counts = counts.loc[:, (counts > 0).all(axis=0)]
    tables = []
    for prep in preps:
        x = preprocess(counts, prep)
        x = x[most_variable(x, cfg["max_genes"])]
        logging.info("%s %s: %d samples × %d genes, known sets %s", cohort, prep, *x.shape, seeds)
        t = known_io_curve(
            x.to_numpy(float), cfg["fractions"], seeds, snakemake.params.seed, cohort
        )
        t.insert(0, "preprocessing", prep)
        t.insert(0, "cohort", cohort)
        t["n_genes"] = x.shape[1]
        t["sample"] = x.index.to_numpy()[t["sample"].to_numpy()]
        tables.append(t)
    write_table(snakemake.output.table, pd.concat(tables, ignore_index=True), index=False)


run(main, snakemake)
