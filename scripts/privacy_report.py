"""Rule `privacy_report`: run the attack suite (issue 22) and write the report's Privacy section."""

from _common import files, run

from fedclust.privacy.report import build_section
from fedclust.privacy.suite import run_suite


def main() -> None:
    build_section(files(snakemake.output), table=run_suite(snakemake.params.cfg["scenarios"]))


run(main, snakemake)
