"""Rule `fedcref_calibrate`: θ from labelled validation systems at each initial dirtiness the
dataset's settings start from (seed 002 §8.4, issue 28)."""

import numpy as np
import torch
from _common import run

from fedclust.fedcref.calibrate import calibrate
from fedclust.fedcref.report import calibration_figure
from fedclust.io import save_figure, write_json, write_table


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    ds = snakemake.wildcards.dataset
    with np.load(snakemake.input.data) as z:
        x, y = z["x"], z["y"]
    setting = {"dataset": ds, "init": "dirty_uniform"}
    levels, pairs = calibrate(
        snakemake.params.cfg, setting, x, y, int(snakemake.params.seed), snakemake.params.levels
    )
    write_json(snakemake.output.json, {"dataset": ds, "levels": levels})
    write_table(snakemake.output.pairs, pairs, index=False)
    save_figure(calibration_figure(pairs, levels, ds), snakemake.output.figure)


run(main, snakemake)
