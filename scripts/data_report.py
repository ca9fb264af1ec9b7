"""Rule `data_report`: per-dataset summary table, the federated vs pooled preprocessing tables
and the data section of the report (order 10)."""

from _common import run

from fedclust.data.report import build_data_report


def main() -> None:
    i, out = snakemake.input, snakemake.output
    build_data_report(
        datasets=snakemake.params.datasets,
        sources=snakemake.params.sources,
        figures=snakemake.params.figures,
        summary_path=out.summary,
        section_path=out.section,
        texts=snakemake.params.texts,
        agreement=list(i.agreement),
        heart=str(i.heart) if i.heart else None,
        rnaseq_path=out.federated_rnaseq,
        tables_path=out.federated_tables,
        prep=snakemake.params.prep,
        modes=snakemake.params.modes,
    )


run(main, snakemake)
