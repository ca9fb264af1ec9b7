"""Rule `boosting_report`: merged tables, the gap-vs-S figure and the report section."""

from _common import files, run

from fedclust.boosting.report import build_section


def main() -> None:
    build_section(files(snakemake.input), files(snakemake.output), cfg=snakemake.params.cfg)


run(main, snakemake)
