"""Rule `generative_dgd`: Deep Generative Decoder units (one, or every unit with
generative.fanout: model): metrics, curves, ledger, info and representations of each unit."""

from _common import run

from fedclust.generative.experiment import run_dgd_units
from fedclust.io import write_json, write_npz, write_table
from fedclust.transports import from_config


def main() -> None:
    p, out = snakemake.params, snakemake.output
    units = list(p.units)
    files = {k: v for k, v in snakemake.input.items()}
    files["cohorts"] = list(p.cohorts)
    results = run_dgd_units(p.cfg, units, files, p.seed, p.sources, from_config(snakemake.config))
    keys = ["metrics", "curves", "ledger", "info", "representations"]
    paths = {k: getattr(out, k) for k in keys}
    if isinstance(paths["metrics"], str):
        paths = {k: [v] for k, v in paths.items()}
    for i, res in enumerate(results):
        for k in ("metrics", "curves", "ledger"):
            write_table(paths[k][i], res[k], index=False)
        write_json(paths["info"][i], res["info"])
        write_npz(paths["representations"][i], **res["representations"])


run(main, snakemake)
