"""Rule `fedcref_size`: the association statistic vs the cluster size S (issue 28)."""

import numpy as np
import torch
from _common import run

from fedclust.fedcref.calibrate import size_statistics, size_summary
from fedclust.fedcref.report import size_figure
from fedclust.io import save_figure, write_table


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    cfg = snakemake.params.cfg
    study = cfg["size_study"]
    with np.load(snakemake.input.data) as z:
        x, y = z["x"], z["y"]
    stats = size_statistics(
        cfg, x, y, [int(s) for s in study["sizes"]], [float(d) for d in study["dirtiness"]],
        int(study["repetitions"]), int(snakemake.params.seed), bool(study["augment"]),
    )  # fmt: skip
    write_table(snakemake.output.pairs, stats, index=False)
    write_table(snakemake.output.summary, size_summary(stats), index=False)
    label = cfg["datasets"][study["dataset"]].get("label", study["dataset"])
    save_figure(size_figure(stats, label, float(cfg["association"]["paper_theta"])),
                snakemake.output.figure)  # fmt: skip


run(main, snakemake)
