"""Rule `generative_savae`: SAVAE good node / poor node units (one, or every unit with
generative.fanout: model): metrics, curves, ledger, info and the image panel of each unit."""

from _common import run

from fedclust.generative.experiment import run_savae_units
from fedclust.io import write_json, write_npz, write_table
from fedclust.transports import from_config


def main() -> None:
    p, out = snakemake.params, snakemake.output
    units = list(p.units)
    files = {k: v for k, v in snakemake.input.items()}
    results = run_savae_units(p.cfg, units, files, p.seed, p.sources, from_config(snakemake.config))
    paths = [out.metrics, out.curves, out.ledger, out.info, out.examples]
    if len(units) == 1 and isinstance(out.metrics, str):
        paths = [[x] for x in paths]
    for i, res in enumerate(results):
        write_table(paths[0][i], res["metrics"], index=False)
        write_table(paths[1][i], res["curves"], index=False)
        write_table(paths[2][i], res["ledger"], index=False)
        write_json(paths[3][i], res["info"])
        write_npz(paths[4][i], **res["examples"])


run(main, snakemake)
