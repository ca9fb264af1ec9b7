"""Rule `decentral_centralized`: the centralized baseline (grid search or published best)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.decentral.centralized import centralized_baseline  # noqa: E402
from fedclust.io import read_table, write_json, write_table  # noqa: E402


def main() -> None:
    cfg = snakemake.params.cfg
    c = cfg["centralized"]
    torch.set_num_threads(snakemake.threads)
    feats = read_table(snakemake.input.features)
    obs = read_table(snakemake.input.obs)
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
    )
    write_table(snakemake.output.grid, table, index=False)
    write_json(snakemake.output.result, res)


run(main, snakemake)
