"""Rule `dec_train_federated`: merge of the federated units of one split (the all-in-one
tables, row for row) and the curves figure."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.dec.pipeline import sort_results  # noqa: E402
from fedclust.dec.plots import federated_curves  # noqa: E402
from fedclust.dec.units import concat  # noqa: E402
from fedclust.io import read_table, save_figure, write_table  # noqa: E402


def main() -> None:
    cfg, inp, out = snakemake.params.cfg, snakemake.input, snakemake.output
    ds, split = snakemake.wildcards.dataset, snakemake.wildcards.split
    table = concat([read_table(p) for p in inp.unit_tables])
    table = sort_results(table, cfg["datasets"][ds]["selection"])
    curves = concat([read_table(p) for p in inp.unit_curves])
    write_table(out.table, table, index=False)
    write_table(out.curves, curves, index=False)
    write_table(out.ledger, concat([read_table(p) for p in inp.unit_ledgers]), index=False)
    save_figure(federated_curves(curves, f"{ds} / {split}: federated training"), out.figure)


run(main, snakemake)
