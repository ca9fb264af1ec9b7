"""Rule `decentral_centralized_cell`: one (batch size, epochs) cell of the centralized grid."""

import pandas as pd
import torch
from _common import run

from fedclust.decentral.centralized import grid_cell
from fedclust.io import read_table, write_table


def main() -> None:
    cfg, w = snakemake.params.cfg, snakemake.wildcards
    torch.set_num_threads(snakemake.threads)
    feats = read_table(snakemake.input.features)
    obs = read_table(snakemake.input.obs)
    row = grid_cell(
        feats,
        obs.loc[feats.index, "HeartDisease"].to_numpy(),
        int(w.batch),
        int(w.epochs),
        folds=cfg["centralized"]["folds"],
        lr=cfg["learning_rate"],
        seed=snakemake.params.seed,
        random_state=cfg["split_random_state"],
    )
    write_table(snakemake.output.cell, pd.DataFrame([row]), index=False)


run(main, snakemake)
