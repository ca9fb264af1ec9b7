"""Rule `admm_report`: summary and message tables, one convergence figure per task, section."""

from _common import files, run

from fedclust.admm.report import build_section


def main() -> None:
    build_section(
        files(snakemake.input),
        files(snakemake.output),
        cfg=snakemake.params.cfg,
        runs=list(snakemake.params.runs),
    )


run(main, snakemake)
