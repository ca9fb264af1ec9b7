"""Rule `attacks_report`: Figs 4.14–4.19, the summary table and the report section."""

from _common import files, run

from fedclust.attacks.report import build_section


def main() -> None:
    p = snakemake.params
    build_section(
        files(snakemake.input),
        files(snakemake.output),
        cfg=p.cfg,
        cohorts=list(p.cohorts),
        sex_cohorts=list(p.sex_cohorts),
        config_name=p.config_name,
    )


run(main, snakemake)
