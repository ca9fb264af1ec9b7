"""Rule `dec_report`: the DEC section of the report and its summary tables."""

from _common import run

from fedclust.dec.report import build_section


def main() -> None:
    build_section(
        snakemake.output.section,
        snakemake.output.cycle,
        snakemake.output.federated,
        snakemake.output.ledger,
        list(snakemake.params.datasets),
        [tuple(x) for x in snakemake.params.federated],
        bool(snakemake.input.survival),
        bool(snakemake.params.cfg["reduced"]),
        list(snakemake.input.tuning),
        dict(snakemake.params.get("sources", {})),
        cfg=dict(snakemake.params.cfg),
    )


run(main, snakemake)
