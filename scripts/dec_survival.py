"""Rule `dec_survival`: KM curves per found cluster and per reference group (MDS), clusters
Hungarian-matched to the groups; patients without a reference category left out of the
reference test."""

from _common import run

from fedclust.dec.io import read_obs
from fedclust.dec.survival import km_panels
from fedclust.io import read_table, save_figure, write_table


def main() -> None:
    labels = read_table(snakemake.input.labels)
    obs = read_obs(snakemake.input.obs)
    labels.index = labels.index.astype(str)
    obs = obs.loc[labels.index]
    outcomes = list(snakemake.params.cfg["evaluate"]["survival"])
    fig, km = km_panels(
        obs,
        labels["cluster"].astype(str).to_numpy(),
        obs["label"].astype(str).to_numpy(),
        outcomes,
        "Kaplan–Meier per DEC cluster (left, Hungarian-matched to the reference groups: "
        "same colour = matched pair) and per reference group (right), best centralized run",
    )
    save_figure(fig, snakemake.output.figure)
    write_table(snakemake.output.table, km, index=False)


run(main, snakemake)
