"""Rule `dec_tune_reuse`: a grid a dataset does not run (dec.tuning.reuse) — its own settings
before the grid with the source dataset's selection of that grid (seed 000: BMNIST's Step 2
used MNIST's values)."""

from _common import run

from fedclust.dec.tuning import reuse_settings
from fedclust.dec.units import read_settings
from fedclust.io import read_json, write_json


def main() -> None:
    previous = read_settings(snakemake.input)
    source = read_json(snakemake.input.source[0])
    write_json(snakemake.output.settings,
               reuse_settings(previous, source, snakemake.wildcards.grid))  # fmt: skip


run(main, snakemake)
