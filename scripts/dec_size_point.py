"""Rule `dec_size_point`: one (schedule, size, repetition) of the MNIST size curve."""

import torch
from _common import run

from fedclust.dec.size_curve import load_curve_data, size_point
from fedclust.io import write_table


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    cfg = snakemake.params.cfg
    sc = cfg["size_curve"]
    inp = snakemake.input
    x, y = load_curve_data(sc["source"], inp.get("features"), inp.get("obs"))
    w = snakemake.wildcards
    row = size_point(x, y, cfg, sc, w.schedule, int(w.size), int(w.rep), int(snakemake.params.seed))
    write_table(snakemake.output[0], row, index=False)


run(main, snakemake)
