"""Rule `simulate_rnaseq`: write a simulated cohort in the exact UCSC Xena file format."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.data.simulate import simulate_rnaseq, site_shares  # noqa: E402
from fedclust.data.tcga import tss_table  # noqa: E402


def main() -> None:
    simulate_rnaseq(
        snakemake.output.counts,
        snakemake.output.clinical,
        name=snakemake.wildcards.cohort,
        seed=snakemake.params.seed,
        sites=tss_table(snakemake.input.sites),
        region_shares=site_shares(snakemake.params.sites),
        **snakemake.params.cfg,
    )


run(main, snakemake)
