"""Rule `generative_radialgan`: RadialGAN units (test bed x alpha rule; one, or every unit with
generative.fanout: model): per-centre AUC without / with augmentation, curves, ledger, info."""

from _common import run

from fedclust.generative.experiment import run_radialgan_units
from fedclust.io import write_json, write_table
from fedclust.transports import from_config


def main() -> None:
    p, out = snakemake.params, snakemake.output
    units = list(p.units)
    files = {k: v for k, v in snakemake.input.items()}
    results = run_radialgan_units(
        p.cfg, units, files, p.seed, p.sources, from_config(snakemake.config)
    )
    keys = ["metrics", "curves", "ledger", "info"]
    paths = {k: getattr(out, k) for k in keys}
    if isinstance(paths["metrics"], str):
        paths = {k: [v] for k, v in paths.items()}
    for i, res in enumerate(results):
        for k in ("metrics", "curves", "ledger"):
            write_table(paths[k][i], res[k], index=False)
        write_json(paths["info"][i], res["info"])


run(main, snakemake)
