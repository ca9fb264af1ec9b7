"""Rule `hac_report`: figures, Table 4.1 and the report section of the hac stage."""

from _common import files, run

from fedclust.hac.report import build_section


def main() -> None:
    p = snakemake.params
    build_section(
        files(snakemake.input),
        files(snakemake.output),
        cfg=p.cfg,
        cohorts=list(p.cohorts),
        config_name=p.config_name,
        seed=int(p.seed),
    )


run(main, snakemake)
