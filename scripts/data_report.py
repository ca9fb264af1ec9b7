"""Rule `data_report`: per-dataset summary table and the data section of the report (order 10)."""

from _common import run

from fedclust.data.report import build_data_report


def main() -> None:
    build_data_report(
        datasets=snakemake.params.datasets,
        sources=snakemake.params.sources,
        figures=snakemake.params.figures,
        summary_path=snakemake.output.summary,
        section_path=snakemake.output.section,
        texts=snakemake.params.texts,
    )


run(main, snakemake)
