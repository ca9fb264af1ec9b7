"""Rule `fedcref_report`: merge every run into Tables 1–8, curves and the report section."""

from _common import run

from fedclust.fedcref.report import build_section


def main() -> None:
    i, o = snakemake.input, snakemake.output
    build_section(
        o.section,
        tables_dir=o.tables,
        figures_dir=o.figures,
        summaries=list(i.summaries),
        histories=list(i.histories),
        cross=list(i.cross),
        calibrations=list(i.calibration),
        calibration_figures=list(i.calibration_figures),
        cfg=snakemake.params.cfg,
        size=list(i.size_study),
        summaries_timing=list(i.summaries_timing),
        tables_timing_dir=o.tables_timing,
    )


run(main, snakemake)
