"""Rules `hac_gradual` / `hac_simultaneous` / `hac_projection`: the units of one job (issue 14).

A job runs one part (``{part}``: one unit, or every unit of the variant, times one projection
seed block; :mod:`fedclust.hac.workflow`) on one RNA-seq cohort split by region; ``hac_merge``
concatenates the parts into the cohort's tables.
"""

import logging

import pandas as pd
from _common import run

from fedclust.hac import experiments as ex
from fedclust.hac import workflow as wf
from fedclust.io import write_table


def main() -> None:
    cfg, seed, out = snakemake.params.cfg, int(snakemake.params.seed), snakemake.output
    variant, cohort, part = (
        snakemake.params.variant,
        snakemake.wildcards.cohort,
        snakemake.wildcards.part,
    )
    units = wf.units_of_part(cfg, variant, part)
    preps = sorted({u.prep for u in units})
    paths = {p: getattr(snakemake.input, p) for p in preps}
    data, centers = ex.load_cohort(paths, snakemake.input.obs)
    logging.info("%s %s %s: %d samples, %d units", cohort, variant, part, len(centers), len(units))
    tables, cuts = [], []
    for u in units:
        if variant == "projection":
            tables.append(wf.run_projection(data, centers, cfg, u, cohort, seed))
        else:
            runner = wf.run_gradual if variant == "gradual" else wf.run_simultaneous
            t, c = runner(data, centers, cfg, u, cohort)
            tables.append(t)
            cuts.append(c)
        logging.info("%s done", u)
    write_table(out.table, pd.concat(tables, ignore_index=True), index=False)
    if cuts:
        write_table(out.cuts, pd.concat(cuts, ignore_index=True), index=False)


run(main, snakemake)
