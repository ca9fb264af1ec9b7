"""Rule `decentral_report`: Tables 4.1–4.4, Figs 4.1–4.3 (both modes, both splits), section."""

from _common import files, run

from fedclust.decentral.report import build_section


def main() -> None:
    build_section(
        files(snakemake.input),
        files(snakemake.output),
        cfg=snakemake.params.cfg,
        runs=list(snakemake.params.runs),
    )


run(main, snakemake)
