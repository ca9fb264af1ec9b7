"""Rule `deployment_run` (opt-in, config `deployment`): one registered stage on a Flower
deployment on this machine with the workflow's centre split, beside the in-process run of the
same centre files: the deployed ledger, the result table (deployed and in-process side by side)
and the comparison (equal: true/false)."""

from _common import files, run

from fedclust import deployrun
from fedclust.io import write_json_and_benchmark, write_table


def main() -> None:
    out = snakemake.output
    res = deployrun.execute(snakemake.config, snakemake.wildcards.stage, files(snakemake.input))
    write_table(out.ledger, res["ledger"], index=False)
    write_table(out.result, res["result"], index=False)
    write_json_and_benchmark(out.comparison, out.timing,
                             {**res["comparison"], "wall_s": res["wall_s"]})  # fmt: skip


run(main, snakemake)
