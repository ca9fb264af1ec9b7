"""Rule `privacy_utility_report`: merged curves, summary, thresholds, ε budget, one figure per
method and the section."""

from _common import files, run

from fedclust.privacy_utility.report import build_section


def main() -> None:
    build_section(
        files(snakemake.input),
        files(snakemake.output),
        cfg=snakemake.params.cfg,
        methods=list(snakemake.params.methods),
    )


run(main, snakemake)
