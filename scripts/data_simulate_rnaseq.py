"""Rule `simulate_rnaseq`: write a simulated cohort in the exact UCSC Xena file format."""

from _common import run

from fedclust.data.simulate import simulate_rnaseq, site_shares
from fedclust.data.tcga import tss_table


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
