"""Rule `generative_report`: merged tables, figures and the section of the generative stage."""

from _common import files, run

from fedclust.generative.report import build_section


def main() -> None:
    p = snakemake.params
    build_section(
        files(snakemake.input),
        files(snakemake.output),
        models=list(p.models),
        units={m: list(u) for m, u in p.units.items()},
        digit_units=list(p.digit_units),
    )


run(main, snakemake)
