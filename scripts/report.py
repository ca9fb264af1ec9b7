"""Rule `report`: assemble every stage's section into results/report/index.html."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.report import build_report  # noqa: E402


def main() -> None:
    build_report(
        list(snakemake.input.sections),
        snakemake.output.html,
        title=snakemake.params.title,
        preamble=[f"Configuration: {snakemake.params.config_name}."],
    )


run(main, snakemake)
