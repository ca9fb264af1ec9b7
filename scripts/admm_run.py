"""Rule `admm_run`: ADMM runs (task × mode; one, or all with admm.fanout: all): history, result
and ledger tables of each run."""

from _common import run

from fedclust.admm.pipeline import run_units
from fedclust.io import write_json_and_benchmark, write_table
from fedclust.transports import from_config


def main() -> None:
    units = [tuple(u) for u in snakemake.params.units]
    out = snakemake.output
    runs = run_units(
        snakemake.params.cfg,
        units,
        snakemake.params.seed,
        snakemake.params.mds_source,
        from_config(snakemake.config),
    )
    files = zip(out.history, out.ledger, out.result, out.timing, strict=True)  # `units` order
    for (res, info), (history, ledger, result, timing) in zip(runs, files, strict=True):
        write_table(history, res.history, index=False)
        write_table(ledger, res.ledger.table(), index=False)
        write_json_and_benchmark(result, timing, info)  # seconds: the benchmark file only


run(main, snakemake)
