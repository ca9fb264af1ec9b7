"""Rule `dec_fig_mnist_bmnist`: one image per digit, MNIST over BMNIST (seed 000 Fig. 3.1)."""

from _common import run

from fedclust.dec.figures_extra import mnist_bmnist_figure
from fedclust.dec.io import load_dataset
from fedclust.io import save_figure


def main() -> None:
    inp = snakemake.input
    x, obs, _ = load_dataset(inp.mnist_features, inp.mnist_obs)
    xb, obs_b, _ = load_dataset(inp.bmnist_features, inp.bmnist_obs)
    xb = xb[obs_b.index.get_indexer(obs.index)]
    title = f"{len(x)} images: MNIST (top) and BMNIST (bottom, binarised at 0.5)"
    save_figure(mnist_bmnist_figure(x, xb, obs["label"].to_numpy(), title), snakemake.output[0])


run(main, snakemake)
