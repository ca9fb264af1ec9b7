"""Rule `fedcref_report`: merge every run into Tables 1–8, curves and the report section."""

from _common import run

from fedclust.fedcref.report import build_section


def main() -> None:
    i, o = snakemake.input, snakemake.output
    build_section(
        o.section,
        o.tables,
        o.figures,
        list(i.summaries),
        list(i.histories),
        list(i.cross),
        list(i.calibration),
        list(i.calibration_figures),
        snakemake.params.cfg,
        list(i.size_study),
        summaries_timing=list(i.summaries_timing),
        tables_timing_dir=o.tables_timing,
    )


run(main, snakemake)
