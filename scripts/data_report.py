"""Rule `data_report`: per-dataset summary table and the data section of the report (order 10)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.data.report import build_data_report  # noqa: E402


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
