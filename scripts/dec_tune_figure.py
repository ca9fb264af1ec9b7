"""Rule `dec_tune_figure`: one tuning figure (seed 000 Figs 5.1–5.4, A.1–A.10) from its grid
table."""

from _common import run

from fedclust.dec.tuning_plots import grid_figure
from fedclust.io import read_table, save_figure


def main() -> None:
    w = snakemake.wildcards
    table = read_table(snakemake.input.table)
    fig = grid_figure(table, w.dataset, w.grid, w.panel,
                      list(snakemake.params.cfg["tuning"]["optimizers"]))  # fmt: skip
    save_figure(fig, snakemake.output.figure)


run(main, snakemake)
