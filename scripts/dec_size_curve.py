"""Rule `dec_size_curve`: the MNIST accuracy-vs-size table and figure."""

import pandas as pd
from _common import run

from fedclust.dec.size_curve import fit_trend, size_curve_figure, summarise
from fedclust.io import save_figure, write_table


def main() -> None:
    points = pd.concat([pd.read_csv(p, sep="\t") for p in snakemake.input], ignore_index=True)
    points = points.sort_values(["schedule", "size", "rep"], kind="mergesort")
    summary = summarise(points)
    write_table(snakemake.output.points, points.round(5), index=False)
    write_table(snakemake.output.summary, summary.round(5), index=False)
    write_table(snakemake.output.trend, fit_trend(points).round(5), index=False)
    measured = snakemake.params.mode == "measured"
    src = "mlxtend5k, committed measurement" if measured else snakemake.params.source
    save_figure(
        size_curve_figure(points, summary, f"MNIST ({src}): Hungarian accuracy vs training size"),
        snakemake.output.figure,
    )


run(main, snakemake)
