"""Rule `dec_train_federated`: every strategy × centroid aggregation on one split."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.dec.io import load_centers, load_dataset  # noqa: E402
from fedclust.dec.pipeline import run_federated  # noqa: E402
from fedclust.dec.plots import federated_curves  # noqa: E402
from fedclust.flower.engine import use_engine  # noqa: E402
from fedclust.io import save_figure, write_table  # noqa: E402


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    cfg, seed = snakemake.params.cfg, int(snakemake.params.seed)
    ds, split = snakemake.wildcards.dataset, snakemake.wildcards.split
    x, obs, _ = load_dataset(snakemake.input.features, snakemake.input.obs)
    centers = load_centers(snakemake.input.split, obs.index)
    # engine: the core's in-process round loop or Flower's (same numbers; src/fedclust/flower)
    with use_engine(cfg["federated"].get("engine", "inprocess")):
        res = run_federated(x, obs["label"].astype(str).to_numpy(), centers, cfg, ds, split, seed)
    write_table(snakemake.output.table, res.table, index=False)
    write_table(snakemake.output.curves, res.curves, index=False)
    write_table(snakemake.output.ledger, res.ledger, index=False)
    save_figure(
        federated_curves(res.curves, f"{ds} / {split}: federated training"), snakemake.output.figure
    )


run(main, snakemake)
