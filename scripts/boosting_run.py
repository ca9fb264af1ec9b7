"""Rule `boosting_run`: one job's (dataset, split, scheme, repetition) units: metrics and
message tables, and the timing table under results/benchmarks/."""

from _common import run

from fedclust.boosting.experiment import run_units
from fedclust.io import write_table
from fedclust.transports import from_config


def main() -> None:
    p, out = snakemake.params, snakemake.output
    res = run_units(
        p.cfg, p.units, p.seed, dict(snakemake.input.items()), heart=p.heart,
        mds_source=p.mds_source, data_splits=p.data_splits,
        transport=from_config(snakemake.config),
    )  # fmt: skip
    write_table(out.metrics, res.metrics, index=False)
    write_table(out.messages, res.messages, index=False)
    write_table(out.timing, res.timing, index=False)


run(main, snakemake)
