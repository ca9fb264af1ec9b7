"""Rule `dec_d62_report`: D6.2 ch. 7's figures (7.2–7.9), the unit table, Table 7.1 as run,
the HDP comparison and the report section."""

from _common import files, run

from fedclust.dec.d62.report import build_section


def main() -> None:
    build_section(
        files(snakemake.input),
        files(snakemake.output),
        cfg=snakemake.params.cfg,
        units=list(snakemake.params.units),
        mds_source=snakemake.params.mds_source,
        hdp_note=snakemake.params.hdp_note,
    )


run(main, snakemake)
