"""Rule `dec_train_federated_unit`: a block of (strategy, centroid aggregation) runs on one split
(one run in the thesis config, the whole split in the default config)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.dec.io import load_centers, load_dataset  # noqa: E402
from fedclust.dec.pipeline import FedTSAEState, run_federated_unit  # noqa: E402
from fedclust.dec.units import apply_settings, federated_units, load_pt, read_settings  # noqa: E402
from fedclust.flower.engine import use_engine  # noqa: E402
from fedclust.io import write_table  # noqa: E402


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    w = snakemake.wildcards
    settings = read_settings(snakemake.input)
    cfg = apply_settings(snakemake.params.cfg, w.dataset, settings)
    x, obs, _ = load_dataset(snakemake.input.features, snakemake.input.obs)
    centers = load_centers(snakemake.input.split, obs.index)
    states = {Path(p).stem: FedTSAEState(**load_pt(p)) for p in snakemake.input.get("tsae", [])}
    with use_engine(cfg["federated"].get("engine", "inprocess")):
        res = run_federated_unit(
            x, obs["label"].astype(str).to_numpy(), centers, cfg, w.dataset, w.split,
            int(snakemake.params.seed), federated_units(cfg)[w.unit], states,
        )  # fmt: skip
    write_table(snakemake.output.table, res.table, index=False)
    write_table(snakemake.output.curves, res.curves, index=False)
    write_table(snakemake.output.ledger, res.ledger, index=False)


run(main, snakemake)
