"""Rule `dec_fig_confusion`: confusion matrix of the best centralized run (Fig. 5.5 / B.1)."""

from _common import run

from fedclust.dec.figures_extra import confusion_figure, confusion_table
from fedclust.io import read_table, save_figure, write_table


def main() -> None:
    ds = snakemake.wildcards.dataset
    lab = read_table(snakemake.input.labels)
    known = ~lab["label"].astype(str).isin(["NA", "unknown"])
    table = confusion_table(
        lab.loc[known, "cluster"].to_numpy(), lab.loc[known, "label"].to_numpy()
    )
    write_table(snakemake.output.table, table)
    save_figure(
        confusion_figure(table, f"{ds}: true label vs predicted cluster, best run"),
        snakemake.output.figure,
    )


run(main, snakemake)
