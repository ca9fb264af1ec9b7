"""Rule `simulate_tss_sites`: write the simulated TSS → region table (data.rnaseq.sites)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.data.simulate import write_simulated_site_table  # noqa: E402


def main() -> None:
    write_simulated_site_table(snakemake.output.sites, snakemake.params.sites)


run(main, snakemake)
