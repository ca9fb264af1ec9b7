"""Rule `bayes_report`: Table 4.1, the VIRTUAL numbers, federated / heterogeneity / conjugate /
message tables, Figs 4.1, 4.2, 4.4 and the section."""

from _common import files, run

from fedclust.bayes.report import build_section


def main() -> None:
    build_section(
        files(snakemake.input),
        files(snakemake.output),
        cfg=snakemake.params.cfg,
        central_units=list(snakemake.params.central),
        federated_units=list(snakemake.params.federated),
    )


run(main, snakemake)
