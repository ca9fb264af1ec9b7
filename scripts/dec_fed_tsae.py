"""Rule `dec_fed_tsae`: federated TSAE rounds + local k-means messages of one (dataset, split,
strategy), handed to its per-aggregation DEC units."""

import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.dec.io import load_centers, load_dataset  # noqa: E402
from fedclust.dec.pipeline import fed_tsae_stage  # noqa: E402
from fedclust.dec.units import apply_settings, read_settings, save_pt  # noqa: E402
from fedclust.flower.engine import use_engine  # noqa: E402


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    w = snakemake.wildcards
    settings = read_settings(snakemake.input)
    cfg = apply_settings(snakemake.params.cfg, w.dataset, settings)
    x, obs, _ = load_dataset(snakemake.input.features, snakemake.input.obs)
    centers = load_centers(snakemake.input.split, obs.index)
    with use_engine(cfg["federated"].get("engine", "inprocess")):
        _, state = fed_tsae_stage(
            x, centers, cfg, w.dataset, w.split, w.strategy, int(snakemake.params.seed)
        )
    save_pt(snakemake.output.state, asdict(state))


run(main, snakemake)
