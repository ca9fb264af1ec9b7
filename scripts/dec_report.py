"""Rule `dec_report`: the DEC section of the report and its summary tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.dec.report import build_section  # noqa: E402


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
    )


run(main, snakemake)
