"""Rule `dec_tune_select`: one tuning grid's table, its selection (seed 000 §4.1 / §3.8 order)
with the thesis' values beside ours, and the settings file the next rules read."""

from _common import run

from fedclust.dec.merge import concat
from fedclust.dec.tuning import select, with_thesis
from fedclust.dec.units import read_settings
from fedclust.io import read_table, write_json, write_table


def main() -> None:
    w = snakemake.wildcards
    previous = read_settings(snakemake.input)
    table = concat([read_table(p) for p in snakemake.input.points])
    table = table.sort_values("point", kind="mergesort").reset_index(drop=True)
    settings, best = select(w.grid, table, snakemake.params.cfg, w.dataset, previous)
    write_table(snakemake.output.table, table, index=False)
    write_table(snakemake.output.best, with_thesis(best, w.dataset, w.grid), index=False)
    write_json(snakemake.output.settings, settings)


run(main, snakemake)
