"""Rule `decentral_centralized_cell`: one (batch size, epochs) cell of the centralized grid."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.decentral.centralized import grid_cell  # noqa: E402
from fedclust.io import read_table, write_table  # noqa: E402


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
