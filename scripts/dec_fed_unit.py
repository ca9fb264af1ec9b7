"""Rule `dec_train_federated_unit`: a block of (strategy, centroid aggregation) runs on one split
(one run in the thesis config, the whole split in the default config)."""

from pathlib import Path

from _common import run

from fedclust.dec.merge import load_pt
from fedclust.dec.pipeline import FedTSAEState, run_federated_unit
from fedclust.dec.units import federated_units
from fedclust.dec.workflow import fed_job_inputs
from fedclust.io import write_table
from fedclust.transports import from_config


def main() -> None:
    job = fed_job_inputs(snakemake, from_config(snakemake.config))
    w = job.wildcards
    states = {Path(p).stem: FedTSAEState(**load_pt(p)) for p in snakemake.input.get("tsae", [])}
    res = run_federated_unit(
        job.x, job.obs["label"].astype(str).to_numpy(), job.centers, job.cfg, w.dataset,
        w.split, job.seed, federated_units(job.cfg)[w.unit], states, transport=job.transport,
    )  # fmt: skip
    write_table(snakemake.output.table, res.table, index=False)
    write_table(snakemake.output.curves, res.curves, index=False)
    write_table(snakemake.output.ledger, res.ledger, index=False)


run(main, snakemake)
