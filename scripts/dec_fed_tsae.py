"""Rule `dec_fed_tsae`: federated TSAE rounds + local k-means messages of one (dataset, split,
strategy), handed to its per-aggregation DEC units."""

import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.dec.dag import fed_job_inputs  # noqa: E402
from fedclust.dec.pipeline import fed_tsae_stage  # noqa: E402
from fedclust.dec.units import save_pt  # noqa: E402


def main() -> None:
    job = fed_job_inputs(snakemake)
    w = job.wildcards
    with job.engine():
        _, state = fed_tsae_stage(
            job.x, job.centers, job.cfg, w.dataset, w.split, w.strategy, job.seed
        )
    save_pt(snakemake.output.state, asdict(state))


run(main, snakemake)
