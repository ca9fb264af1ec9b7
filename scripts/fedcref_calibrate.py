"""Rule `fedcref_calibrate`: θ from a labelled validation system (seed 002 §8.4)."""

import numpy as np
import torch
from _common import run

from fedclust.fedcref.calibrate import calibrate
from fedclust.fedcref.report import calibration_figure
from fedclust.io import save_figure, write_json, write_table


def main() -> None:
    torch.set_num_threads(1)
    ds = snakemake.wildcards.dataset
    with np.load(snakemake.input.data) as z:
        x, y = z["x"], z["y"]
    setting = {"dataset": ds, "init": "oracle"}
    cal, pairs = calibrate(snakemake.params.cfg, setting, x, y, int(snakemake.params.seed))
    write_json(snakemake.output.json, {"dataset": ds, **cal})
    write_table(snakemake.output.pairs, pairs, index=False)
    save_figure(calibration_figure(pairs, cal, ds), snakemake.output.figure)


run(main, snakemake)
