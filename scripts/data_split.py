"""Rules `split_<name>`: assign samples to centers; one table + a folder of center files."""

from pathlib import Path

from _common import run

from fedclust.data.split import spec_centers, split_table
from fedclust.io import read_table, write_table
from fedclust.seeds import derive_seed


def main() -> None:
    obs = read_table(snakemake.input.obs)
    obs.index = obs.index.astype(str)
    spec = snakemake.params.spec
    # bmnist holds the same images as mnist: same split
    family = {"bmnist": "mnist"}.get(snakemake.wildcards.dataset, snakemake.wildcards.dataset)
    seed = derive_seed(snakemake.params.seed, "split", family)
    label = spec.get("label_column", "true_cluster" if "true_cluster" in obs else "label")
    table = split_table(obs, spec, seed, label_column=label)
    write_table(snakemake.output.split, table, index=False)
    folder = Path(snakemake.output.centers)  # one directory() output: every center's samples
    for center in spec_centers(spec):
        members = table.loc[table["center"] == center, ["sample_id"]]
        write_table(folder / f"{center}.tsv", members, index=False)


run(main, snakemake)
