"""Rule `dec_fig_mnist`: Figs 5.7 (4s and 9s as images), 5.15 (reconstructions of a "4") and
5.16 (2-D space drawn as reconstructions / originals) from the best run's states."""

from _common import run

from fedclust.dec.figures_extra import (
    fours_nines_figure,
    load_states,
    recon_original_figure,
    reconstruction_figure,
)
from fedclust.dec.io import read_obs
from fedclust.io import save_figure


def main() -> None:
    ds, seed = snakemake.wildcards.dataset, int(snakemake.params.seed)
    n = int(snakemake.params.image_points)
    st = load_states(snakemake.input.states)
    y = read_obs(snakemake.input.obs)["label"].astype(str).to_numpy()
    out = snakemake.output
    save_figure(
        fours_nines_figure(
            st,
            y,
            n,
            seed,
            f"{ds}: 4s and 9s in the 2-D (t-SNE) space after clustering, drawn as their images",
        ),
        out.fours_nines,
    )
    save_figure(
        reconstruction_figure(st, y, "4", f'{ds}: a "4" and its reconstructions'),
        out.reconstruction,
    )
    save_figure(
        recon_original_figure(st, y, n, f"{ds}: part of the 2-D (t-SNE) space after clustering"),
        out.recon_original,
    )


run(main, snakemake)
