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
from fedclust.privacy.release_log import to_json
from fedclust.transports import from_config

#: the variants whose messages go through the transport seam (federation.engine); the others
#: run in-process whatever the engine
ON_TRANSPORT = ("simultaneous", "gradual", "projection")


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
    transport = from_config(snakemake.config)
    if transport.name != "inprocess" and variant not in ON_TRANSPORT:
        logging.warning("hac %s runs in-process: only %s go through federation.engine = %s",
                        variant, ", ".join(ON_TRANSPORT), transport.name)  # fmt: skip
    tables, cuts = [], []
    # the centres' release logs of the matrices this job publishes sums of (issue 22): started
    # from the previous job of the chain, written for the next
    logs = wf.read_logs(list(snakemake.input.logs), set(preps)) if variant != "projection" else {}
    for u in units:
        if variant == "projection":
            tables.append(wf.run_projection(data, centers, cfg, u, cohort, seed, transport))
        elif variant == "gradual":
            t, c = wf.run_gradual(data, centers, cfg, u, cohort, logs, transport)
            tables.append(t)
            cuts.append(c)
        else:
            t, c = wf.run_simultaneous(data, centers, cfg, u, cohort, logs, seed, transport)
            tables.append(t)
            cuts.append(c)
        logging.info("%s done", u)
    write_table(out.table, pd.concat(tables, ignore_index=True), index=False)
    if cuts:
        write_table(out.cuts, pd.concat(cuts, ignore_index=True), index=False)
    if variant != "projection":
        to_json(logs, out.release_log)


run(main, snakemake)
