"""Rule `dec_splits`: samples per center of every split of a dataset (seed 000 Figs 4.1/4.2)."""

from _common import run

from fedclust.dec.io import read_obs
from fedclust.dec.plots import split_histograms
from fedclust.io import read_table, save_figure, write_table


def main() -> None:
    obs = read_obs(snakemake.input.obs)
    splits = {}
    for name, path in zip(snakemake.params.splits, snakemake.input.splits, strict=True):
        s = read_table(path)
        s.index = s.index.astype(str)
        splits[name] = s["center"]
    ds = snakemake.wildcards.dataset
    fig, table = split_histograms(
        splits, obs["label"], f"{ds}: samples per center, stacked by reference label"
    )
    save_figure(fig, snakemake.output.figure)
    write_table(snakemake.output.table, table, index=False)


run(main, snakemake)
