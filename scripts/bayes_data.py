"""Rule `bayes_data`: the images of the bayes stage with their train / validation / test parts."""

from _common import run

from fedclust.bayes.data import build_dataset, describe
from fedclust.io import write_json, write_npz


def main() -> None:
    d = snakemake.params.cfg["data"]
    idx = dict(snakemake.input.items()) or None
    data = build_dataset(
        d["source"], snakemake.params.seed, d["test_fraction"], d["validation_fraction"], idx
    )
    write_npz(snakemake.output.data, **data)
    write_json(snakemake.output.info, describe(data, d["source"], d["label"]))


run(main, snakemake)
