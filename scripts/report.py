"""Rule `report`: assemble every stage's section into results/report/index.html."""

from _common import run

from fedclust.report import build_report


def main() -> None:
    build_report(
        list(snakemake.input.sections),
        snakemake.output.html,
        title=snakemake.params.title,
        preamble=[f"Configuration: {snakemake.params.config_name}."],
    )


run(main, snakemake)
