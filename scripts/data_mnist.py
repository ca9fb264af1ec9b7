"""Rule `mnist`: MNIST-family images in [0, 1] (mnist) and binarised at 0.5 (bmnist)."""

from _common import run

from fedclust.data.download import verify_downloads
from fedclust.data.mnist import as_tables, binarise, load_source
from fedclust.io import write_table


def main() -> None:
    cfg, out = snakemake.params.cfg, snakemake.output
    verify_downloads(snakemake.input)  # cached IDX files unchanged since their download
    images = getattr(snakemake.input, "images", None)
    labels = getattr(snakemake.input, "labels", None)
    x, y = load_source(cfg["source"], images, labels)
    for _kind, arr, feat_path, obs_path in (
        ("mnist", x, out.mnist_features, out.mnist_obs),
        ("bmnist", binarise(x, cfg["binarise_threshold"]), out.bmnist_features, out.bmnist_obs),
    ):
        feats, obs = as_tables(arr, y, prefix=f"{cfg['source']}")
        write_table(feat_path, feats)
        write_table(obs_path, obs)


run(main, snakemake)
