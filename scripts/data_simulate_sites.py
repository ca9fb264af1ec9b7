"""Rule `simulate_tss_sites`: write the simulated TSS → region table (data.rnaseq.sites)."""

from _common import run

from fedclust.data.simulate import write_simulated_site_table


def main() -> None:
    write_simulated_site_table(snakemake.output.sites, snakemake.params.sites)


run(main, snakemake)
