"""Rule `dec_train_federated`: merge of the federated units of one split (the all-in-one
tables, row for row) and the curves figure."""

from _common import run

from fedclust.dec.merge import concat
from fedclust.dec.pipeline import sort_results
from fedclust.dec.plots import federated_curves
from fedclust.io import read_table, save_figure, write_table


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
