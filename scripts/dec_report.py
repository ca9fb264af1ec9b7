"""Rule `dec_report`: the DEC section of the report and its summary tables."""

from _common import run

from fedclust.dec.report import build_section


def main() -> None:
    out, p = snakemake.output, snakemake.params
    build_section(
        out.section,
        cycle_figure=out.cycle,
        federated_out=out.federated,
        ledger_out=out.ledger,
        datasets=list(p.datasets),
        federated=[tuple(x) for x in p.federated],
        survival=bool(snakemake.input.survival),
        default_config=bool(p.cfg["reduced"]),
        tuning=list(snakemake.input.tuning),
        sources=dict(p.get("sources", {})),
        cfg=dict(p.cfg),
    )


run(main, snakemake)
