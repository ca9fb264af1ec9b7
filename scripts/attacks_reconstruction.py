"""Rule `attack_reconstruction`: MMD decoders, pinv baseline, VST vs size factors, combined attack
(thesis §4.4.3, Figs 4.17–4.19)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.attacks.data import load_cohorts  # noqa: E402
from fedclust.attacks.reconstruction import run_reconstruction  # noqa: E402
from fedclust.io import read_table, write_table  # noqa: E402


def main() -> None:
    torch.set_num_threads(snakemake.threads)
    cohorts = snakemake.params.cohorts
    counts, obs = load_cohorts(
        {c: read_table(p) for c, p in zip(cohorts, snakemake.input.counts, strict=True)},
        {c: read_table(p) for c, p in zip(cohorts, snakemake.input.obs, strict=True)},
    )
    name = snakemake.params.device
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name
    out = run_reconstruction(counts, obs, snakemake.params.cfg, snakemake.params.seed, dev)
    for key in ("errors", "pinv", "combined", "tests"):
        write_table(snakemake.output[key], out[key], index=False)


run(main, snakemake)
