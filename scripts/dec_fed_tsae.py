"""Rule `dec_fed_tsae`: federated TSAE rounds + local k-means messages of one (dataset, split,
strategy), handed to its per-aggregation DEC units."""

from dataclasses import asdict

from _common import run

from fedclust.dec.merge import save_pt
from fedclust.dec.pipeline import fed_tsae_stage
from fedclust.dec.workflow import fed_job_inputs
from fedclust.transports import from_config


def main() -> None:
    job = fed_job_inputs(snakemake, from_config(snakemake.config))
    w = job.wildcards
    _, state = fed_tsae_stage(
        job.x, job.centers, job.cfg, w.dataset, w.split, w.strategy, job.seed, job.transport
    )
    save_pt(snakemake.output.state, asdict(state))


run(main, snakemake)
