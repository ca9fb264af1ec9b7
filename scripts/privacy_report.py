"""Rule `privacy_report`: run the attack suite (issue 22) and write the report's Privacy section."""

from _common import run

from fedclust.io import save_figure, write_table
from fedclust.privacy import report as R
from fedclust.privacy.suite import run_suite


def main() -> None:
    out = snakemake.output
    table = run_suite(snakemake.params.cfg.get("scenarios"))
    write_table(out.table, table, index=False)
    save_figure(R.figure(table), out.figure)
    R.build_section(out.section, out.table, out.figure, table)


run(main, snakemake)
