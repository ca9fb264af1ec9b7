"""Rule `decentral_centralized`: the centralized baseline (grid search or published best)."""

import pandas as pd
import torch
from _common import run

from fedclust.decentral.centralized import centralized_baseline
from fedclust.io import read_table, write_json, write_table


def main() -> None:
    cfg = snakemake.params.cfg
    c = cfg["centralized"]
    torch.set_num_threads(snakemake.threads)
    feats = read_table(snakemake.input.features)
    obs = read_table(snakemake.input.obs)
    cells = snakemake.input.get("cells", [])  # the grid cells' jobs (decentral_centralized_cell)
    rows = [r for f in cells for r in pd.read_csv(f, sep="\t").to_dict("records")] or None
    table, res = centralized_baseline(
        feats,
        obs.loc[feats.index, "HeartDisease"].to_numpy(),
        c["batch_sizes"],
        c["epochs"],
        grid=c["grid_search"],
        best=(c["best_batch_size"], c["best_epochs"]),
        folds=c["folds"],
        lr=cfg["learning_rate"],
        seed=snakemake.params.seed,
        random_state=cfg["split_random_state"],
        grid_rows=rows,
    )
    write_table(snakemake.output.grid, table, index=False)
    write_json(snakemake.output.result, res)


run(main, snakemake)
